import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/**
 * Kysely prepares every query anew, and preparing costs about as much as running a small
 * query. Statements are reused by their SQL text instead; one connection runs one query at a
 * time, so a statement is never in use twice. The SQL texts are few (query shapes, not values).
 */
export function reusingStatements(database: BetterSqlite3.Database, max = 1000): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    prepare(sql) {
      let statement = statements.get(sql);
      if (!statement) {
        if (statements.size >= max) statements.clear();
        statement = database.prepare(sql);
        statements.set(sql, statement);
      }
      return statement;
    },
    close() {
      statements.clear();
      database.close();
    },
  };
}
