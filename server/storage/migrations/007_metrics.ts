import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

/**
 * Count and value metrics: events of type `value`, an event's `cap` (per-participant
 * winsorisation) and `direction` (which way is better); each conversion row's total `value`;
 * and per variant × event (and per day in the roll-up) Σy and Σy² of the participants' capped
 * totals, in micro-units, exact (see storage/exact-sums.ts). What was counted before is filled
 * in: y is each stored participant's count (no event had a cap), put on the day of the upgrade in
 * the roll-up, so that the history adds up to the counters.
 */
export function metrics(engine: Engine): Migration {
  const big = engine === 'postgres' ? 'numeric' : 'text';
  return {
    async up(db: Kysely<unknown>) {
      if (engine === 'postgres') {
        await sql`create or replace function exact_add(numeric, numeric) returns numeric language sql immutable parallel safe as 'select $1 + $2'`.execute(db);
        await sql`alter table events drop constraint events_type_check, add constraint events_type_check check (type in ('unique', 'count', 'value'))`.execute(db);
      } else {
        await widenSqliteEventTypes(db);
      }
      await db.schema.alterTable('events').addColumn('cap', 'double precision', (col) => col.check(sql`cap > 0`)).execute();
      await db.schema
        .alterTable('events')
        .addColumn('direction', 'text', (col) => col.notNull().defaultTo('increase').check(sql`direction in ('increase', 'decrease')`))
        .execute();
      await db.schema.alterTable('conversions').addColumn('value', big, (col) => col.notNull().defaultTo('0')).execute();
      for (const table of ['variant_event_counts', 'daily_variant_event_counts']) {
        await db.schema.alterTable(table).addColumn('sum_y', big, (col) => col.notNull().defaultTo('0')).execute();
        await db.schema.alterTable(table).addColumn('sum_y2', big, (col) => col.notNull().defaultTo('0')).execute();
      }
      await fillSums(db);
    },
    async down(db: Kysely<unknown>) {
      for (const table of ['variant_event_counts', 'daily_variant_event_counts']) {
        await db.schema.alterTable(table).dropColumn('sum_y2').execute();
        await db.schema.alterTable(table).dropColumn('sum_y').execute();
      }
      await db.schema.alterTable('conversions').dropColumn('value').execute();
      await db.schema.alterTable('events').dropColumn('direction').execute();
      await db.schema.alterTable('events').dropColumn('cap').execute();
    },
  };
}

/**
 * SQLite cannot change a CHECK constraint in place, nor rebuild the table inside the migration's
 * transaction without its foreign keys cascading: a new column with the wider check takes the
 * values, the old one is dropped (its column check with it) and the new one takes its name.
 */
async function widenSqliteEventTypes(db: Kysely<unknown>): Promise<void> {
  await sql`alter table events add column type_widened text not null default 'unique' check (type_widened in ('unique', 'count', 'value'))`.execute(db);
  await sql`update events set type_widened = type`.execute(db);
  await sql`alter table events drop column type`.execute(db);
  await sql`alter table events rename column type_widened to type`.execute(db);
}

/** Σy and Σy² of the stored conversions (y = count: no event had a cap), on the counters and today's roll-up. */
async function fillSums(db: Kysely<unknown>): Promise<void> {
  const { rows } = await sql<{ team_id: number; variant_id: number; event_id: number; count: number }>`
    select c.team_id, e.variant_id, c.event_id, c.count from conversions c
    join enrolments e on e.team_id = c.team_id and e.participant_id = c.participant_id and e.experiment_id = c.experiment_id`.execute(db);
  const sums = new Map<string, { team: number; variant: number; event: number; y: bigint; y2: bigint }>();
  for (const row of rows) {
    const key = `${row.variant_id}:${row.event_id}`;
    const sum = sums.get(key) ?? { team: Number(row.team_id), variant: Number(row.variant_id), event: Number(row.event_id), y: 0n, y2: 0n };
    // y is the count in micro-units: no event had a cap yet (written out, so that the migration never changes with the domain code)
    const y = BigInt(row.count) * 1_000_000n;
    sum.y += y;
    sum.y2 += y * y;
    sums.set(key, sum);
  }
  const today = new Date().toISOString().slice(0, 10);
  for (const s of sums.values()) {
    await sql`update variant_event_counts set sum_y = ${s.y.toString()}, sum_y2 = ${s.y2.toString()}
      where team_id = ${s.team} and variant_id = ${s.variant} and event_id = ${s.event}`.execute(db);
    await sql`insert into daily_variant_event_counts (team_id, variant_id, event_id, day, conversions, unique_conversions, sum_y, sum_y2)
      values (${s.team}, ${s.variant}, ${s.event}, ${today}, 0, 0, ${s.y.toString()}, ${s.y2.toString()})
      on conflict (team_id, variant_id, event_id, day) do update
        set sum_y = exact_add(daily_variant_event_counts.sum_y, excluded.sum_y), sum_y2 = exact_add(daily_variant_event_counts.sum_y2, excluded.sum_y2)`.execute(db);
  }
}
