import { CompiledQuery } from 'kysely';
import type { Db } from './schema';

/**
 * Statements sent to PostgreSQL together and answered in one round trip. node-postgres waits for
 * each answer before it sends the next query, so a transaction of five statements is five round
 * trips; a pipeline is one. It is only sent as one query, so its statements run as one: the
 * first that fails stops the rest, and the caller's transaction (if one is open) is aborted.
 */
export class Pipeline {
  constructor(readonly queries: readonly CompiledQuery[]) {}

  /** In Kysely's log: each statement's values, in order. */
  toJSON() {
    return this.queries.map((query) => query.parameters);
  }
}

/** What each of `queries` answered, in order (a statement without rows answers none). */
export async function inOneRoundTrip(connection: Db, queries: CompiledQuery[]): Promise<Array<{ rows: unknown[] }>> {
  // The connection (postgres-statements.ts) recognizes a query whose only value is a pipeline.
  const { rows } = await connection.executeQuery(CompiledQuery.raw(queries.map((query) => query.sql).join(';\n'), [new Pipeline(queries)]));
  return rows as Array<{ rows: unknown[] }>;
}
