import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { POSTGRES_ADMIN_URL } from './postgres';

declare module 'vitest' {
  export interface ProvidedContext {
    engines: Array<'sqlite' | 'postgres'>;
  }
}

/** SQLite always; PostgreSQL when it answers — and in CI it must. */
export default async function setup(project: TestProject): Promise<void> {
  const reachable = await postgresAnswers();
  if (!reachable && process.env.CI === 'true') {
    throw new Error(`PostgreSQL is required in CI but does not answer at ${POSTGRES_ADMIN_URL}`);
  }
  if (!reachable) console.warn(`\n[notice] PostgreSQL does not answer at ${POSTGRES_ADMIN_URL}: PostgreSQL tests are skipped.\n`);
  project.provide('engines', reachable ? ['sqlite', 'postgres'] : ['sqlite']);
}

async function postgresAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}
