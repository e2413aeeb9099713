// `node --import tsx bench/ofrep-flip.ts [--flips 20] [--engines sqlite,postgres]`: how long a flag
// flip made through the API takes to reach OpenFeature's community web provider
// (@openfeature/ofrep-web-provider on @openfeature/web-sdk, polling off) in a page in Debian's
// headless Chromium, through the bulk answer's eventStreams — from just before the PUT is sent to
// the provider's CONFIGURATION_CHANGED showing the new value (the PUT's own time included). A real
// server per engine (a process of its own on scratch storage); one page; the flag flipped `--flips`
// times, one at a time. Target (issue #43): median < 1 s on both engines. Prints the figures and
// writes bench/results/<day>-ofrep-flip.json.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createTeam } from '../server/admin/service';
import { openStorage } from '../server/storage/database';
import { launchChromium } from '../test/support/chromium';
import { openOfrepPage } from '../test/support/ofrep-web-page';
import { closeAll, startRealServer } from './lib/environment';
import { spread, type Spread } from './lib/stats';
import { postgresAnswers, scratchStorage } from './lib/storage';
import type { Engine } from './lib/options';

const { values } = parseArgs({ options: { flips: { type: 'string', default: '20' }, engines: { type: 'string', default: 'sqlite,postgres' } } });
const flips = Number(values.flips);
const engines = values.engines.split(',') as Engine[];

async function measure(engine: Engine): Promise<{ 'flip to provider, ms': Spread; each: number[] }> {
  const scratch = await scratchStorage(engine);
  const server = await startRealServer(`ofrep-flip-${engine}`, scratch, { cpuProf: false });
  const storage = await openStorage({ ...scratch.options, poolSize: 1 });
  const created = await createTeam(storage.db, { name: 'flip bench', email: `flip-${engine}@bench.example` }).finally(() => storage.close());
  const features = `${server.url}/api/teams/${created.team.id}/features`;
  const call = async (method: string, url: string, body: unknown) => {
    const response = await fetch(url, { method, headers: { authorization: `Bearer ${created.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (response.status !== 200) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
  };
  await call('POST', features, { key: 'banner', type: 'boolean', enabled: true, value: 'false' });
  const browser = await launchChromium();
  const each: number[] = [];
  try {
    const shop = await openOfrepPage(browser, server.url, { id: created.team.id, ingestKey: created.ingest_key }, { targetingKey: 'visitor-1' });
    // The stream's first notice and its 304 come first.
    while (!shop.responses.some((response) => response.status === 304)) await new Promise((resolve) => setTimeout(resolve, 20));
    for (let flip = 1; flip <= flips; flip++) {
      const value = flip % 2 === 1;
      const heard = shop.changed('banner', value);
      const sent = Date.now();
      await call('PUT', `${features}/banner`, { value: String(value) });
      each.push(Math.round((await heard) - sent));
    }
    await shop.close();
  } finally {
    await browser.close();
    await closeAll();
  }
  return { 'flip to provider, ms': spread(each), each };
}

const results: Record<string, unknown> = { date: new Date().toISOString(), flips, target: 'median < 1000 ms' };
for (const engine of engines) {
  if (engine === 'postgres' && !(await postgresAnswers())) continue;
  results[engine] = await measure(engine);
}
console.log(JSON.stringify(results, null, 2));
writeFileSync(`bench/results/${new Date().toISOString().slice(0, 10)}-ofrep-flip.json`, JSON.stringify(results, null, 2) + '\n');
