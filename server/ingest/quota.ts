import type { Db } from '../storage/database';

/** The calendar month (UTC) a quota counts in, e.g. `2026-11`. */
export function quotaMonth(at: string): string {
  return at.slice(0, 7);
}

/**
 * Counts one accepted ingest, unless the team's limit is reached (false). A conditional
 * increment of one row: atomic under concurrency, so several processes share the limit.
 */
export async function consumeIngest(db: Db, teamId: number, limit: number | null, month: string): Promise<boolean> {
  if (limit !== null && limit < 1) return false;
  const counted = await db
    .insertInto('ingest_usage')
    .values({ team_id: teamId, month, count: 1 })
    .onConflict((oc) => {
      const update = oc.columns(['team_id', 'month']).doUpdateSet((eb) => ({ count: eb('ingest_usage.count', '+', 1) }));
      return limit === null ? update : update.where('ingest_usage.count', '<', limit);
    })
    .returning('count')
    .executeTakeFirst();
  return counted !== undefined;
}
