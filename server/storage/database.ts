import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Engine } from './engine';
import { initialSchema } from './migrations/001_initial';
import type { Database } from './schema';
import { SqliteBooleans } from './sqlite-booleans';
import { ImmediateSqliteDialect } from './sqlite-dialect';

export type Db = Kysely<Database>;

export interface Storage {
  db: Db;
  engine: Engine;
  close(): Promise<void>;
}

export interface StorageOptions {
  /** PostgreSQL connection string; when absent, SQLite under dataDir. */
  databaseUrl?: string;
  dataDir: string;
  poolSize?: number;
}

// bigint (ids, counters, COUNT(*)) as JavaScript numbers: every value stays below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export async function openStorage(options: StorageOptions): Promise<Storage> {
  const storage = options.databaseUrl ? openPostgres(options.databaseUrl, options.poolSize) : openSqlite(options.dataDir);
  await migrate(storage);
  return storage;
}

function openSqlite(dataDir: string): Storage {
  mkdirSync(dataDir, { recursive: true });
  const database = new BetterSqlite3(join(dataDir, 'experimentation.sqlite'));
  database.pragma('journal_mode = WAL');
  // FULL: a transaction is on disk before it is acknowledged, even across power loss.
  database.pragma('synchronous = FULL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database }), plugins: [new SqliteBooleans()] });
  return { db, engine: 'sqlite', close: () => db.destroy() };
}

function openPostgres(connectionString: string, poolSize = 10): Storage {
  const pool = new pg.Pool({ connectionString, max: poolSize });
  // An idle client whose connection the server closed (restart, failover, idle timeout): the pool
  // discards it and the next query connects anew. Without a listener the error would kill the process.
  pool.on('error', () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return { db, engine: 'postgres', close: () => db.destroy() };
}

async function migrate(storage: Storage): Promise<void> {
  const migrator = new Migrator({
    db: storage.db,
    provider: { getMigrations: async () => ({ '001_initial': initialSchema(storage.engine) }) },
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}
