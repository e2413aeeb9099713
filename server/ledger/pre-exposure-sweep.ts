import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Storage } from '../storage/database';
import { removeInBatches } from '../storage/sweep';
import { now, utcDay } from '../storage/values';

/** Rows removed by one statement at most: a sweep never holds the write lock (SQLite) or many row locks (PostgreSQL) for long. */
const SWEEP_BATCH = 5000;
const SWEEP_EVERY_MS = 3_600_000;

/**
 * Removes the pre-exposure activity (CUPED's history) no enrolment from `today` on can read: a
 * team's days before `today` minus the longest window of its experiments that may still enrol
 * (draft or running; a team without one keeps nothing before today), in statements of
 * SWEEP_BATCH rows. Answers how many rows went. On PostgreSQL the rows a flush holds are skipped
 * (SKIP LOCKED): the sweep never waits for a flush, and a skipped row goes at the next sweep.
 */
export async function sweepPreExposureActivity(storage: Storage, today: string): Promise<number> {
  return removeInBatches(SWEEP_BATCH, () =>
    storage.engine === 'postgres'
      ? sql`delete from pre_exposure_activity where (team_id, participant_id, event_id, day) in (
            select a.team_id, a.participant_id, a.event_id, a.day from pre_exposure_activity a
            where a.day < to_char(${today}::date - coalesce((select max(x.pre_exposure_days) from experiments x where x.team_id = a.team_id and x.status <> 'stopped'), 0), 'YYYY-MM-DD')
            limit ${SWEEP_BATCH} for update skip locked)`.execute(storage.db)
      : sql`delete from pre_exposure_activity where rowid in (
            select a.rowid from pre_exposure_activity a
            where a.day < date(${today}, '-' || coalesce((select max(x.pre_exposure_days) from experiments x where x.team_id = a.team_id and x.status <> 'stopped'), 0) || ' days')
            limit ${SWEEP_BATCH})`.execute(storage.db),
  );
}

/** Every server process sweeps the pre-exposure activity hourly, from start-up on. Answers how to stop it. */
export function sweepPreExposureActivityEvery(storage: Storage, logger: Logger): () => void {
  let sweeping = false;
  const sweep = () => {
    if (sweeping) return;
    sweeping = true;
    sweepPreExposureActivity(storage, utcDay(now()))
      .then((removed) => {
        if (removed > 0) logger.debug({ removed }, 'pre-exposure activity past every window removed');
      })
      .catch((error: unknown) => logger.warn({ err: error }, 'sweeping the pre-exposure activity failed; the next sweep tries again'))
      .finally(() => {
        sweeping = false;
      });
  };
  sweep();
  const timer = setInterval(sweep, SWEEP_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
