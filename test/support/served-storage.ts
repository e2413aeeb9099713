import { pino } from 'pino';
import { createApp } from '../../server/app';
import type { Storage } from '../../server/storage/database';
import { listen } from './app';
import type { Engine } from '../../server/storage/engine';
import { freshStorage, openStorageAt, type StorageEnv } from './storage';

/**
 * Opens the storage (migrating it to the latest) and serves it in this process, for tests that
 * prepare storage as an older version left it or look at its connections (`poolSize` 1: every
 * query on one); the closes are pushed onto `cleanups`.
 */
export async function serveStorage(storageEnv: StorageEnv, cleanups: Array<() => Promise<void>>, poolSize?: number): Promise<{ storage: Storage; baseUrl: string }> {
  const storage = await openStorageAt(storageEnv, { poolSize });
  const server = await listen(createApp({ storage, logger: pino({ level: 'silent' }), validateResponses: true }));
  cleanups.push(() => storage.close(), () => server.close());
  return { storage, baseUrl: server.baseUrl };
}

/**
 * serveStorage on `storageEnv` — one an earlier call answered, to serve it again — or on a fresh
 * storage of `engine`, whose removal is pushed onto `cleanups` too.
 */
export async function serveFreshOr(engine: Engine, cleanups: Array<() => Promise<void>>, storageEnv?: StorageEnv, poolSize?: number) {
  if (!storageEnv) {
    const fresh = await freshStorage(engine);
    cleanups.push(fresh.cleanup);
    storageEnv = fresh.storageEnv;
  }
  return { storageEnv, ...(await serveStorage(storageEnv, cleanups, poolSize)) };
}
