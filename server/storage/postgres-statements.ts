import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';

/**
 * PostgreSQL parses and plans an unnamed statement at every run; for the hot paths' statements
 * (an ingest flush's CTE of six writes, say) that is more of the database's CPU than running
 * them. Statements with parameters are sent as named statements instead, one name per SQL text,
 * which node-postgres prepares once per connection. Like SQLite's (sqlite-statements.ts), the
 * texts are query shapes, not values, and few; past `max` of them the rest go unnamed.
 */
export function preparingStatements(pool: pg.Pool, max = 1000): PostgresPool {
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (!name && names.size < max) names.set(text, (name = `statement_${names.size + 1}`));
    return name;
  };
  const clients = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let preparing = clients.get(client);
      if (!preparing) {
        preparing = {
          // Kysely sends every query as (text, values); without values (begin, commit, DDL) the simple protocol, as before.
          query: ((text: string, values: unknown[]) => {
            const name = values.length > 0 ? nameOf(text) : undefined;
            return name ? client.query({ name, text, values }) : client.query(text, values);
          }) as unknown as PostgresPoolClient['query'],
          release: () => client.release(),
        };
        clients.set(client, preparing);
      }
      return preparing;
    },
    end: () => pool.end(),
  };
}
