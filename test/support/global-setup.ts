import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { buildConsole } from '../../scripts/console';
import { buildChildEntries } from './build';
import { POSTGRES_ADMIN_URL } from './postgres';

type Engine = 'sqlite' | 'postgres';
const ENGINES: readonly Engine[] = ['sqlite', 'postgres'];

declare module 'vitest' {
  export interface ProvidedContext {
    engines: Engine[];
  }
}

/**
 * SQLite always; PostgreSQL when it answers — and in CI it must.
 * TEST_ENGINES (comma-separated, e.g. `sqlite`) names the engines instead: each one named is
 * required, the others are not even probed (.ci/node-lts runs SQLite only, with CI=true).
 */
export default async function setup(project: TestProject): Promise<void> {
  await Promise.all([buildChildEntries(), buildConsole()]);
  const chosen = chosenEngines(process.env.TEST_ENGINES);
  if (chosen) {
    if (chosen.includes('postgres') && !(await postgresAnswers())) {
      throw new Error(`TEST_ENGINES names postgres but PostgreSQL does not answer at ${POSTGRES_ADMIN_URL}`);
    }
    project.provide('engines', chosen);
    return;
  }
  const reachable = await postgresAnswers();
  if (!reachable && process.env.CI === 'true') {
    throw new Error(`PostgreSQL is required in CI but does not answer at ${POSTGRES_ADMIN_URL}`);
  }
  if (!reachable) console.warn(`\n[notice] PostgreSQL does not answer at ${POSTGRES_ADMIN_URL}: PostgreSQL tests are skipped.\n`);
  project.provide('engines', reachable ? ['sqlite', 'postgres'] : ['sqlite']);
}

/** The engines TEST_ENGINES names, in the usual order; undefined when it is unset or blank. */
function chosenEngines(value: string | undefined): Engine[] | undefined {
  const names = (value ?? '').split(',').map((name) => name.trim()).filter((name) => name !== '');
  if (names.length === 0) return undefined;
  const unknown = names.filter((name) => !(ENGINES as readonly string[]).includes(name));
  if (unknown.length > 0) {
    throw new Error(`TEST_ENGINES=${value}: unknown engine ${unknown.map((name) => `"${name}"`).join(', ')} (known: ${ENGINES.join(', ')})`);
  }
  return ENGINES.filter((engine) => names.includes(engine));
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
