import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createApp } from '../../server/app';
import { settingsFromEnv } from '../../server/settings/settings';
import type { Engine } from '../../server/storage/engine';
import type { Storage } from '../../server/storage/database';
import { freshStorage, openStorageAt } from './storage';
import { keepIdleConnectionsLonger } from './app';
import { createTestTeam, type TestTeam } from './team';

export interface TestServer {
  engine: Engine;
  baseUrl: string;
  storage: Storage;
  /** Where the storage lives: a DATA_DIR for SQLite, a DATABASE_URL for PostgreSQL. */
  storageEnv: Record<string, string>;
  /** A new team with its own user, token, ingest key and typed clients. */
  newTeam(name?: string): Promise<TestTeam>;
  close(): Promise<void>;
}

let teams = 0;

/** The real server on a real port, on its own fresh storage, validating responses too. */
export async function startServer(engine: Engine): Promise<TestServer> {
  const { storageEnv, cleanup } = await freshStorage(engine);
  // A loaded machine can take PostgreSQL past the service's 5 s to start a backend: the tests wait longer.
  const storage = await openStorageAt(storageEnv, { connectTimeoutMs: 60_000 });
  // The tests' composition root: settings from the environment, as main.ts reads them (the streams' bounds are the defaults).
  const { configStreams: _, ofrepStreams: __, ...settings } = settingsFromEnv();
  const app = createApp({ ...settings, storage, logger: pino({ level: 'silent' }), validateResponses: true });
  const server = app.listen(0, '127.0.0.1');
  keepIdleConnectionsLonger(server);
  await new Promise((resolve) => server.once('listening', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    engine,
    baseUrl,
    storage,
    storageEnv,
    async newTeam(name = `Team ${++teams}`) {
      return createTestTeam(storage, baseUrl, name, `user${process.pid}-${++teams}@example.com`);
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await storage.close();
      await cleanup();
    },
  };
}

