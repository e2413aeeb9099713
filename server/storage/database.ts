import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, sql, type LogConfig, type Migration } from 'kysely';
import pg from 'pg';
import type { Engine } from './engine';
import { groupCommit, type Batched } from './group-commit';
import { initialSchema } from './migrations/001_initial';
import { configVersion } from './migrations/002_config_version';
import { dailyCounts } from './migrations/003_daily_counts';
import { compositeKeys } from './migrations/004_composite_keys';
import { flagRules } from './migrations/006_flag_rules';
import { targeting } from './migrations/005_targeting';
import { metrics } from './migrations/007_metrics';
import { participantsOrder } from './migrations/008_participants_order';
import { guardrails } from './migrations/009_guardrails';
import { ingestKeys } from './migrations/010_ingest_keys';
import { minimumEffect } from './migrations/011_minimum_effect';
import { counterKeys } from './migrations/012_counter_keys';
import { participantKeys } from './migrations/013_participant_keys';
import { setBasedKeys } from './migrations/014_set_based_keys';
import { flushAssumptions } from './migrations/015_flush_assumptions';
import { ownParentsUnlocked } from './migrations/016_own_parents_unlocked';
import { naturalPrimaryKeys } from './migrations/017_natural_primary_keys';
import { flagTypes } from './migrations/018_flag_types';
import { memberRoles } from './migrations/019_member_roles';
import { auditLog } from './migrations/020_audit_log';
import { webhooks } from './migrations/021_webhooks';
import { cuped } from './migrations/022_cuped';
import { webhookSecretOverlap } from './migrations/023_webhook_secret_overlap';
import { rollouts } from './migrations/024_rollouts';
import { rolloutExposures } from './migrations/025_rollout_exposures';
import { registerExactAdd } from './exact-sums';
import { preparingStatements } from './postgres-statements';
import type { Database, Db } from './schema';
import { postgresSignals } from './postgres-listener';
import { ImmediateSqliteDialect } from './sqlite-dialect';
import { reusingStatements } from './sqlite-statements';
import { localSignals, registerSignals, type TeamSignals } from './team-signals';

export type { Db } from './schema';

export interface Storage {
  db: Db;
  engine: Engine;
  /** Runs a unit of work in a transaction shared with concurrent units: one commit for all. */
  batched: Batched;
  /** SQLite: what the connection reports for its journal and sync modes (WAL, 2 = FULL); logged at start-up. */
  durability?: { journal_mode: string; synchronous: number };
  /**
   * PostgreSQL: whether the server runs autovacuum. Off, nothing analyzes the tables, and the
   * statements each connection prepared while they were nearly empty keep plans made for empty
   * tables (a sequential scan of participants per ingest flush): ingest slows as they grow.
   */
  autovacuum?: boolean;
  /** Committed changes of a team's config, announced to this process's listeners (see changingConfig). */
  signals: TeamSignals;
  close(): Promise<void>;
}

export interface StorageOptions {
  /** PostgreSQL connection string; when absent, SQLite under dataDir. */
  databaseUrl?: string;
  dataDir: string;
  poolSize?: number;
  /**
   * PostgreSQL: how long a request waits for a connection (a new one, or a free one of the full
   * pool) before it fails — and is answered 503 — instead of hanging while the database is away.
   */
  connectTimeoutMs?: number;
  /** SQLite: how long a write waits for another process's write lock before SQLITE_BUSY (503). */
  busyTimeoutMs?: number;
  /** Called with each query run and how long it took (Kysely's `log`): for diagnosis and to count statements. */
  log?: LogConfig;
  /** false: the schema is left as it is, for a tool beside a server that migrated it (which may be another checkout, at another migration). */
  migrate?: false;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;
export const DEFAULT_BUSY_TIMEOUT_MS = 5000;

// bigint (ids, counters, COUNT(*)) as JavaScript numbers: every value stays below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export async function openStorage(options: StorageOptions): Promise<Storage> {
  const storage = options.databaseUrl
    ? openPostgres(options.databaseUrl, options.poolSize, options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, options.log)
    : openSqlite(options.dataDir, options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS, options.log);
  try {
    if (options.migrate !== false) await migrate(storage);
    if (storage.engine === 'postgres') storage.autovacuum = (await sql<{ autovacuum: string }>`show autovacuum`.execute(storage.db)).rows[0]?.autovacuum === 'on';
  } catch (error) {
    await storage.close().catch(() => {});
    throw error;
  }
  return storage;
}

