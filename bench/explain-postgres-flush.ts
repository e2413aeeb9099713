// `npx tsx bench/explain-postgres-flush.ts [--items 100] [--flushes 3] [--warm 50] [--round-trips] [--keys] [--without-foreign-keys]`: where PostgreSQL's
// own time goes in an ingest flush — the database side of a flush, which the server's CPU profile does not see. On a
// scratch database with the bench team, after --warm batches, it runs --flushes batches of --items new participants
// with an event through the ingest service, on a connection that prepares statements as the server's do, with
// auto_explain (log_analyze, log_triggers), and prints each statement's time and, for the write, each foreign-key
// check's time and calls (PostgreSQL's per-row checks, or the statement-level ones of 014_set_based_keys). With --round-trips, no auto_explain: each round trip's mean time as the service waits for it.
// With --keys, every item carries an idempotency key never used before. It also prints the CPU time per flush of the
// connection's backend and of this process. --without-foreign-keys sets `session_replication_role = replica` on that
// connection, which skips foreign-key checks: what they cost, measured (never how the service runs).
import { parseArgs } from 'node:util';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { ingestContexts } from '../server/ingest/context';
import { ingestBatch, ingestion } from '../server/ingest/service';
import { ingestKeyWindowFromEnv } from '../server/settings/settings';
import { openStorage } from '../server/storage/database';
import { preparingStatements } from '../server/storage/postgres-statements';
import type { Database } from '../server/storage/schema';
import { benchTeamIn, newParticipants } from './lib/in-process';
import { cpuMsOf } from './lib/processes';
import { scratchStorage } from './lib/storage';

const { values } = parseArgs({
  options: {
    items: { type: 'string', default: '100' },
    flushes: { type: 'string', default: '3' },
    warm: { type: 'string', default: '50' },
    'round-trips': { type: 'boolean', default: false },
    keys: { type: 'boolean', default: false },
    'without-foreign-keys': { type: 'boolean', default: false },
  },
});
const batch = () => newParticipants(Number(values.items), values.keys);

const scratch = await scratchStorage('postgres');
const storage = await openStorage(scratch.options);
try {
  const teamRow = await benchTeamIn(storage, scratch);
  const contexts = ingestContexts();
  const warming = ingestion(storage, contexts, ingestKeyWindowFromEnv());
  for (let i = 0; i < Number(values.warm); i++) await ingestBatch(warming, teamRow, batch());

  const plans: string[] = [];
  const trips = new Map<string, number[]>();
  const pool = new pg.Pool({ connectionString: scratch.options.databaseUrl, max: 1 });
  pool.on('connect', (client) => {
    client.on('notice', (notice) => plans.push(notice.message ?? ''));
    if (values['without-foreign-keys']) void client.query('set session_replication_role = replica');
    if (values['round-trips']) return;
    void client.query(`load 'auto_explain'; set auto_explain.log_min_duration = 0; set auto_explain.log_analyze = on;
      set auto_explain.log_triggers = on; set auto_explain.log_level = notice`);
  });
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: preparingStatements(pool) }),
    log: (event) => {
      const words = firstWords(event.query.sql);
      trips.set(words, [...(trips.get(words) ?? []), event.queryDurationMillis]);
    },
  });
  const explained = { ...storage, db };
  const explainedIngestion = ingestion(explained, contexts, ingestKeyWindowFromEnv());
  const flushTimes: number[] = [];
  const backend = (await pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  const [backendAtStart, processAtStart] = [cpuMsOf(backend), process.cpuUsage()];
  for (let flush = 1; flush <= Number(values.flushes); flush++) {
    plans.length = 0;
    const started = performance.now();
    await ingestBatch(explainedIngestion, teamRow, batch());
    flushTimes.push(performance.now() - started);
    const took = flushTimes.at(-1)!.toFixed(1);
    if (values['round-trips']) continue;
    console.log(`\nflush ${flush}: ${values.items} new participants with an event, 3 running experiments; ${took} ms as the service saw it (begin to commit)`);
    for (const plan of plans) printPlan(plan);
  }
  const ownCpu = process.cpuUsage(processAtStart);
  const perFlush = (ms: number) => `${(ms / Number(values.flushes)).toFixed(2)} ms`;
  console.log(`\nCPU a flush: the backend ${perFlush(cpuMsOf(backend) - backendAtStart)}, this process ${perFlush((ownCpu.user + ownCpu.system) / 1000)}`);
  if (values['round-trips']) {
    console.log(`\nround trips of ${values.flushes} flushes of ${values.items} new participants with an event, 3 running experiments: mean ms`);
    for (const [words, times] of trips) console.log(`${mean(times).toFixed(3).padStart(9)} ms  ${words}`);
    console.log(`${mean(flushTimes).toFixed(3).padStart(9)} ms  a flush, as the service waits for it (${trips.size} kinds of round trip)`);
  }
  await explained.db.destroy();
} finally {
  await storage.close();
  await scratch.drop();
}

function mean(times: number[]): number {
  return times.reduce((sum, time) => sum + time, 0) / times.length;
}

/** A statement's duration and first words; for one with triggers, each trigger's time and calls. */
function printPlan(plan: string): void {
  const duration = /duration: ([\d.]+) ms/.exec(plan)?.[1];
  const text = /Query Text: ([\s\S]*?)\n(?=\S|[A-Z])/.exec(plan)?.[1] ?? '';
  console.log(`${duration?.padStart(9)} ms  ${firstWords(text)}`);
  for (const [, constraint, time, calls] of plan.matchAll(/Trigger for constraint (\S+) on \S+: time=([\d.]+) calls=(\d+)/g)) {
    console.log(`${time!.padStart(9)} ms    foreign key ${constraint} (${calls} checks)`);
  }
  for (const [, key, time, calls] of plan.matchAll(/Trigger (\S+_fkey)_insert on \S+: time=([\d.]+) calls=(\d+)/g)) {
    console.log(`${time!.padStart(9)} ms    foreign key ${key}, checked per statement (${calls} check${calls === '1' ? '' : 's'})`);
  }
}

function firstWords(sql: string): string {
  return sql.replace(/\s+/g, ' ').trim().slice(0, 70);
}
