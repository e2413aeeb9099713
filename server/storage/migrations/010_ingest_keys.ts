import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../engine';

/**
 * The idempotency keys of stored ingest items: per team, each key once (the primary key), with
 * the `data` its item was answered, for replays. A flush reads and writes them under its teams'
 * write locks; `created_at` orders the removal of keys past their window (ingest/keys.ts).
 */
export function ingestKeys(engine: Engine): Migration {
  const timestamp = engine === 'postgres' ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('ingest_keys')
        .addColumn('team_id', 'bigint', (col) => col.notNull().references('teams.id').onDelete('cascade'))
        .addColumn('key', 'text', (col) => col.notNull())
        .addColumn('outcome', 'text', (col) => col.notNull())
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addPrimaryKeyConstraint('ingest_keys_pkey', ['team_id', 'key'])
        .execute();
      await db.schema.createIndex('ingest_keys_created_at').on('ingest_keys').column('created_at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('ingest_keys').execute();
    },
  };
}
