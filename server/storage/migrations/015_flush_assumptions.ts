import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

/**
 * PostgreSQL: `ingest_flush_assumes(holds)` refuses the statement that calls it unless `holds`,
 * with SQLSTATE IF001. An ingest flush that decided on what its process last saw, instead of
 * reading it first, checks it this way under its teams' locks before it writes, in the same
 * message (ingest/flush-postgres.ts). SQLite's flush reads in the process: nothing to add.
 */
export function flushAssumptions(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      await sql
        .raw(
          `create function ingest_flush_assumes(holds boolean) returns boolean language plpgsql as $$
          begin
            if holds is not true then
              raise exception 'what this ingest flush decided on has changed' using errcode = 'IF001';
            end if;
            return true;
          end $$`,
        )
        .execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      await sql`drop function ingest_flush_assumes(boolean)`.execute(db);
    },
  };
}
