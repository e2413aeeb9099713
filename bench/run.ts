// npm run bench -- [--quick] [--soak] ...: see bench/lib/options.ts and bench/README.md.
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { dirname, relative, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { autovacuumIsOn } from './lib/autoanalyze';
import { closeAll, profiledServers, startEnvironment, type Environment } from './lib/environment';
import { progress } from './lib/load';
import { parseOptions, type Engine, type Options } from './lib/options';
import { ROOT, type ServerProcess } from './lib/processes';
import { topSelfTime, type ProfileLine } from './lib/profile';
import { evaluateDiagnostics, evaluateTargets, ratioSummary, renderTables, type EngineResults, type Results } from './lib/report';
import { POSTGRES_ADMIN_URL, postgresAnswers } from './lib/storage';
import { assignmentPhase } from './phases/assignment';
import { baselinesPhase, startBaselineServers, type BaselineServers } from './phases/baselines';
import { growthPhase } from './phases/growth';
import { isolationPhase } from './phases/isolation';
import { ingestPhase } from './phases/ingest';
import { MOST_PROCESSES, processesPhase, startProcessesServers, type ProcessesServers } from './phases/processes';
import { readsPhase } from './phases/reads';
import { soakPhase } from './phases/soak';
import { layersPhase, startLayerServers, type Layer } from './phases/layers';
import { librariesPhase, startLibraryServers, type LibraryServers } from './phases/libraries';

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const engines = await chooseEngines(options);
  const results: Results = { machine: await machine(engines), options: { ...options, phases: [...options.phases], engines }, engines: {}, targets: [], diagnostics: [], notes: [] };
  const { phases } = options;
  progress(`bench: ${options.quick ? 'quick, ' : ''}${options.rounds} round(s) of ${options.duration} s, ${options.connections} connections, engines ${engines.join(', ')}, phases ${[...phases].join(', ')}`);

  if (options.cpuProf) for (const file of readdirSync(`${ROOT}bench/results`)) if (file.endsWith('.cpuprofile')) rmSync(`${ROOT}bench/results/${file}`);
  const started = await startServers(engines, options);
  if (started.baselines) results.baselines = await baselinesPhase(started.baselines, options);
  if (started.libraries) results.libraries = await librariesPhase(started.libraries, options);
  // In-process and CPU-bound: measured while every server is idle.
  if (phases.has('assignment')) results.assignment = assignmentPhase(options);

  for (const engine of engines) {
    const r: EngineResults = (results.engines[engine] = {});
    const { main, layers, growth, isolation, processes } = started.engines[engine];
    if (main) {
      if (phases.has('ingest')) r.ingest = await ingestPhase(main, options);
      if (phases.has('reads')) r.reads = await readsPhase(main, options);
      if (layers) r.layers = await layersPhase(main, layers, options);
      await main.close();
    }
    if (growth) r.growth = await growthPhase(growth, options);
    if (isolation) r.isolation = await isolationPhase(isolation, options);
    if (processes) r.processes = await processesPhase(processes, options);
    if (phases.has('soak')) r.soak = await soakPhase(engine, options);
  }

  if (options.cpuProf) {
    await closeAll(); // the servers write their profiles as they exit
    results.profiles = profiles();
  }
  results.machine.load_average_at_end = loadavg().map((n) => Number(n.toFixed(2)));
  results.targets = evaluateTargets(results);
  results.diagnostics = evaluateDiagnostics(results);
  results.notes = notes(results, options);
  const out = resolve(ROOT, options.out);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ ...results, ratios: ratioSummary(results) }, null, 2) + '\n');
  console.log('\n' + renderTables(results) + '\n');
  progress(`bench: results in ${out.startsWith(ROOT) ? relative(ROOT, out) : out}`);
}

interface EngineServers {
  main?: Environment;
  layers?: Record<Layer, ServerProcess>;
  growth?: Environment;
  isolation?: Environment;
  processes?: ProcessesServers;
}

/**
 * Starts every server the phases need at once, before anything is measured: one at a time,
 * their start-ups (seconds each) would dominate a quick run. Idle, they cost nothing. The soak
 * starts its own server, since it measures memory from the start.
 */
async function startServers(engines: Engine[], options: Options): Promise<{ baselines?: BaselineServers; libraries?: LibraryServers; engines: Record<Engine, EngineServers> }> {
  const { phases, cpuProf } = options;
  progress('bench: starting servers');
  const perEngine = async (engine: Engine): Promise<EngineServers> => {
    const main = async () => {
      if (!phases.has('ingest') && !phases.has('reads') && !phases.has('layers')) return {};
      const env = await startEnvironment(engine, 'server', { cpuProf });
      return { main: env, layers: phases.has('layers') ? await startLayerServers(env, options) : undefined };
    };
    const fresh = async (phase: 'growth' | 'isolation') => (phases.has(phase) ? startEnvironment(engine, phase, { cpuProf }) : undefined);
    // Several processes on one database: PostgreSQL's case (on SQLite they would take turns for its one write lock).
    const processes = async () => (phases.has('processes') && engine === 'postgres' ? startProcessesServers(options) : undefined);
    const [servers, growthEnv, isolationEnv, processesServers] = await Promise.all([main(), fresh('growth'), fresh('isolation'), processes()]);
    return { ...servers, growth: growthEnv, isolation: isolationEnv, processes: processesServers };
  };
  const [baselines, libraries, ...servers] = await Promise.all([
    phases.has('baselines') ? startBaselineServers() : undefined,
    phases.has('libraries') ? startLibraryServers() : undefined,
    ...engines.map(perEngine),
  ] as const);
  return { baselines, libraries, engines: Object.fromEntries(engines.map((engine, i) => [engine, servers[i]!])) as Record<Engine, EngineServers> };
}

