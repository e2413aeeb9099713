// `npx tsx bench/fairness.ts [--engines sqlite,postgres] [--cwd <checkout>] [--samples 100] [--only conditions]`: what one team's heavy
// traffic does to another team's ingests and reads, measured as it was found (issue #28, items 1 and 2). The real
// server on a scratch storage; a quiet team sends single ingests one after the other (--samples each) and lists its
// experiments, alone and while two loops send 500-item batches that are all refused — 402 with the quota at 0, or 409
// naming a stopped experiment of 100 variants — or that fan out into 50 running experiments, or while four loops read
// a team's results at the limits (200 events × 100 variants × 365 days of roll-up). SQLite also with a second server
// process on the same directory, the quiet team's ingests going to that one. Prints p50/p95 (ms), the answers that were
// not 200, and the results' size. Then the hostile conditions of issue #37 (bench/phases/hostile-conditions.ts): two
// loops send batches of 20 participants into 50 running experiments whose conditions cost all the steps an evaluation
// may take, and the quiet team's p50 is given as a ratio to its idle p50 (target ≤ 10 ×). --only conditions runs the
// idle figure and that part alone. --cwd runs the server of another checkout (e.g. the previous commit's) on the same
// scenario. No assertion: figures for bench/README.md.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createTeam, setQuota } from '../server/admin/service';
import { HOSTILE_SHAPES, hostileBatch, hostileExperiments } from './phases/hostile-conditions';
import { openStorage, type Storage } from '../server/storage/database';
import { closeAll, onClose, startRealServer } from './lib/environment';
import type { Engine } from './lib/options';
import type { ServerProcess } from './lib/processes';
import { scratchStorage, type ScratchStorage } from './lib/storage';

const { values } = parseArgs({ options: { engines: { type: 'string', default: 'sqlite,postgres' }, cwd: { type: 'string' }, samples: { type: 'string', default: '100' }, only: { type: 'string' } } });
const SAMPLES = Number(values.samples);

interface Team {
  id: number;
  token: string;
  ingestKey: string;
}

/** fetch, sent again once when the connection it reused was closed by the server meanwhile (keep-alive timeout). */
async function fetch(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await globalThis.fetch(url, init);
  } catch (error) {
    if ((error as { cause?: { code?: string } }).cause?.code !== 'UND_ERR_SOCKET') throw error;
    return globalThis.fetch(url, init);
  }
}

const auth = (credential: string) => ({ authorization: `Bearer ${credential}`, 'content-type': 'application/json' });

