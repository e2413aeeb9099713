// `npx tsx bench/profile-servers.ts [--checkout DIR] [--engine sqlite|postgres] [--seconds S] [--only ingest,config,statistics,batch] [--keep DIR]`:
// where a real server's CPU goes under load, for one ingest, one config read, one variant statistics read and a batch of 100 ingests, each on a
// server of its own under `node --cpu-prof`: the top ten functions by self time, as shares of
// the time the server was busy (idle left out). --checkout profiles another checkout of this
// repository (e.g. an older commit, with its own node_modules), for before/after comparisons; --keep DIR
// keeps each profile there as <what>-<engine>.cpuprofile, to open in a profiler.
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { load } from './lib/load';
import { startServer } from './lib/processes';
import { topSelfTime } from './lib/profile';
import { scratchStorage } from './lib/storage';

const { values } = parseArgs({ options: { checkout: { type: 'string' }, engine: { type: 'string', default: 'sqlite' }, seconds: { type: 'string', default: '8' }, only: { type: 'string', default: 'ingest,config,statistics' }, keep: { type: 'string' } } });
const checkout = resolve(values.checkout ?? '.');
const engine = values.engine === 'postgres' ? 'postgres' : 'sqlite';
const seconds = Number(values.seconds);

type Profiled = 'ingest' | 'config' | 'statistics' | 'batch';

async function profile(what: Profiled): Promise<void> {
  const scratch = await scratchStorage(engine);
  const profiles = mkdtempSync(join(tmpdir(), 'profiles-'));
  try {
    const server = await startServer({
      name: `profile-${what}`,
      entry: 'server/main.ts',
      cwd: checkout,
      env: { ...scratch.env, RATE_LIMIT_PER_CREDENTIAL: '1000000000', RATE_LIMIT_PER_ADDRESS: '1000000000' },
      nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profiles],
      readyPath: '/api/health',
    });
    const team = await setUp(server.url, scratch.env);
    const spec = { headers: { authorization: `Bearer ${team.ingestKey}` }, connections: 10, duration: seconds };
    const run = () =>
      what === 'ingest'
        ? load({ ...spec, url: `${server.url}/api/teams/${team.id}/ingest`, method: 'POST', body: () => JSON.stringify({ participant: `p-${randomBytes(6).toString('hex')}`, event: 'purchase' }) })
        : what === 'batch'
          ? load({ ...spec, url: `${server.url}/api/teams/${team.id}/ingest/batch`, method: 'POST', body: () => JSON.stringify({ items: Array.from({ length: 100 }, () => ({ participant: `p-${randomBytes(6).toString('hex')}`, event: 'purchase' })) }) })
          : what === 'config'
          ? load({ ...spec, url: `${server.url}/api/teams/${team.id}/config` })
          : load({ ...spec, headers: { authorization: `Bearer ${team.token}` }, url: `${server.url}/api/teams/${team.id}/experiments/checkout_button/variants/treatment/statistics` });
    const round = await run();
    await server.stop();
    const file = readdirSync(profiles).find((name) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(name));
    if (values.keep) copyFileSync(join(profiles, file!), join(values.keep, `${what}-${engine}.cpuprofile`));
    const lines = topSelfTime(join(profiles, file!), 40).filter((line) => line.function !== '(idle)');
    const busy = lines.reduce((sum, line) => sum + line.percent, 0);
    console.log(`\n${what} on ${engine}, ${checkout}: ${Math.round(round.rps)} req/s, ${round.non2xx} non-2xx; top ten by self time, % of busy time`);
    for (const line of lines.slice(0, 10)) console.log(`${((100 * line.percent) / busy).toFixed(1).padStart(5)}  ${line.function.padEnd(28)} ${line.location}`);
  } finally {
    rmSync(profiles, { recursive: true, force: true });
    await scratch.drop();
  }
}

/** A team with three events and three running experiments, made with the checkout's own admin CLI and API. */
async function setUp(baseUrl: string, storageEnv: Record<string, string>) {
  const made = JSON.parse(execFileSync('npm', ['run', '-s', 'admin', '--', 'create-team', '--name', 'Profiled', '--email', `p${Date.now()}@example.com`, '--json'], { cwd: checkout, env: { ...process.env, ...storageEnv } }).toString());
  const id = made.team.id as number;
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${baseUrl}/api/teams/${id}${path}`, { method: 'POST', headers: { authorization: `Bearer ${made.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (response.status !== 200) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  };
  for (const key of ['purchase', 'signup', 'page_view']) await post('/events', { key });
  for (const [key, event] of [['checkout_button', 'purchase'], ['pricing_page', 'purchase'], ['onboarding', 'signup']] as const) {
    await post('/experiments', { key, event });
    await post(`/experiments/${key}/variants`, { key: 'control', control: true });
    await post(`/experiments/${key}/variants`, { key: 'treatment' });
    await post(`/experiments/${key}/start`, {});
  }
  return { id, ingestKey: made.ingest_key as string, token: made.token as string };
}

for (const what of values.only.split(',') as Profiled[]) await profile(what);
