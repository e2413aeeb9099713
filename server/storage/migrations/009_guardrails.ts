import type { Kysely, Migration } from 'kysely';

/**
 * The guardrail events of each experiment, in the order given: a row per experiment × event,
 * gone with either (deleting a guardrail event removes it from the experiments it guarded;
 * renaming it follows, since the row holds its id).
 */
export const guardrails: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('experiment_guardrails')
      .addColumn('team_id', 'bigint', (col) => col.notNull().references('teams.id').onDelete('cascade'))
      .addColumn('experiment_id', 'bigint', (col) => col.notNull().references('experiments.id').onDelete('cascade'))
      .addColumn('event_id', 'bigint', (col) => col.notNull().references('events.id').onDelete('cascade'))
      .addColumn('position', 'integer', (col) => col.notNull())
      .addPrimaryKeyConstraint('experiment_guardrails_pkey', ['experiment_id', 'event_id'])
      .execute();
    await db.schema.createIndex('experiment_guardrails_event').on('experiment_guardrails').column('event_id').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('experiment_guardrails').execute();
  },
};
