import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

/**
 * Webhooks: a team's endpoints, and the outbox of their deliveries — one row per audit entry and
 * endpoint that wants it, written in the change's own transaction and sent by the delivery
 * worker, numbered per endpoint (`number`, from the endpoint's `deliveries_queued`, which also
 * orders concurrent enqueuers). `event_types` is JSON text. An endpoint's lease (`lease_owner`, `lease_until`) is held
 * by the one process delivering its queue; the body is the audit entry's JSON, fixed when queued.
 */
export function webhooks(engine: Engine): Migration {
  const timestamp = engine === 'postgres' ? 'timestamptz' : 'text';
  const sortedText = engine === 'postgres' ? sql`text collate "C"` : sql`text`;
  const boolean = engine === 'postgres' ? 'boolean' : 'integer';
  const id = (col: ColumnDefinitionBuilder) =>
    engine === 'postgres' ? col.primaryKey().generatedByDefaultAsIdentity() : col.primaryKey().autoIncrement();
  const idType = engine === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('webhook_endpoints')
        .addColumn('id', idType, id)
        .addColumn('team_id', 'bigint', (col) => col.notNull().references('teams.id').onDelete('cascade'))
        .addColumn('key', sortedText, (col) => col.notNull())
        .addColumn('url', 'text', (col) => col.notNull())
        .addColumn('event_types', 'text', (col) => col.notNull())
        .addColumn('enabled', boolean, (col) => col.notNull())
        .addColumn('description', 'text')
        .addColumn('disabled_reason', 'text')
        .addColumn('secret', 'text', (col) => col.notNull())
        .addColumn('deliveries_queued', 'bigint', (col) => col.notNull().defaultTo(0))
        .addColumn('lease_owner', 'text')
        .addColumn('lease_until', timestamp)
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('updated_at', timestamp, (col) => col.notNull())
        .addUniqueConstraint('webhook_endpoints_team_key', ['team_id', 'key'])
        .execute();
      await db.schema
        .createTable('webhook_deliveries')
        .addColumn('id', idType, id)
        .addColumn('endpoint_id', 'bigint', (col) => col.notNull().references('webhook_endpoints.id').onDelete('cascade'))
        .addColumn('number', 'bigint', (col) => col.notNull())
        .addColumn('audit_entry_id', 'bigint', (col) => col.notNull())
        .addColumn('event_type', 'text', (col) => col.notNull())
        .addColumn('body', 'text', (col) => col.notNull())
        .addColumn('status', 'text', (col) => col.notNull().check(sql`status in ('pending', 'delivered', 'failed')`))
        .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
        .addColumn('last_status', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('first_attempt_at', timestamp)
        .addColumn('last_attempt_at', timestamp)
        .addColumn('next_attempt_at', timestamp)
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('delivered_at', timestamp)
        .addUniqueConstraint('webhook_deliveries_endpoint_number', ['endpoint_id', 'number'])
        .execute();
      await db.schema.createIndex('webhook_deliveries_pending').on('webhook_deliveries').columns(['status', 'endpoint_id', 'number']).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('webhook_deliveries').execute();
      await db.schema.dropTable('webhook_endpoints').execute();
    },
  };
}
