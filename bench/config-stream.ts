// `npx tsx bench/config-stream.ts [--engines sqlite,postgres] [--flips 20]`: how long a flag flipped through the API
// takes to reach an open config stream (GET /api/teams/{team}/config/stream). The real server on a scratch storage;
// one flag flipped --flips times, one after the other, each timed from the PUT being sent until the stream's message
// with the new config has been read, and until the PUT's 200. On PostgreSQL also with a second server process on the
// same database, the stream read from that one (the change goes through NOTIFY). Prints the median and the range (ms).
// No assertion: figures for bench/README.md.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createTeam } from '../server/admin/service';
import { openStorage } from '../server/storage/database';
import { closeAll, onClose, startRealServer } from './lib/environment';
import type { Engine } from './lib/options';
import { spread } from './lib/stats';
import { scratchStorage } from './lib/storage';

const { values } = parseArgs({ options: { engines: { type: 'string', default: 'sqlite,postgres' }, flips: { type: 'string', default: '20' } } });
const FLIPS = Number(values.flips);

/** A stream read as it comes: resolves `next()` with each `config` message's arrival time. */
function configMessages(response: Response): { next(): Promise<number>; close(): Promise<void> } {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const arrived: number[] = [];
  const waiting: Array<(at: number) => void> = [];
  let text = '';
  const pump = (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      text += decoder.decode(value, { stream: true });
      for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n')) {
        const message = text.slice(0, end);
        text = text.slice(end + 2);
        if (!message.startsWith('event: config')) continue;
        const at = performance.now();
        const waiter = waiting.shift();
        if (waiter) waiter(at);
        else arrived.push(at);
      }
    }
  })();
  return {
    next: () => (arrived.length > 0 ? Promise.resolve(arrived.shift()!) : new Promise((resolve) => waiting.push(resolve))),
    close: async () => {
      await reader.cancel().catch(() => {});
      await pump;
    },
  };
}

async function measure(engine: Engine, crossProcess: boolean): Promise<{ delivered: number[]; answered: number[] }> {
  const scratch = await scratchStorage(engine);
  const drop = onClose(() => scratch.drop());
  const options = { cpuProf: false, env: { LOG_LEVEL: 'warn' } };
  const writer = await startRealServer(`stream-writer-${engine}`, scratch, options);
  const reader = crossProcess ? await startRealServer(`stream-reader-${engine}`, scratch, options) : writer;
  const storage = await openStorage(scratch.options);
  const created = await createTeam(storage.db, { name: 'Stream', email: `stream-${randomBytes(4).toString('hex')}@example.com` });
  await storage.close();
  const team = created.team.id;
  const headers = { authorization: `Bearer ${created.token}`, 'content-type': 'application/json' };
  const features = `${writer.url}/api/teams/${team}/features`;
  await (await fetch(features, { method: 'POST', headers, body: JSON.stringify({ key: 'dark_mode', enabled: false }) })).arrayBuffer();
  const stream = await fetch(`${reader.url}/api/teams/${team}/config/stream`, { headers: { authorization: `Bearer ${created.ingest_key}` } });
  if (stream.status !== 200) throw new Error(`the stream answered ${stream.status}`);
  const messages = configMessages(stream);
  await messages.next();
  const delivered: number[] = [];
  const answered: number[] = [];
  for (let flip = 0; flip < FLIPS; flip++) {
    const sent = performance.now();
    const arrival = messages.next();
    const response = await fetch(`${features}/dark_mode`, { method: 'PUT', headers, body: JSON.stringify({ enabled: flip % 2 === 0 }) });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`the flip answered ${response.status}`);
    answered.push(performance.now() - sent);
    delivered.push((await arrival) - sent);
  }
  await messages.close();
  if (reader !== writer) await reader.stop();
  await writer.stop();
  await drop();
  return { delivered, answered };
}

const ms = (values: number[]) => {
  const { median, min, max } = spread(values);
  return `${median.toFixed(1)} ms (${min.toFixed(1)}–${max.toFixed(1)})`;
};

try {
  for (const engine of values.engines.split(',') as Engine[]) {
    for (const crossProcess of engine === 'postgres' ? [false, true] : [false]) {
      const { delivered, answered } = await measure(engine, crossProcess);
      const where = crossProcess ? 'stream on a second process' : 'stream on the same process';
      console.log(`[config-stream] ${engine}, ${where}: ${FLIPS} flips, flip → message ${ms(delivered)}, flip → PUT's 200 ${ms(answered)}`);
    }
  }
} finally {
  await closeAll();
}