async function call(base: string, credential: string, method: string, path: string, body?: unknown): Promise<Response> {
  const response = await fetch(base + path, { method, headers: auth(credential), body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response;
}

async function newTeam(storage: Storage, name: string): Promise<Team> {
  const created = await createTeam(storage.db, { name, email: `${name}-${randomBytes(4).toString('hex')}@example.com` });
  return { id: created.team.id, token: created.token, ingestKey: created.ingest_key };
}

/** An experiment on event `goal` with `variants` variants (the first the control), started unless told otherwise. */
async function experiment(base: string, team: Team, key: string, variants: number, start = true): Promise<void> {
  const path = `/api/teams/${team.id}/experiments`;
  await call(base, team.token, 'POST', path, { key, event: 'goal' });
  for (let i = 0; i < variants; i++) await call(base, team.token, 'POST', `${path}/${key}/variants`, { key: `v${i}`, control: i === 0 });
  if (start) await call(base, team.token, 'POST', `${path}/${key}/start`);
}

/** Sends `body` over and over from `loops` loops until stopped. */
function loop(loops: number, send: () => Promise<Response>): () => Promise<void> {
  let stopped = false;
  const runs = Array.from({ length: loops }, async () => {
    // A connection the overloaded server reset is not the quiet team's figure: the loop goes on.
    while (!stopped) await send().then((response) => response.arrayBuffer(), () => undefined);
  });
  return async () => {
    stopped = true;
    await Promise.all(runs);
  };
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/** The quiet team's ingests (and experiment lists), one after the other: p50/p95 in ms and the statuses that were not 200. */
async function quiet(base: string, team: Team): Promise<string> {
  return (await quietFigures(base, team)).line;
}

async function quietFigures(base: string, team: Team): Promise<{ line: string; p50: number }> {
  const times: number[] = [];
  const lists: number[] = [];
  const other: Record<number, number> = {};
  for (let i = 0; i < SAMPLES; i++) {
    let start = performance.now();
    const response = await fetch(`${base}/api/teams/${team.id}/ingest`, { method: 'POST', headers: auth(team.ingestKey), body: JSON.stringify({ participant: `q-${randomBytes(6).toString('hex')}`, event: 'goal' }) });
    await response.arrayBuffer();
    times.push(performance.now() - start);
    if (response.status !== 200) other[response.status] = (other[response.status] ?? 0) + 1;
    start = performance.now();
    await (await fetch(`${base}/api/teams/${team.id}/experiments`, { headers: auth(team.token) })).arrayBuffer();
    lists.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  lists.sort((a, b) => a - b);
  const failures = Object.keys(other).length === 0 ? '' : ` not 200: ${JSON.stringify(other)}`;
  const line = `ingest p50 ${quantile(times, 0.5).toFixed(1)} p95 ${quantile(times, 0.95).toFixed(1)} · list p50 ${quantile(lists, 0.5).toFixed(1)} p95 ${quantile(lists, 0.95).toFixed(1)}${failures}`;
  return { line, p50: quantile(times, 0.5) };
}

/** Seeds a results read at the limits straight into storage: 200 events, 100 variants, a year of daily roll-up. */
async function seedResults(storage: Storage, base: string, team: Team): Promise<void> {
  for (let i = 0; i < 199; i++) await call(base, team.token, 'POST', `/api/teams/${team.id}/events`, { key: `event_${i}` });
  await experiment(base, team, 'wide', 100);
  const variants = await storage.db.selectFrom('variants').select('id').where('team_id', '=', team.id).execute();
  const events = await storage.db.selectFrom('events').select('id').where('team_id', '=', team.id).execute();
  for (const v of variants) {
    await storage.db
      .insertInto('variant_event_counts')
      .values(events.map((e) => ({ team_id: team.id, variant_id: v.id, event_id: e.id, conversions: 30, unique_conversions: 20 })))
      .execute();
  }
  await storage.db.updateTable('variants').set({ participants: 365 * 10 }).where('team_id', '=', team.id).execute();
  const days = Array.from({ length: 365 }, (_, i) => new Date(Date.UTC(2025, 10, 24 + i)).toISOString().slice(0, 10));
  const goal = (await storage.db.selectFrom('events').select('id').where('team_id', '=', team.id).where('key', '=', 'goal').executeTakeFirstOrThrow()).id;
  for (const day of days) {
    await storage.db.insertInto('daily_variant_counts').values(variants.map((v) => ({ team_id: team.id, variant_id: v.id, day, participants: 10 }))).execute();
    await storage.db.insertInto('daily_variant_event_counts').values(variants.map((v) => ({ team_id: team.id, variant_id: v.id, event_id: goal, day, conversions: 1, unique_conversions: 1 }))).execute();
  }
}

/** The quiet team's ingests idle, then under each hostile shape of issue #37: p50 as a ratio to the idle p50. */
async function hostileConditions(base: string, storage: Storage, quietTeam: Team, say: (line: string) => void): Promise<void> {
  const idle = await quietFigures(base, quietTeam);
  say(`idle: ${idle.line}`);
  const send = (credential: string, method: string, path: string, body?: unknown) => call(base, credential, method, path, body);
  for (const [index, shape] of HOSTILE_SHAPES.entries()) {
    const team = await newTeam(storage, `hostile-${index}`);
    await hostileExperiments(send, team, shape);
    const body = () => JSON.stringify(hostileBatch(shape, () => `h-${randomBytes(6).toString('hex')}`));
    const start = performance.now();
    const one = await fetch(`${base}/api/teams/${team.id}/ingest/batch`, { method: 'POST', headers: auth(team.ingestKey), body: body() });
    await one.arrayBuffer();
    const alone = performance.now() - start;
    const stop = loop(2, () => fetch(`${base}/api/teams/${team.id}/ingest/batch`, { method: 'POST', headers: auth(team.ingestKey), body: body() }));
    const under = await quietFigures(base, quietTeam);
    await stop();
    say(`${shape.label} (a batch alone ${alone.toFixed(0)} ms, ${one.status}), batches ×2: ${under.line} — p50 ${(under.p50 / idle.p50).toFixed(1)} × idle`);
  }
}

async function run(engine: Engine): Promise<void> {
  const scratch: ScratchStorage = await scratchStorage(engine);
  const drop = onClose(() => scratch.drop());
  const storage = await openStorage({ ...scratch.options, poolSize: 2 });
  const server: ServerProcess = await startRealServer(`fairness-${engine}`, scratch, { cpuProf: false, cwd: values.cwd });
  const base = server.url;
  const say = (line: string) => console.log(`[${engine}${values.cwd ? ' ' + values.cwd : ''}] ${line}`);
  try {
    const quietTeam = await newTeam(storage, 'quiet');
    await call(base, quietTeam.token, 'POST', `/api/teams/${quietTeam.id}/events`, { key: 'goal' });
    await experiment(base, quietTeam, 'solo', 2);
    if (values.only === 'conditions') return await hostileConditions(base, storage, quietTeam, say);

    const spent = await newTeam(storage, 'spent');
    await call(base, spent.token, 'POST', `/api/teams/${spent.id}/events`, { key: 'goal' });
    await experiment(base, spent, 'live', 2);
    const known = Array.from({ length: 500 }, (_, i) => ({ participant: `known-${i}`, event: 'goal' }));
    await call(base, spent.ingestKey, 'POST', `/api/teams/${spent.id}/ingest/batch`, { items: known });
    await setQuota(storage.db, spent.id, 0);

    const stopped = await newTeam(storage, 'stopped');
    await call(base, stopped.token, 'POST', `/api/teams/${stopped.id}/events`, { key: 'goal' });
    await experiment(base, stopped, 'over', 100);
    await call(base, stopped.token, 'POST', `/api/teams/${stopped.id}/experiments/over/stop`);
    const naming = Array.from({ length: 500 }, (_, i) => ({ participant: `n-${i}`, experiment: 'over', variant: 'v7' }));

    const fan = await newTeam(storage, 'fan');
    await call(base, fan.token, 'POST', `/api/teams/${fan.id}/events`, { key: 'goal' });
    for (let i = 0; i < 50; i++) await experiment(base, fan, `fan_${i}`, 2);

    const wide = await newTeam(storage, 'wide');
    await call(base, wide.token, 'POST', `/api/teams/${wide.id}/events`, { key: 'goal' });
    await seedResults(storage, base, wide);

    const batch = (team: Team, items: () => unknown[]) => () => fetch(`${base}/api/teams/${team.id}/ingest/batch`, { method: 'POST', headers: auth(team.ingestKey), body: JSON.stringify({ items: items() }) });
    const fresh = () => Array.from({ length: 500 }, () => ({ participant: `f-${randomBytes(6).toString('hex')}`, event: 'goal' }));
    const under = async (label: string, stop: () => Promise<void>, target = base) => {
      say(`${label}: ${await quiet(target, quietTeam)}`);
      await stop();
    };

    say(`idle: ${await quiet(base, quietTeam)}`);
    await under('402 batches ×2', loop(2, batch(spent, () => known)));
    await under('409 batches ×2 (stopped, 100 variants)', loop(2, batch(stopped, () => naming)));
    await under('fan-out batches ×2 (50 running experiments)', loop(2, batch(fan, fresh)));

    const results = `${base}/api/teams/${wide.id}/experiments/wide/results`;
    for (const query of ['', '?events=' + Array.from({ length: 20 }, (_, i) => `event_${i}`).join(',')]) {
      const start = performance.now();
      const response = await fetch(results + query, { headers: auth(wide.token) });
      const bytes = (await response.arrayBuffer()).byteLength;
      say(`results${query ? ' (20 events)' : ''}: ${response.status}, ${(bytes / 1e6).toFixed(2)} MB in ${(performance.now() - start).toFixed(0)} ms, server RSS ${(server.rssKb() / 1024).toFixed(0)} MiB`);
    }
    await under('results readers ×4 (20 events)', loop(4, () => fetch(results + '?events=' + Array.from({ length: 20 }, (_, i) => `event_${i}`).join(','), { headers: auth(wide.token) })));
    say(`server RSS after the readers ${(server.rssKb() / 1024).toFixed(0)} MiB`);

    if (engine === 'sqlite') {
      const second = await startRealServer(`fairness-${engine}-second`, scratch, { cpuProf: false, cwd: values.cwd });
      try {
        say(`second process idle: ${await quiet(second.url, quietTeam)}`);
        await under('second process, 409 batches ×2 on the first', loop(2, batch(stopped, () => naming)), second.url);
        await under('second process, fan-out batches ×2 on the first', loop(2, batch(fan, fresh)), second.url);
      } finally {
        await second.stop();
      }
    }
  } finally {
    await storage.close();
    await server.stop();
    await drop();
  }
}

try {
  for (const engine of values.engines.split(',') as Engine[]) await run(engine);
} finally {
  await closeAll();
}
