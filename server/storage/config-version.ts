import type { Db } from './database';
import { teamWrite } from './team-lock';
import { signalsOf } from './team-signals';

/**
 * Runs a change to what a team's config holds (its experiments, their variants and goal events,
 * its feature flags) or to the events ingest looks up by key, in a transaction that also raises
 * the team's `config_version`: a config read or an ingest that sees the new version sees the
 * change. It first takes the team's lock (PostgreSQL), as ingest batches and participant
 * deletions do, then the team's row: every writer of a team takes its locks in one order. A
 * deadlock or serialization failure all the same is retried. Once committed, the change is
 * announced to the config streams (server/config/stream.ts) of every process that can see it.
 */
export async function changingConfig<T>(db: Db, teamId: number, change: (trx: Db) => Promise<T>): Promise<T> {
  const signals = signalsOf(db);
  const result = await teamWrite(db, teamId, async (trx) => {
    await trx
      .updateTable('teams')
      .set((eb) => ({ config_version: eb('config_version', '+', 1) }))
      .where('id', '=', teamId)
      .execute();
    await signals?.announceWithin(trx, teamId);
    return change(trx);
  });
  signals?.announceCommitted(teamId);
  return result;
}
