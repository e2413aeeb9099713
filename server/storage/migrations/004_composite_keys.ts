import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

/**
 * PostgreSQL: fewer and stronger foreign keys on the two tables every ingest writes most rows to.
 * PostgreSQL checks each foreign key of each inserted row with a query of its own, and those
 * checks were most of an ingest's write (four per enrolment, four per conversion). Now:
 * - an enrolment's variant is checked with its team and experiment at once — the variant must
 *   belong to that experiment of that team, which before nothing checked — and its participant
 *   on its own;
 * - a conversion must belong to an enrolment of the same participant in the same experiment
 *   (it always does: only enrolled participants convert, and removing an enrolment removes its
 *   conversions), and its event must be one of the same team's.
 * Deleting a team, experiment, variant, participant or event still deletes what hangs on it.
 * The indexes on experiment_id alone, which only those foreign keys used, are dropped: two fewer
 * index entries per enrolment and conversion.
 * SQLite checks its foreign keys in the process, where they cost little: its tables keep theirs.
 */
export function compositeKeys(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      await sql`alter table events add constraint events_team_id_id unique (team_id, id)`.execute(db);
      await sql`alter table variants add constraint variants_team_experiment_id unique (team_id, experiment_id, id)`.execute(db);
      await sql`alter table enrolments
        drop constraint enrolments_team_id_fkey,
        drop constraint enrolments_experiment_id_fkey,
        drop constraint enrolments_variant_id_fkey,
        add constraint enrolments_variant_fkey foreign key (team_id, experiment_id, variant_id)
          references variants (team_id, experiment_id, id) on delete cascade`.execute(db);
      await sql`alter table conversions
        drop constraint conversions_team_id_fkey,
        drop constraint conversions_participant_id_fkey,
        drop constraint conversions_experiment_id_fkey,
        drop constraint conversions_event_id_fkey,
        add constraint conversions_enrolment_fkey foreign key (team_id, participant_id, experiment_id)
          references enrolments (team_id, participant_id, experiment_id) on delete cascade,
        add constraint conversions_event_fkey foreign key (team_id, event_id)
          references events (team_id, id) on delete cascade`.execute(db);
      // Only the foreign keys on experiment_id used these; no query reads either table by experiment alone.
      await sql`drop index enrolments_experiment`.execute(db);
      await sql`drop index conversions_experiment`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      await sql`create index enrolments_experiment on enrolments (experiment_id)`.execute(db);
      await sql`create index conversions_experiment on conversions (experiment_id)`.execute(db);
      const references = (table: string, column: string, parent: string) =>
        sql.raw(`add constraint ${table}_${column}_fkey foreign key (${column}) references ${parent} (id) on delete cascade`);
      await sql`alter table conversions drop constraint conversions_enrolment_fkey, drop constraint conversions_event_fkey,
        ${references('conversions', 'team_id', 'teams')}, ${references('conversions', 'participant_id', 'participants')},
        ${references('conversions', 'experiment_id', 'experiments')}, ${references('conversions', 'event_id', 'events')}`.execute(db);
      await sql`alter table enrolments drop constraint enrolments_variant_fkey,
        ${references('enrolments', 'team_id', 'teams')}, ${references('enrolments', 'experiment_id', 'experiments')},
        ${references('enrolments', 'variant_id', 'variants')}`.execute(db);
      await sql`alter table variants drop constraint variants_team_experiment_id`.execute(db);
      await sql`alter table events drop constraint events_team_id_id`.execute(db);
    },
  };
}
