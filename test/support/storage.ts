import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStorage, type Storage, type StorageOptions } from '../../server/storage/database';
import type { Engine } from '../../server/storage/engine';
import { createScratchDatabase } from './postgres';

/** Where a server's storage lives, as its environment names it: `DATA_DIR` (SQLite) or `DATABASE_URL` (PostgreSQL). */
export type StorageEnv = Record<string, string>;

/** A fresh, empty storage for one test: a temporary DATA_DIR, or a scratch PostgreSQL database. */
export async function freshStorage(engine: Engine): Promise<{ storageEnv: StorageEnv; cleanup: () => Promise<void> }> {
  if (engine === 'postgres') {
    const database = await createScratchDatabase();
    return { storageEnv: { DATABASE_URL: database.url }, cleanup: database.drop };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'experimentation-process-'));
  return { storageEnv: { DATA_DIR: dataDir }, cleanup: async () => rmSync(dataDir, { recursive: true, force: true }) };
}

/**
 * Opens (and migrates) the storage `storageEnv` names, with `options` (pool size, query log, …).
 * SQLite may be shared with a running server: WAL, busy_timeout, BEGIN IMMEDIATE.
 */
export async function openStorageAt(storageEnv: StorageEnv, options: Omit<StorageOptions, 'dataDir' | 'databaseUrl'> = {}): Promise<Storage> {
  return openStorage({ ...options, dataDir: storageEnv.DATA_DIR ?? '', databaseUrl: storageEnv.DATABASE_URL || undefined });
}
