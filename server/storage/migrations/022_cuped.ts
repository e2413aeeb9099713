import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

/**
 * Regression adjustment (CUPED). What each participant did before its exposure, per event and UTC
 * day (`pre_exposure_activity`: its number of events and their value sum in micro-units, exact),
 * kept as far back as the longest window of the team's experiments and swept past it (the index on
 * team and day serves the sweep). Each enrolment's covariate x per event of its experiment
 * (`enrolment_covariates`, micro-units), frozen when it enrolled. Beside Σy and Σy² per variant ×
 * event, and per day in the roll-up, Σx, Σx² and Σxy, exact as they are. Each experiment's window
 * in whole days (`pre_exposure_days`, 0 to 60, 0 turning the adjustment off, 14 by default).
 * Enrolments made before this have no history: their x is 0, so every new sum starts at 0 and the
 * history still adds up to the counters.
 */
export function cuped(engine: Engine): Migration {
  const big = engine === 'postgres' ? 'numeric' : 'text';
  const teamId = (col: ColumnDefinitionBuilder) => col.notNull().references('teams.id').onDelete('cascade');
  const eventId = (col: ColumnDefinitionBuilder) => col.notNull().references('events.id').onDelete('cascade');
  // PostgreSQL keys participants by (team_id, id) (migration 017); SQLite by its row id.
  const participantKey: [Array<'team_id' | 'participant_id'>, string, string[]] =
    engine === 'postgres' ? [['team_id', 'participant_id'], 'participants', ['team_id', 'id']] : [['participant_id'], 'participants', ['id']];
  const sums = ['sum_x', 'sum_x2', 'sum_xy'];
  const counterTables = ['variant_event_counts', 'daily_variant_event_counts'];
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('experiments')
        .addColumn('pre_exposure_days', 'integer', (col) => col.notNull().defaultTo(14).check(sql`pre_exposure_days between 0 and 60`))
        .execute();
      for (const table of counterTables) {
        for (const sum of sums) await db.schema.alterTable(table).addColumn(sum, big, (col) => col.notNull().defaultTo('0')).execute();
      }
      await db.schema
        .createTable('pre_exposure_activity')
        .addColumn('team_id', 'bigint', teamId)
        .addColumn('participant_id', 'bigint', (col) => col.notNull())
        .addColumn('event_id', 'bigint', eventId)
        .addColumn('day', 'text', (col) => col.notNull())
        .addColumn('count', 'bigint', (col) => col.notNull())
        .addColumn('value', big, (col) => col.notNull().defaultTo('0'))
        .addPrimaryKeyConstraint('pre_exposure_activity_pkey', ['team_id', 'participant_id', 'event_id', 'day'])
        .addForeignKeyConstraint('pre_exposure_activity_participant_fkey', ...participantKey, (fk) => fk.onDelete('cascade'))
        .execute();
      await db.schema.createIndex('pre_exposure_activity_day').on('pre_exposure_activity').columns(['team_id', 'day']).execute();
      await db.schema.createIndex('pre_exposure_activity_event').on('pre_exposure_activity').column('event_id').execute();
      await db.schema
        .createTable('enrolment_covariates')
        .addColumn('team_id', 'bigint', teamId)
        .addColumn('participant_id', 'bigint', (col) => col.notNull())
        .addColumn('experiment_id', 'bigint', (col) => col.notNull().references('experiments.id').onDelete('cascade'))
        .addColumn('event_id', 'bigint', eventId)
        .addColumn('x', big, (col) => col.notNull())
        .addPrimaryKeyConstraint('enrolment_covariates_pkey', ['team_id', 'participant_id', 'experiment_id', 'event_id'])
        .addForeignKeyConstraint('enrolment_covariates_participant_fkey', ...participantKey, (fk) => fk.onDelete('cascade'))
        .execute();
      await db.schema.createIndex('enrolment_covariates_experiment').on('enrolment_covariates').columns(['experiment_id', 'event_id']).execute();
      await db.schema.createIndex('enrolment_covariates_event').on('enrolment_covariates').column('event_id').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('enrolment_covariates').execute();
      await db.schema.dropTable('pre_exposure_activity').execute();
      for (const table of [...counterTables].reverse()) {
        for (const sum of [...sums].reverse()) await db.schema.alterTable(table).dropColumn(sum).execute();
      }
      await db.schema.alterTable('experiments').dropColumn('pre_exposure_days').execute();
    },
  };
}
