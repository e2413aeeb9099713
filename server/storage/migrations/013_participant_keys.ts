import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

const HISTORIES = ['enrolments', 'exclusions'] as const;

/**
 * PostgreSQL: enrolments and exclusions name their participant with their team, as conversions
 * name their enrolment since 004: (team_id, participant_id) to the participant's (team_id, id),
 * in place of participant_id alone to participants (id).
 * - Deleting a participant deletes its enrolments and exclusions by that key, which their unique
 *   keys (team_id, participant_id, experiment_id) serve. By participant_id alone no index served
 *   it, so every erasure read the whole of both tables, under the team's lock.
 * - It is stricter: the participant must be the row's team's, which nothing checked.
 * - participants' unique (team_id, id) replaces 008's index on the same columns, which pages of a
 *   team's participants read the same way.
 * SQLite would have to rebuild both tables to change a key: they keep theirs.
 */
export function participantKeys(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      await sql`alter table participants add constraint participants_team_id_id unique (team_id, id)`.execute(db);
      await sql`drop index participants_team_id`.execute(db);
      for (const table of HISTORIES) {
        await sql`alter table ${sql.table(table)}
          drop constraint ${sql.raw(`${table}_participant_id_fkey`)},
          add constraint ${sql.raw(`${table}_participant_fkey`)} foreign key (team_id, participant_id) references participants (team_id, id) on delete cascade`.execute(db);
      }
    },
    async down(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      for (const table of HISTORIES) {
        await sql`alter table ${sql.table(table)}
          drop constraint ${sql.raw(`${table}_participant_fkey`)},
          add constraint ${sql.raw(`${table}_participant_id_fkey`)} foreign key (participant_id) references participants (id) on delete cascade`.execute(db);
      }
      await sql`create index participants_team_id on participants (team_id, id)`.execute(db);
      await sql`alter table participants drop constraint participants_team_id_id`.execute(db);
    },
  };
}
