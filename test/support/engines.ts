import { afterAll, beforeAll, inject } from 'vitest';
import { startServer, type TestServer } from './server';

/** The engines this run covers: SQLite always, PostgreSQL when it answers (always in CI). */
export const engines = inject('engines');

/** Starts a server for the enclosing describe block and stops it afterwards. */
export function useServer(engine: (typeof engines)[number]): () => TestServer {
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await startServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });
  return () => {
    if (!server) throw new Error('the server is not started yet');
    return server;
  };
}
