import type { Db } from '../storage/database';

/** The daily roll-up of the variants' participants and, for one event, their conversions. */
export async function dailyChangesOf(db: Db, teamId: number, variantIds: number[], eventId: number) {
  if (variantIds.length === 0) return { participants: [], conversions: [] };
  const participants = await db
    .selectFrom('daily_variant_counts')
    .select(['variant_id', 'day', 'participants'])
    .where('team_id', '=', teamId)
    .where('variant_id', 'in', variantIds)
    .execute();
  const conversions = await db
    .selectFrom('daily_variant_event_counts')
    .select(['variant_id', 'day', 'unique_conversions'])
    .where('team_id', '=', teamId)
    .where('variant_id', 'in', variantIds)
    .where('event_id', '=', eventId)
    .execute();
  return { participants, conversions };
}
