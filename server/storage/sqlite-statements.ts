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
        statement = bindingBooleans(database.prepare(sql));
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

/**
 * better-sqlite3 cannot bind booleans: they are bound as 1 and 0, as SQLite itself stores them.
 * Done here, on the parameters, rather than by rewriting every query's tree in a Kysely plugin.
 */
function bindingBooleans(statement: BetterSqlite3.Statement): SqliteStatement {
  return {
    reader: statement.reader,
    all: (parameters) => statement.all(bindable(parameters)),
    run: (parameters) => statement.run(bindable(parameters)),
    iterate: (parameters) => statement.iterate(bindable(parameters)),
  };
}

function bindable(parameters: ReadonlyArray<unknown>): unknown[] {
  const values = parameters as unknown[];
  return values.some((value) => typeof value === 'boolean') ? values.map((value) => (typeof value === 'boolean' ? Number(value) : value)) : values;
}
