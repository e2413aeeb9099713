import { CompiledQuery, PostgresAdapter } from 'kysely';
import type { Db } from './schema';

/** First key of PostgreSQL's two-key advisory locks: the namespace of team write locks. */
const TEAM_LOCKS = 0x6261;
/** PostgreSQL deadlock and serialization failures: another transaction won; run again. */
const RETRYABLE = new Set(['40P01', '40001']);
export const MAX_TRIES = 3;

/**
 * PostgreSQL: the transaction-scoped advisory lock of a team, the first lock every writer of a
 * team's rows takes — an ingest batch (for each of its teams, in ascending order), a change of
 * the team's config, a participant's deletion — so that writers of one team take turns instead
 * of taking each other's row locks in different orders and deadlocking.
 */
export function teamLock(teamId: number): CompiledQuery {
  return CompiledQuery.raw('select pg_advisory_xact_lock($1, $2)', [TEAM_LOCKS, teamId]);
}

function isPostgres(db: Db): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

export function isRetryable(error: unknown): boolean {
  return RETRYABLE.has((error as { code?: string } | null)?.code ?? '');
}

/** Runs `transaction` again, after a random pause that grows with each try, while it fails on a deadlock or a serialization failure (at most MAX_TRIES times). */
async function retryingConflicts<T>(transaction: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await transaction();
    } catch (error) {
      if (!isRetryable(error) || tries >= MAX_TRIES) throw error;
      await new Promise((resolve) => setTimeout(resolve, (5 + Math.random() * 20) * tries));
    }
  }
}

/**
 * A write of a team's rows in a transaction that first takes the team's lock (PostgreSQL), like
 * every other writer of the team: e.g. a participant created or renamed, which an ingest flush
 * reading the team's participants must not see appear or move under it. Retried on a deadlock.
 */
export function teamWrite<T>(db: Db, teamId: number, work: (trx: Db) => Promise<T>): Promise<T> {
  const lockFirst = isPostgres(db);
  return retryingConflicts(() =>
    db.transaction().execute(async (trx) => {
      if (lockFirst) await trx.executeQuery(teamLock(teamId));
      return work(trx);
    }),
  );
}
