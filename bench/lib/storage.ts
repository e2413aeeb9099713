import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { StorageOptions } from '../../server/storage/database';
import type { Engine } from './options';

export const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface ScratchStorage {
  engine: Engine;
  /** What the server process gets: DATA_DIR or DATABASE_URL. */
  env: Record<string, string>;
  /** What `openStorage` in the bench process gets, for the same storage. */
  options: StorageOptions;
  drop(): Promise<void>;
}

/** An empty temporary SQLite directory or PostgreSQL database; `drop` removes it. */
export async function scratchStorage(engine: Engine): Promise<ScratchStorage> {
  if (engine === 'sqlite') {
    const dataDir = mkdtempSync(join(tmpdir(), 'experimentation-bench-'));
    return {
      engine,
      env: { DATA_DIR: dataDir },
      options: { dataDir },
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const name = `bench_${randomBytes(6).toString('hex')}`;
  await adminQuery(`create database ${name}`);
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    engine,
    env: { DATABASE_URL: url.toString() },
    options: { dataDir: '', databaseUrl: url.toString() },
    drop: () => adminQuery(`drop database if exists ${name} with (force)`),
  };
}

export async function postgresAnswers(): Promise<boolean> {
  try {
    await adminQuery('select 1');
    return true;
  } catch {
    return false;
  }
}

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}
