import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

/**
 * The audit log: one row per change to a team's resources, written in the change's own
 * transaction and never updated; only the retention sweep deletes rows, the oldest first. `id`
 * orders the entries (the cursor of the list); `before` and `after` are JSON text.
 */
export function auditLog(engine: Engine): Migration {
  const timestamp = engine === 'postgres' ? 'timestamptz' : 'text';
  const sortedText = engine === 'postgres' ? sql`text collate "C"` : sql`text`;
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('audit_log')
        .addColumn('id', engine === 'postgres' ? 'bigint' : 'integer', (col) =>
          engine === 'postgres' ? col.primaryKey().generatedByDefaultAsIdentity() : col.primaryKey().autoIncrement(),
        )
        .addColumn('team_id', 'bigint', (col) => col.notNull().references('teams.id').onDelete('cascade'))
        .addColumn('at', timestamp, (col) => col.notNull())
        .addColumn('actor_type', 'text', (col) => col.notNull().check(sql`actor_type in ('user', 'admin-cli', 'service')`))
        .addColumn('actor_user_id', 'bigint')
        .addColumn('actor_email', 'text')
        .addColumn('actor_reason', 'text')
        .addColumn('resource_type', 'text', (col) => col.notNull())
        .addColumn('resource_key', sortedText, (col) => col.notNull())
        .addColumn('action', 'text', (col) => col.notNull())
        .addColumn('before', 'text')
        .addColumn('after', 'text')
        .addColumn('request_id', 'text')
        .execute();
      await db.schema.createIndex('audit_log_team').on('audit_log').columns(['team_id', 'id']).execute();
      await db.schema.createIndex('audit_log_at').on('audit_log').column('at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('audit_log').execute();
    },
  };
}
