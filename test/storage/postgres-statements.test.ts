import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { Storage } from '../../server/storage/database';
import { freshStorage, openStorageAt } from '../support/storage';

/** PostgreSQL plans a statement with parameters once per connection, not at every run. */
describe('statements on postgres', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function storage(): Promise<Storage> {
    const { storageEnv, cleanup } = await freshStorage('postgres');
    const opened = await openStorageAt(storageEnv);
    cleanups.push(cleanup, () => opened.close());
    return opened;
  }

  it('when a query with parameters runs three times on one connection, then the connection holds it as one prepared statement and each run answers its own values', async () => {
    // Arrange
    const { db } = await storage();
    const text = 'select $1::int + 1 as next';
    // Act
    const { answers, prepared } = await db.connection().execute(async (connection) => {
      const answers: number[] = [];
      for (const value of [1, 2, 3]) answers.push((await sql<{ next: number }>`select ${value}::int + 1 as next`.execute(connection)).rows[0].next);
      const { rows } = await sql<{ count: number }>`select count(*)::int as count from pg_prepared_statements where statement = ${text}`.execute(connection);
      return { answers, prepared: rows[0].count };
    });
    // Assert
    expect(answers).toEqual([2, 3, 4]);
    expect(prepared).toBe(1);
  });

  it('when a statement without parameters runs, then it is not kept as a prepared statement', async () => {
    // Arrange
    const { db } = await storage();
    // Act
    const prepared = await db.connection().execute(async (connection) => {
      await sql`select 41 + 1 as answer`.execute(connection);
      const { rows } = await sql<{ count: number }>`select count(*)::int as count from pg_prepared_statements where statement like ${'select 41 + 1%'}`.execute(connection);
      return rows[0].count;
    });
    // Assert
    expect(prepared).toBe(0);
  });
});
