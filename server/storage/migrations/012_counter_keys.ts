import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

const COUNTERS = ['variant_event_counts', 'daily_variant_counts', 'daily_variant_event_counts'] as const;
const WITH_EVENT = new Set<string>(['variant_event_counts', 'daily_variant_event_counts']);

/**
 * PostgreSQL: the counters and their daily roll-up name their variant and event with their team,
 * as enrolments and conversions do since 004. Each row had a foreign key per column — team_id to
 * teams, variant_id to variants, event_id to events — and now has two composite ones:
 * (team_id, variant_id) to the variant's (team_id, id) and (team_id, event_id) to the event's.
 * - They are stricter: the variant and the event must be the row's team's, which nothing checked.
 * - team_id's own key is implied and goes: the variant's team exists (variants.team_id is a key
 *   to teams), and deleting the team deletes its variants and events and so these rows.
 * - A new row is checked twice instead of three times (once instead of twice in
 *   daily_variant_counts). Rows are new once a day per variant and event; the ingest's updates of
 *   existing rows change no key, and PostgreSQL checks none then.
 * - The indexes on (variant_id, day) of the two roll-ups go: only variant_id's own foreign key
 *   read them (to delete a variant's rows); every query, and the new key's delete, names the team
 *   and the variant, which the primary keys (team_id, variant_id, …) serve. The event_id indexes
 *   stay: deleting an event finds its rows by them.
 * SQLite checks its foreign keys in the process and would have to rebuild these tables: they keep theirs.
 */
export function counterKeys(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      await sql`alter table variants add constraint variants_team_id_id unique (team_id, id)`.execute(db);
      for (const table of COUNTERS) {
        const event = WITH_EVENT.has(table);
        await sql`alter table ${sql.table(table)}
          drop constraint ${sql.raw(`${table}_team_id_fkey`)},
          drop constraint ${sql.raw(`${table}_variant_id_fkey`)},
          ${event ? sql`drop constraint ${sql.raw(`${table}_event_id_fkey`)},` : sql``}
          add constraint ${sql.raw(`${table}_variant_fkey`)} foreign key (team_id, variant_id) references variants (team_id, id) on delete cascade
          ${event ? sql`, add constraint ${sql.raw(`${table}_event_fkey`)} foreign key (team_id, event_id) references events (team_id, id) on delete cascade` : sql``}`.execute(db);
      }
      await sql`drop index daily_variant_counts_variant`.execute(db);
      await sql`drop index daily_variant_event_counts_variant`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      await sql`create index daily_variant_counts_variant on daily_variant_counts (variant_id, day)`.execute(db);
      await sql`create index daily_variant_event_counts_variant on daily_variant_event_counts (variant_id, day)`.execute(db);
      const references = (table: string, column: string, parent: string) =>
        sql.raw(`add constraint ${table}_${column}_fkey foreign key (${column}) references ${parent} (id) on delete cascade`);
      for (const table of COUNTERS) {
        const event = WITH_EVENT.has(table);
        await sql`alter table ${sql.table(table)}
          drop constraint ${sql.raw(`${table}_variant_fkey`)},
          ${event ? sql`drop constraint ${sql.raw(`${table}_event_fkey`)},` : sql``}
          ${references(table, 'team_id', 'teams')}, ${references(table, 'variant_id', 'variants')}
          ${event ? sql`, ${references(table, 'event_id', 'events')}` : sql``}`.execute(db);
      }
      await sql`alter table variants drop constraint variants_team_id_id`.execute(db);
    },
  };
}
