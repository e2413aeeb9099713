// `npx tsx bench/ab.ts --checkouts DIR,DIR… [--engines sqlite,postgres] [--what single,batch] [--rounds 8] [--seconds 3]`:
// ingest through the real servers of several checkouts of this repository (e.g. an older commit
// with its own node_modules, or a symlink to this one's), all started at once on scratch storage
// with the bench team, then loaded in turn — one short round of each kind on each server, round
// after round — so that a drift of the machine over minutes falls on every server alike. Prints
// each server's median items a second (single ingests: requests), with the server's and the
// database's CPU per item, and every round. What the rounds of a whole `npm run bench` run
// minutes apart cannot show on a machine whose speed moves by half within the hour.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { batchOf, BATCH_ITEMS } from './phases/ingest';
import { load } from './lib/load';
import { cpuMsOf, databaseCpuMs, startServer, type ServerProcess } from './lib/processes';
import { bearer, createBenchTeam, freshIngestBody, type BenchTeam } from './lib/setup';
import { spread } from './lib/stats';
import { scratchStorage, type ScratchStorage } from './lib/storage';
import { UNREACHABLE_BUDGETS } from './lib/environment';
import type { Engine } from './lib/options';

const median = (values: number[]) => spread(values).median;

const { values } = parseArgs({
  options: {
    checkouts: { type: 'string' },
    engines: { type: 'string', default: 'sqlite,postgres' },
    what: { type: 'string', default: 'single,batch' },
    rounds: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '3' },
  },
});
if (!values.checkouts) throw new Error('--checkouts DIR,DIR… is required');
type Kind = 'single' | 'batch';
const kinds = values.what.split(',') as Kind[];
const seconds = Number(values.seconds);

interface Served {
  name: string;
  engine: Engine;
  scratch: ScratchStorage;
  server: ServerProcess;
  team: BenchTeam;
  rounds: Record<string, Array<{ items: number; serverUs: number; databaseUs: number }>>;
}

const request = (served: Served, kind: Kind, duration: number) =>
  load({
    url: `${served.server.url}${served.team.paths.ingest}${kind === 'batch' ? '/batch' : ''}`,
    method: 'POST',
    headers: bearer(served.team.ingestKey),
    body: kind === 'batch' ? batchOf(freshIngestBody) : freshIngestBody,
    connections: 10,
    duration,
    settle: `${served.server.url}/api/health`,
  });

const servers: Served[] = [];
try {
  for (const engine of values.engines.split(',') as Engine[]) {
    for (const checkout of values.checkouts.split(',').map((dir) => resolve(dir))) {
      const scratch = await scratchStorage(engine);
      const server = await startServer({ name: `${engine} ${checkout}`, entry: 'server/main.ts', cwd: checkout, env: { ...scratch.env, ...UNREACHABLE_BUDGETS }, readyPath: '/api/health' });
      servers.push({ name: `${engine} ${checkout}`, engine, scratch, server, team: await createBenchTeam(server.url, scratch), rounds: {} });
    }
  }
  for (const served of servers) for (const kind of kinds) await request(served, kind, 1);
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const kind of kinds) {
      for (const served of servers) {
        const [serverMs, databaseMs] = [cpuMsOf(served.server.pid), served.engine === 'postgres' ? databaseCpuMs() : 0];
        const result = await request(served, kind, seconds);
        if (result.non2xx > 0 || result.errors > 0) throw new Error(`${served.name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
        const items = result.rps * seconds * (kind === 'batch' ? BATCH_ITEMS : 1);
        (served.rounds[kind] ??= []).push({
          items: items / seconds,
          serverUs: ((cpuMsOf(served.server.pid) - serverMs) * 1000) / items,
          databaseUs: served.engine === 'postgres' ? ((databaseCpuMs() - databaseMs) * 1000) / items : 0,
        });
      }
    }
  }
  for (const kind of kinds) {
    for (const served of servers) {
      const rounds = served.rounds[kind]!;
      const cpu = `server ${median(rounds.map((r) => r.serverUs)).toFixed(0)} µs${served.engine === 'postgres' ? `, database ${median(rounds.map((r) => r.databaseUs)).toFixed(0)} µs` : ''} an item`;
      console.log(`${kind.padEnd(6)} ${served.name}: median ${median(rounds.map((r) => r.items)).toFixed(0)} items/s (${cpu}); rounds ${rounds.map((r) => r.items.toFixed(0)).join(' ')}`);
    }
  }
} finally {
  for (const served of servers) {
    await served.server.stop();
    await served.scratch.drop();
  }
}

