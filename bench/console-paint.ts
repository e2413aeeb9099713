// `npx tsx bench/console-paint.ts [--runs 7] [--engines sqlite,postgres]`: the console in Debian's
// Chromium against the real server (a process of its own) on a team with 500 experiments (2
// variants each) and 500 flags, and on an empty team, the baseline of the same run. For the
// experiments and the flags list: first contentful paint, and the time from navigation until the
// list's first page is drawn (medians of --runs fresh tabs, with min–max). Prints the JavaScript
// the console ships, gzipped. Writes bench/results/<day>-console-paint.json.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser } from 'playwright-core';
import { createTeam } from '../server/admin/service';
import { openStorage } from '../server/storage/database';
import { startRealServer } from './lib/environment';
import type { Engine } from './lib/options';
import { ROOT } from './lib/processes';
import { spread } from './lib/stats';
import { scratchStorage } from './lib/storage';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '7' }, engines: { type: 'string', default: 'sqlite,postgres' } } });
const runs = Number(values.runs);
const RESOURCES = 500;

execFileSync('npm', ['run', '-s', 'console'], { cwd: ROOT, stdio: 'inherit' });
const script = readFileSync(`${ROOT}dist/console/console.js`);
const shipped = { javascript_bytes: script.length, javascript_gzip_bytes: gzipSync(script, { level: 9 }).length };
console.log(`console.js: ${(shipped.javascript_bytes / 1024).toFixed(1)} KiB, ${(shipped.javascript_gzip_bytes / 1024).toFixed(1)} KiB gzipped`);

async function seed(baseUrl: string, team: number, token: string, resources: number): Promise<void> {
  const call = async (path: string, body: unknown) => {
    const response = await fetch(`${baseUrl}/api/teams/${team}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (response.status !== 200) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  };
  await call('/events', { key: 'goal' });
  for (let i = 0; i < resources; i++) {
    const key = `experiment_${i}`;
    await call('/experiments', { key, event: 'goal', description: `Experiment ${i}` });
    await call(`/experiments/${key}/variants`, { key: 'control', control: true });
    await call(`/experiments/${key}/variants`, { key: 'treatment' });
    await call('/features', { key: `flag_${i}`, enabled: i % 2 === 0, value: 'on', rules: [{ type: 'rollout', percentage: 10, value: 'off' }] });
  }
}

/** One fresh tab: signed in (the token in the tab's storage), the page opened, its list drawn. */
async function paint(browser: Browser, baseUrl: string, token: string, hash: string, drawn: string): Promise<{ fcp: number; drawn: number }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addInitScript(`sessionStorage.setItem('experimentation.token', ${JSON.stringify(token)})`);
  const page = await context.newPage();
  await page.goto(`${baseUrl}/console${hash}`);
  await page.locator(drawn).first().waitFor();
  const times = (await page.evaluate(`({ drawn: performance.now(), fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null })`)) as { fcp: number; drawn: number };
  await context.close();
  return times;
}

const median = (xs: number[]) => spread(xs);
const results: Record<string, unknown> = { date: new Date().toISOString(), runs, resources: RESOURCES, shipped, engines: {} };
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
for (const engine of values.engines.split(',') as Engine[]) {
  const scratch = await scratchStorage(engine);
  const server = await startRealServer('server', scratch, { cpuProf: false });
  const storage = await openStorage({ ...scratch.options, poolSize: 1 });
  const [full, empty] = [await createTeam(storage.db, { name: 'Full', email: 'full@bench.example' }), await createTeam(storage.db, { name: 'Empty', email: 'empty@bench.example' })];
  await storage.close();
  const started = Date.now();
  await seed(server.url, full.team.id, full.token, RESOURCES);
  console.log(`${engine}: seeded ${RESOURCES} experiments and ${RESOURCES} flags in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const figures: Record<string, unknown> = {};
  const pages = [
    ['experiments', '#/experiments', 'p.hint:has-text("No experiments yet")'],
    ['flags', '#/flags', 'p.hint:has-text("No flags yet")'],
  ] as const;
  for (const [page, hash, drawnEmpty] of pages) {
    const drawnFull = 'table.list tbody tr';
    const fullRuns: Array<{ fcp: number; drawn: number }> = [];
    const emptyRuns: Array<{ fcp: number; drawn: number }> = [];
    await paint(browser, server.url, full.token, hash, drawnFull); // warm the server and the browser's cache
    for (let run = 0; run < runs; run++) {
      // Alternate, so that the machine's load falls on both alike
      fullRuns.push(await paint(browser, server.url, full.token, hash, drawnFull));
      emptyRuns.push(await paint(browser, server.url, empty.token, hash, drawnEmpty));
    }
    const drawn = median(fullRuns.map((r) => r.drawn));
    const baseline = median(emptyRuns.map((r) => r.drawn));
    figures[page] = { first_contentful_paint_ms: median(fullRuns.map((r) => r.fcp)), list_drawn_ms: drawn, empty_team_drawn_ms: baseline, ratio_to_empty: Number((drawn.median / baseline.median).toFixed(2)) };
    console.log(`${engine} ${page}: first paint ${median(fullRuns.map((r) => r.fcp)).median.toFixed(0)} ms, first page of ${RESOURCES} drawn ${drawn.median.toFixed(0)} ms (${drawn.min.toFixed(0)}–${drawn.max.toFixed(0)}), empty team ${baseline.median.toFixed(0)} ms: ${(drawn.median / baseline.median).toFixed(2)} ×`);
  }
  (results.engines as Record<string, unknown>)[engine] = figures;
  await server.stop();
  await scratch.drop();
}
await browser.close();
const out = `${ROOT}bench/results/${new Date().toISOString().slice(0, 10)}-console-paint.json`;
writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
console.log(`wrote ${out}`);
