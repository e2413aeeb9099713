import type { Db } from '../storage/database';
import { teamWrite } from '../storage/team-lock';

/**
 * Runs a change to what a team's config holds (its experiments, their variants and goal events,
 * its feature flags) or to the events ingest looks up by key, in a transaction that also raises
 * the team's `config_version`: a config read or an ingest that sees the new version sees the
 * change. It first takes the team's lock (PostgreSQL), as ingest batches and participant
 * deletions do, then the team's row: every writer of a team takes its locks in one order. A
 * deadlock or serialization failure all the same is retried.
 */
export function changingConfig<T>(db: Db, teamId: number, change: (trx: Db) => Promise<T>): Promise<T> {
  return teamWrite(db, teamId, async (trx) => {
    await trx
      .updateTable('teams')
      .set((eb) => ({ config_version: eb('config_version', '+', 1) }))
      .where('id', '=', teamId)
      .execute();
    return change(trx);
  });
}
