import type { CompiledQuery } from 'kysely';
import { afterAll, beforeAll } from 'vitest';
import type { Storage } from '../../server/storage/database';
import { openStorageAt } from './storage';
import type { AppOptions } from '../../server/app';
import { useApp } from './app';
import type { TestServer } from './server';

/** A second app (with `options`) on the test server's storage that records every query it sends — one per round trip — through Kysely's log. */
export function useLoggedApp(server: () => TestServer, options: Partial<AppOptions> = {}) {
  // Every query the logged app runs, in order.
  const statements: CompiledQuery[] = [];
  const hook = { onStatement: (_query: CompiledQuery) => {} };
  let logged: Storage | undefined;
  beforeAll(async () => {
    logged = await openStorageAt(server().storageEnv, {
      log: (event) => {
        statements.push(event.query);
        hook.onStatement(event.query);
      },
    });
  });
  afterAll(async () => {
    await logged?.close();
  });
  const baseUrl = useApp(() => logged!, options);
  return { statements, hook, baseUrl };
}
