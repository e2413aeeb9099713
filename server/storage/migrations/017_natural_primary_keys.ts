import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

// exclusions' foreign key, dropped and made again around each change of participants' keys: it needs a unique (team_id, id) at every moment.
const EXCLUSIONS_PARTICIPANT_KEY = sql`alter table exclusions add constraint exclusions_participant_fkey
  foreign key (team_id, participant_id) references participants (team_id, id) on delete cascade`;

/**
 * PostgreSQL: participants and enrolments are keyed by what every query names them by, and lose
 * the index of their `id` alone — one index entry fewer for each new participant and each
 * enrolment, four for a new participant in three experiments (bench/results/2026-11-27-postgres-natural-keys.md).
 * - participants: the primary key is (team_id, id), the key enrolments, exclusions and
 *   conversions name them by (013), in place of the unique (team_id, id) beside a primary key of
 *   id; every query of a participant by id names its team.
 * - enrolments: the primary key is (team_id, participant_id, experiment_id), a participant's
 *   enrolment in an experiment, in place of that unique key beside a primary key of id. The id
 *   stays, drawn from its sequence, for the order of a participant's enrolments, which are read
 *   by participant; nothing looks an enrolment up by id.
 * SQLite's id is the row id, which has no index of its own: it keeps its keys.
 */
export function naturalPrimaryKeys(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      await sql`alter table exclusions drop constraint exclusions_participant_fkey`.execute(db);
      await sql`alter table participants drop constraint participants_team_id_id, drop constraint participants_pkey, add constraint participants_pkey primary key (team_id, id)`.execute(db);
      await EXCLUSIONS_PARTICIPANT_KEY.execute(db);
      await sql`alter table enrolments drop constraint enrolments_participant_experiment, drop constraint enrolments_pkey,
        add constraint enrolments_pkey primary key (team_id, participant_id, experiment_id)`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      await sql`alter table enrolments drop constraint enrolments_pkey, add constraint enrolments_pkey primary key (id),
        add constraint enrolments_participant_experiment unique (team_id, participant_id, experiment_id)`.execute(db);
      await sql`alter table exclusions drop constraint exclusions_participant_fkey`.execute(db);
      await sql`alter table participants drop constraint participants_pkey, add constraint participants_pkey primary key (id), add constraint participants_team_id_id unique (team_id, id)`.execute(
        db,
      );
      await EXCLUSIONS_PARTICIPANT_KEY.execute(db);
    },
  };
}
