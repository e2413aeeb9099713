import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import type { CompiledQuery } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { createApp, type AppOptions } from '../../server/app';
import { settingsFromEnv } from '../../server/settings/settings';
import type { Engine } from '../../server/storage/engine';
import type { Storage, StorageOptions } from '../../server/storage/database';
import { freshStorage, openStorageAt, type StorageEnv } from './storage';
import { createTestTeam, type TestTeam } from './team';

/**
 * The service in this process, on a real port of 127.0.0.1. (The service as a child process, for
 * what only a process can show — signals, timeouts, outages — is process.ts's startChild.)
 */

export interface TestServer {
  engine: Engine;
  baseUrl: string;
  storage: Storage;
  /** Where the storage lives: a DATA_DIR for SQLite, a DATABASE_URL for PostgreSQL. */
  storageEnv: StorageEnv;
  /** A new team with its own user, token, ingest key and typed clients. */
  newTeam(name?: string): Promise<TestTeam>;
  close(): Promise<void>;
}

/**
 * What to serve. The storage is the one `storageEnv` names (opened and migrated here, kept
 * afterwards); else a fresh one of `engine` (removed afterwards); else `beside`'s open storage —
 * a second app with other options on a test server's storage (`storage` in its place: it wrapped).
 */
export interface ServeOptions {
  engine?: Engine;
  storageEnv?: StorageEnv;
  beside?: TestServer;
  storage?: Storage;
  /** How the storage is opened when it is opened here: a pool size, a query log (recordQueries), … */
  open?: Omit<StorageOptions, 'dataDir' | 'databaseUrl'>;
  /** The app's options over the harness's: the settings from the environment (as main.ts reads them), a silent logger, responses validated. */
  app?: Partial<AppOptions>;
  /** The test's clean-ups, run after each test: the close (and a fresh storage's removal) are pushed onto them. */
  closeWith?: Array<() => Promise<void>>;
}

let teams = 0;

/** The service on `engine`'s fresh storage, or as `options` say, on a free port. */
export async function startServer(options: Engine | ServeOptions): Promise<TestServer> {
  const { engine, storageEnv: given, beside, storage: instead, open, app: appOptions = {}, closeWith }: ServeOptions = typeof options === 'string' ? { engine: options } : options;
  const cleanups: Array<() => Promise<void>> = [];
  let storageEnv: StorageEnv;
  let storage: Storage;
  if (given || engine) {
    if (given) storageEnv = given;
    else {
      const fresh = await freshStorage(engine!);
      (closeWith ?? cleanups).push(fresh.cleanup);
      storageEnv = fresh.storageEnv;
    }
    // A loaded machine can take PostgreSQL past the service's 5 s to start a backend: the tests wait longer.
    storage = await openStorageAt(storageEnv, { connectTimeoutMs: 60_000, ...open });
    cleanups.unshift(() => storage.close());
  } else if (beside) {
    storageEnv = beside.storageEnv;
    storage = instead ?? beside.storage;
  } else {
    throw new Error('startServer: name an engine, a storageEnv or a server to serve beside');
  }
  // The tests' composition root: settings from the environment, as main.ts reads them (the streams' bounds are the defaults).
  const { configStreams: _, ofrepStreams: __, ...settings } = settingsFromEnv();
  const listening = await listen(createApp({ ...settings, storage, logger: pino({ level: 'silent' }), validateResponses: true, ...appOptions }));
  const baseUrl = listening.baseUrl;
  const close = async () => {
    await listening.close();
    for (const cleanup of cleanups) await cleanup();
  };
  closeWith?.push(close);
  return {
    engine: storage.engine,
    baseUrl,
    storage,
    storageEnv,
    async newTeam(name = `Team ${++teams}`) {
      return createTestTeam(storage, baseUrl, name, `user${process.pid}-${++teams}@example.com`);
    },
    close,
  };
}

/** startServer for the enclosing describe block (options read when it starts), stopped afterwards. */
export function useServer(options: Engine | ServeOptions | (() => ServeOptions)): () => TestServer {
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await startServer(typeof options === 'function' ? options() : options);
  });
  afterAll(async () => {
    await server?.close();
  });
  return () => {
    if (!server) throw new Error('the server is not started yet');
    return server;
  };
}

/**
 * Every query a storage runs, in order — one per round trip — through Kysely's log: `log` goes in
 * ServeOptions' `open`; `hook.onStatement` is called with each as it runs.
 */
export function recordQueries() {
  const statements: CompiledQuery[] = [];
  const hook = { onStatement: (_query: CompiledQuery) => {} };
  const log: StorageOptions['log'] = (event) => {
    statements.push(event.query);
    hook.onStatement(event.query);
  };
  return { statements, hook, log };
}

/** Any Express app (a mock, a receiver, a proxy, …) on a free port of 127.0.0.1, its base URL and how to stop it. */
export async function listen(app: Express): Promise<{ baseUrl: string; close: () => Promise<void> }> {
  const listener = app.listen(0, '127.0.0.1');
  keepIdleConnectionsLonger(listener);
  await new Promise((resolve) => listener.once('listening', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(listener.address() as AddressInfo).port}`,
    close: async () => {
      listener.closeAllConnections();
      await new Promise((resolve) => listener.close(resolve));
    },
  };
}

/**
 * Keeps an idle keep-alive connection open well past the client's own 4 s. On a loaded machine
 * the client's timer fires late, and with the server's default 5 s it can send a request on a
 * connection the server is closing ("other side closed").
 */
function keepIdleConnectionsLonger(server: Server): void {
  server.keepAliveTimeout = 60_000;
}
