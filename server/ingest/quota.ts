import type { Db } from '../storage/database';
import { prepared, type Bind } from '../storage/prepared';

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
  const counted = await countIngest(db, { teamId, month, limit: limit ?? 0 }, limit === null ? 'unlimited' : 'limited');
  return counted.length > 0;
}

const countIngest = prepared((db, arg: Bind<{ teamId: number; month: string; limit: number }>, quota: 'limited' | 'unlimited') =>
  db
    .insertInto('ingest_usage')
    .values({ team_id: arg((a) => a.teamId), month: arg((a) => a.month), count: 1 })
    .onConflict((oc) => {
      const update = oc.columns(['team_id', 'month']).doUpdateSet((eb) => ({ count: eb('ingest_usage.count', '+', 1) }));
      return quota === 'unlimited' ? update : update.where('ingest_usage.count', '<', arg((a) => a.limit));
    })
    .returning('count'),
);
