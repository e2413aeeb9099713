import { sql } from 'kysely';
import type { Db } from '../storage/database';
import { exact } from '../storage/exact-sums';

/** The variants' counts on the chosen events only. */
export async function countsOnEvents(db: Db, teamId: number, variantIds: number[], eventIds: number[]) {
  if (variantIds.length === 0 || eventIds.length === 0) return [];
  return db
    .selectFrom('variant_event_counts')
    .select(['variant_id', 'event_id', 'conversions', 'unique_conversions', 'sum_y', 'sum_y2', 'sum_x', 'sum_x2', 'sum_xy'])
    .where('team_id', '=', teamId)
    .where('variant_id', 'in', variantIds)
    .where('event_id', 'in', eventIds)
    .execute();
}

/** The last day the variants' participants or their conversions on the event changed; null before anything was counted. */
export async function lastCountedDay(db: Db, teamId: number, variantIds: number[], eventId: number): Promise<string | null> {
  if (variantIds.length === 0) return null;
  const [participants, conversions] = await Promise.all([
    db.selectFrom('daily_variant_counts').select((eb) => eb.fn.max('day').as('day')).where('team_id', '=', teamId).where('variant_id', 'in', variantIds).executeTakeFirst(),
    db
      .selectFrom('daily_variant_event_counts')
      .select((eb) => eb.fn.max('day').as('day'))
      .where('team_id', '=', teamId)
      .where('variant_id', 'in', variantIds)
      .where('event_id', '=', eventId)
      .executeTakeFirst(),
  ]);
  const days = [participants?.day, conversions?.day].filter((day): day is string => typeof day === 'string');
  return days.length === 0 ? null : days.sort().at(-1)!;
}

// The second column, `day`: by position, since PostgreSQL does not take the same expression with its own parameters for the one selected.
const BY_DAY = sql`2`;

/**
 * The daily roll-up of the variants' participants and, for one event, their conversions and the
 * exact sums of its metric (Σy in micro-units, Σy² in micro-units squared) and of CUPED's
 * covariate (Σx, Σx², Σxy), from
 * `from` on; what changed before `from` summed into `from` itself, so that the days' cumulative
 * totals are the same as from the whole roll-up, in a number of rows that does not grow with the
 * days before the window.
 */
export async function dailyChangesOf(db: Db, teamId: number, variantIds: number[], eventId: number, from: string) {
  if (variantIds.length === 0) return { participants: [], conversions: [] };
  const day = sql<string>`case when day < ${from} then ${from} else day end`;
  const participants = await db
    .selectFrom('daily_variant_counts')
    .select(['variant_id', day.as('day'), (eb) => eb.fn.sum<number>('participants').as('participants')])
    .where('team_id', '=', teamId)
    .where('variant_id', 'in', variantIds)
    .groupBy(['variant_id', BY_DAY])
    .execute();
  const conversions = await db
    .selectFrom('daily_variant_event_counts')
    .select([
      'variant_id',
      day.as('day'),
      (eb) => eb.fn.sum<number>('unique_conversions').as('unique_conversions'),
      // The exact sums (micro-units), listed as text and added as BigInts: no aggregate of either engine adds SQLite's text exactly.
      sql<string>`string_agg(cast(sum_y as text), ',')`.as('sum_y'),
      sql<string>`string_agg(cast(sum_y2 as text), ',')`.as('sum_y2'),
      sql<string>`string_agg(cast(sum_x as text), ',')`.as('sum_x'),
      sql<string>`string_agg(cast(sum_x2 as text), ',')`.as('sum_x2'),
      sql<string>`string_agg(cast(sum_xy as text), ',')`.as('sum_xy'),
    ])
    .where('team_id', '=', teamId)
    .where('variant_id', 'in', variantIds)
    .where('event_id', '=', eventId)
    .groupBy(['variant_id', BY_DAY])
    .execute();
  return {
    participants: participants.map((row) => ({ ...row, participants: Number(row.participants) })),
    conversions: conversions.map((row) => ({
      variant_id: row.variant_id,
      day: row.day,
      unique_conversions: Number(row.unique_conversions),
      micros: { sum: addListed(row.sum_y), sumOfSquares: addListed(row.sum_y2) },
      covariate: { sumX: addListed(row.sum_x), sumX2: addListed(row.sum_x2), sumXY: addListed(row.sum_xy) },
    })),
  };
}

/** The sum of a comma-separated list of exact sums. */
const addListed = (listed: string): bigint => listed.split(',').reduce((total, value) => total + exact(value), 0n);
