import { CompiledQuery, SqliteAdapter, SqliteDialect, SqliteDriver, type DatabaseConnection, type DialectAdapter, type Driver, type SqliteDialectConfig } from 'kysely';

/**
 * Transactions take SQLite's write lock when they begin (BEGIN IMMEDIATE). A deferred transaction
 * that has read cannot wait for another process's writer (the admin CLI): its first write fails
 * at once with SQLITE_BUSY. An immediate one waits up to busy_timeout and then sees fresh data.
 */
class ImmediateTransactionsDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/**
 * SQLite's DDL is transactional, though Kysely's adapter says otherwise and takes no migration lock
 * (it assumes one process). Saying so makes the migrator run all pending migrations in one
 * transaction, which BEGIN IMMEDIATE opens with the write lock: servers started together on a
 * fresh database migrate one after the other — the first does the work, the others find it done —
 * instead of running the same steps at once (a duplicate column, a duplicate kysely_migration row).
 * A migration that fails leaves the schema as it was.
 */
class TransactionalDdlAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

export class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;

  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): Driver {
    return new ImmediateTransactionsDriver(this.#config);
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlAdapter();
  }
}