/** Names each server's main-thread profile after the server, drops the loader threads' ones, and summarises. */
function profiles(): Record<string, ProfileLine[]> {
  const directory = `${ROOT}bench/results`;
  for (const file of readdirSync(directory)) {
    const match = /^CPU\.\d+\.\d+\.(\d+)\.(\d+)\.\d+\.cpuprofile$/.exec(file);
    if (!match) continue;
    const name = profiledServers.get(Number(match[1]));
    if (name && match[2] === '0') renameSync(`${directory}/${file}`, `${directory}/${name}.cpuprofile`);
    else rmSync(`${directory}/${file}`);
  }
  return Object.fromEntries(
    readdirSync(directory)
      .filter((file) => file.endsWith('.cpuprofile'))
      .map((file) => [file, topSelfTime(`${directory}/${file}`)]),
  );
}

async function chooseEngines(options: Options): Promise<Engine[]> {
  // A smoke check stays under a minute: SQLite only, unless asked.
  if (options.quick && !options.engines) return ['sqlite'];
  const answers = await postgresAnswers();
  if (options.engines) {
    if (options.engines.includes('postgres') && !answers) throw new Error(`PostgreSQL does not answer at ${POSTGRES_ADMIN_URL}.`);
    return options.engines;
  }
  if (!answers) console.warn(`[notice] PostgreSQL does not answer at ${POSTGRES_ADMIN_URL}: SQLite only.`);
  return answers ? ['sqlite', 'postgres'] : ['sqlite'];
}

async function machine(engines: Engine[]): Promise<Record<string, unknown>> {
  const sqlite = new BetterSqlite3(':memory:');
  const sqliteVersion = (sqlite.prepare('select sqlite_version() as v').get() as { v: string }).v;
  sqlite.close();
  let postgresVersion: string | undefined;
  let postgresAutovacuum: boolean | undefined;
  if (engines.includes('postgres')) {
    const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await client.connect();
    postgresVersion = (await client.query<{ server_version: string }>('show server_version')).rows[0]?.server_version;
    await client.end();
    postgresAutovacuum = await autovacuumIsOn(POSTGRES_ADMIN_URL);
  }
  return {
    date: new Date().toISOString(),
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model,
    memory_gib: Math.round(totalmem() / 2 ** 30),
    kernel: `${process.platform} ${release()}`,
    node: process.version,
    sqlite: sqliteVersion,
    postgres: postgresVersion,
    postgres_autovacuum: postgresAutovacuum,
    engines,
    load_average_at_start: loadavg().map((n) => Number(n.toFixed(2))),
  };
}

function notes(results: Results, options: Options): string[] {
  const notes = [
    `Every server is its own child process; the load generator (autocannon, ${options.connections} connections, no pipelining) runs in this process on the same ${cpus().length} CPU(s), so the baselines are also bounded by it.`,
    `Figures are medians of ${options.rounds} round(s) of ${options.duration} s after ${options.warmup} s of warm-up, with (min–max); latencies are of 2xx answers only.`,
    'SQLite durability: synchronous=FULL in WAL mode, so every acknowledged ingest waits for an fsync of the WAL.',
  ];
  // Only the load before the run tells of other work: by its end, the run's own load is in the average.
  const busy = (results.machine.load_average_at_start as number[])[0]!;
  if (busy > cpus().length / 2) notes.push(`The machine was busy with other work before the run (1-minute load average ${busy} on ${cpus().length} CPUs): these figures are not reliable.`);
  if (options.quick) notes.push('Quick mode: one short round and a small growth count; a smoke check, not figures to compare.');
  for (const [engine, r] of Object.entries(results.engines)) {
    if (r.growth && r.growth.large.events < 1_000_000) notes.push(`Growth on ${engine} went to ${r.growth.large.events.toLocaleString('en-US')} events, not 1 000 000 (--events).`);
    if (r.layers && !r.layers.knobHonoured) notes.push(`Layers on ${engine}: the server does not honour VALIDATE_REQUESTS=false, so "without request validation" validated too.`);
  }
  if (options.phases.has('processes')) {
    if (!results.engines.postgres) notes.push('The processes phase runs on PostgreSQL only, which was not measured: skipped.');
    else if (results.engines.sqlite) notes.push('The processes phase runs on PostgreSQL only: processes on one SQLite data directory take turns for its one write lock.');
  }
  if (results.engines.postgres?.processes) {
    notes.push(
      `Processes (PostgreSQL): a figure, not a target — the load generator, PostgreSQL and the ${MOST_PROCESSES} server processes share the same ${cpus().length} CPU(s), so a second process competes with them for CPU time more than it adds any; on a machine of its own, each process would have cores of its own.`,
    );
  }
  if (results.machine.postgres_autovacuum === false) {
    notes.push("PostgreSQL's autovacuum is off on this server: the bench analyzes each scratch database's tables every 10 s when autovacuum's default rule would (bench/lib/autoanalyze.ts).");
  }
  if (options.cpuProf) notes.push('Real servers ran under --cpu-prof (slower); profiles in bench/results/*.cpuprofile.');
  return notes;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping servers and dropping scratch storage`);
    void closeAll().finally(() => process.exit(130));
  });
}

try {
  await main();
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await closeAll();
}