function openSqlite(dataDir: string, busyTimeoutMs: number, log?: LogConfig): Storage {
  mkdirSync(dataDir, { recursive: true });
  const database = new BetterSqlite3(join(dataDir, 'experimentation.sqlite'));
  // First: switching a fresh file to WAL takes its lock, which another process starting beside this one may hold.
  database.pragma(`busy_timeout = ${Math.max(0, Math.round(busyTimeoutMs))}`);
  database.pragma('journal_mode = WAL');
  // FULL: a transaction is on disk before it is acknowledged, even across power loss.
  database.pragma('synchronous = FULL');
  database.pragma('foreign_keys = ON');
  registerExactAdd(database);
  const durability = {
    journal_mode: String(database.pragma('journal_mode', { simple: true })),
    synchronous: Number(database.pragma('synchronous', { simple: true })),
  };
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: reusingStatements(database) }), log });
  const signals = localSignals();
  registerSignals(db, signals);
  return { db, engine: 'sqlite', batched: groupCommit(db, 'sqlite'), durability, signals, close: () => db.destroy() };
}

function openPostgres(connectionString: string, poolSize = 10, connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS, log?: LogConfig): Storage {
  // keepAlive: a connection to a database host that vanished without closing it (network, power) is
  // eventually found dead by TCP keep-alive instead of being kept forever. No reconnect logic of our
  // own: a client whose connection died is not queryable, the pool drops it on release, and the
  // next request connects anew — so the service recovers by itself once the database is back.
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    connectionTimeoutMillis: connectTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  // An idle client whose connection the server closed (restart, failover, idle timeout): the pool
  // discards it and the next query connects anew. Without a listener the error would kill the process.
  pool.on('error', () => {});
  // A checked-out client (pg-pool removes its idle listener) whose connection dies — during a query
  // or between two queries of a transaction — emits 'error' too: the query in flight already
  // rejects with it, so here it is only kept from becoming an uncaught exception.
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingStatements(pool) }), log });
  const signals = postgresSignals(connectionString);
  registerSignals(db, signals);
  const close = async () => {
    await signals.close();
    await db.destroy();
  };
  return { db, engine: 'postgres', batched: groupCommit(db, 'postgres'), signals, close };
}

/** The schema's migrations, in order. */
export function migrationsOf(engine: Engine): Record<string, Migration> {
  return {
    '001_initial': initialSchema(engine),
    '002_config_version': configVersion,
    '003_daily_counts': dailyCounts,
    '004_composite_keys': compositeKeys(engine),
    '005_targeting': targeting(engine),
    '006_flag_rules': flagRules,
    '007_metrics': metrics(engine),
    '008_participants_order': participantsOrder,
    '009_guardrails': guardrails,
    '010_ingest_keys': ingestKeys(engine),
    '011_minimum_effect': minimumEffect,
    '012_counter_keys': counterKeys(engine),
    '013_participant_keys': participantKeys(engine),
    '014_set_based_keys': setBasedKeys(engine),
    '015_flush_assumptions': flushAssumptions(engine),
    '016_own_parents_unlocked': ownParentsUnlocked(engine),
    '017_natural_primary_keys': naturalPrimaryKeys(engine),
    '018_flag_types': flagTypes,
    '019_member_roles': memberRoles(engine),
    '020_audit_log': auditLog(engine),
    '021_webhooks': webhooks(engine),
    '022_cuped': cuped(engine),
    '023_webhook_secret_overlap': webhookSecretOverlap(engine),
    '024_rollouts': rollouts(engine),
    '025_rollout_exposures': rolloutExposures(engine),
  };
}

async function migrate(storage: Storage): Promise<void> {
  const migrator = new Migrator({ db: storage.db, provider: { getMigrations: async () => migrationsOf(storage.engine) } });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}
