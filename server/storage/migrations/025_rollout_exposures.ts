import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

/**
 * What a safe rollout compares. Each participant exposed to a rollout, in the arm it was first
 * exposed in (`rollout_exposures`, one row per rollout and participant); its conversions of the
 * rollout's guardrail events since (`rollout_conversions`: their number and value sum in
 * micro-units, exact); per arm, the participants exposed (`rollout_arm_counts`) and, per guardrail
 * event, the conversions, unique conversions, Σy and Σy² of the participants' capped totals
 * (`rollout_arm_event_counts`) — the counters a check reads, O(arms × guardrails). Each rollout's
 * exposures per arm when its current step began (`step_exposures`, JSON `{"new": n, "current": m}`),
 * and, while its sample-ratio check fails, since when and at what p-value (`hold`, JSON or null).
 */
export function rolloutExposures(engine: Engine): Migration {
  const big = engine === 'postgres' ? 'numeric' : 'text';
  const id = 'bigint';
  const teamId = (col: ColumnDefinitionBuilder) => col.notNull().references('teams.id').onDelete('cascade');
  const rolloutId = (col: ColumnDefinitionBuilder) => col.notNull().references('rollouts.id').onDelete('cascade');
  const eventId = (col: ColumnDefinitionBuilder) => col.notNull().references('events.id').onDelete('cascade');
  const arm = (col: ColumnDefinitionBuilder) => col.notNull().check(sql`arm in ('new', 'current')`);
  // PostgreSQL keys participants by (team_id, id) (migration 017); SQLite by its row id.
  const participantKey: [Array<'team_id' | 'participant_id'>, string, string[]] =
    engine === 'postgres' ? [['team_id', 'participant_id'], 'participants', ['team_id', 'id']] : [['participant_id'], 'participants', ['id']];
  const timestamp = engine === 'postgres' ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('rollouts').addColumn('step_exposures', 'text', (col) => col.notNull().defaultTo('{"new":0,"current":0}')).execute();
      await db.schema.alterTable('rollouts').addColumn('hold', 'text').execute();
      await db.schema
        .createTable('rollout_exposures')
        .addColumn('team_id', id, teamId)
        .addColumn('rollout_id', id, rolloutId)
        .addColumn('participant_id', id, (col) => col.notNull())
        .addColumn('arm', 'text', arm)
        .addColumn('exposed_at', timestamp, (col) => col.notNull())
        .addPrimaryKeyConstraint('rollout_exposures_pkey', ['rollout_id', 'participant_id'])
        .addForeignKeyConstraint('rollout_exposures_participant_fkey', ...participantKey, (fk) => fk.onDelete('cascade'))
        .execute();
      await db.schema.createIndex('rollout_exposures_participant').on('rollout_exposures').columns(['team_id', 'participant_id']).execute();
      await db.schema
        .createTable('rollout_conversions')
        .addColumn('team_id', id, teamId)
        .addColumn('rollout_id', id, rolloutId)
        .addColumn('participant_id', id, (col) => col.notNull())
        .addColumn('event_id', id, eventId)
        .addColumn('count', 'bigint', (col) => col.notNull().check(sql`count > 0`))
        .addColumn('value', big, (col) => col.notNull().defaultTo('0'))
        .addPrimaryKeyConstraint('rollout_conversions_pkey', ['rollout_id', 'participant_id', 'event_id'])
        .addForeignKeyConstraint('rollout_conversions_participant_fkey', ...participantKey, (fk) => fk.onDelete('cascade'))
        .execute();
      await db.schema.createIndex('rollout_conversions_participant').on('rollout_conversions').columns(['team_id', 'participant_id']).execute();
      await db.schema.createIndex('rollout_conversions_event').on('rollout_conversions').column('event_id').execute();
      await db.schema
        .createTable('rollout_arm_counts')
        .addColumn('team_id', id, teamId)
        .addColumn('rollout_id', id, rolloutId)
        .addColumn('arm', 'text', arm)
        .addColumn('participants', 'bigint', (col) => col.notNull().check(sql`participants >= 0`))
        .addPrimaryKeyConstraint('rollout_arm_counts_pkey', ['rollout_id', 'arm'])
        .execute();
      await db.schema
        .createTable('rollout_arm_event_counts')
        .addColumn('team_id', id, teamId)
        .addColumn('rollout_id', id, rolloutId)
        .addColumn('arm', 'text', arm)
        .addColumn('event_id', id, eventId)
        .addColumn('conversions', 'bigint', (col) => col.notNull().check(sql`conversions >= 0`))
        .addColumn('unique_conversions', 'bigint', (col) => col.notNull().check(sql`unique_conversions >= 0`))
        .addColumn('sum_y', big, (col) => col.notNull().defaultTo('0'))
        .addColumn('sum_y2', big, (col) => col.notNull().defaultTo('0'))
        .addPrimaryKeyConstraint('rollout_arm_event_counts_pkey', ['rollout_id', 'arm', 'event_id'])
        .execute();
      await db.schema.createIndex('rollout_arm_event_counts_event').on('rollout_arm_event_counts').column('event_id').execute();
    },
    async down(db: Kysely<unknown>) {
      for (const table of ['rollout_arm_event_counts', 'rollout_arm_counts', 'rollout_conversions', 'rollout_exposures']) await db.schema.dropTable(table).execute();
      await db.schema.alterTable('rollouts').dropColumn('hold').execute();
      await db.schema.alterTable('rollouts').dropColumn('step_exposures').execute();
    },
  };
}
