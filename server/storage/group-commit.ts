import { CompiledQuery } from 'kysely';
import type { Db } from './schema';
import type { Engine } from './engine';
import { isRetryable, MAX_TRIES, teamLock } from './team-lock';

/**
 * Runs `work` as one unit of a group-committed transaction. Units given the same `lockKey` (a team
 * id: the counters they write are that team's) are serialised across processes on PostgreSQL.
 */
export type Batched = <T>(work: (trx: Db) => Promise<T>, lockKey?: number) => Promise<T>;

interface Job {
  work: (trx: Db) => Promise<unknown>;
  lockKey: number | undefined;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  tries: number;
}

const MAX_BATCH = 256;

// Compiled once: each unit of a batch runs two of these.
const SAVEPOINT = CompiledQuery.raw('savepoint unit');
const ROLLBACK_UNIT = CompiledQuery.raw('rollback to savepoint unit');
const RELEASE_UNIT = CompiledQuery.raw('release savepoint unit');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');
const BEGIN = { sqlite: CompiledQuery.raw('begin immediate'), postgres: CompiledQuery.raw('begin') };

/**
 * PostgreSQL: before any unit runs, the batch takes a transaction-scoped advisory lock for each of
 * its units' keys, in ascending order. Two processes' batches that write the same counter rows in
 * different orders would otherwise deadlock (each detection costs a second, then a retry); this
 * way the second batch waits for the first to commit before it takes any row lock. SQLite's
 * `begin immediate` already lets one writer in at a time.
 */
function batchLocks(engine: Engine, batch: Job[]): CompiledQuery[] {
  if (engine !== 'postgres') return [];
  const keys = [...new Set(batch.flatMap((job) => (job.lockKey === undefined ? [] : [job.lockKey])))].sort((a, b) => a - b);
  return keys.map(teamLock);
}

/**
 * Group commit: concurrent units of work share one transaction, each inside its own savepoint,
 * and one commit — one fsync — makes them all durable. A unit that fails is rolled back to its
 * savepoint alone and its caller gets the error; the others go on. No caller is answered before
 * the commit that holds its work has returned.
 */
export function groupCommit(db: Db, engine: Engine): Batched {
  let waiting: Job[] = [];
  let running = false;

  async function runBatch(batch: Job[]): Promise<void> {
    const outcomes: Array<{ ok: boolean; value: unknown }> = [];
    const retry: Job[] = [];
    try {
      await db.connection().execute(async (connection) => {
        await connection.executeQuery(BEGIN[engine]);
        try {
          for (const lock of batchLocks(engine, batch)) await connection.executeQuery(lock);
          for (const job of batch) {
            await connection.executeQuery(SAVEPOINT);
            try {
              outcomes.push({ ok: true, value: await job.work(connection) });
            } catch (error) {
              await connection.executeQuery(ROLLBACK_UNIT);
              // A deadlock or serialization failure: another process's transaction won; run the job again.
              if (isRetryable(error) && job.tries < MAX_TRIES) retry.push(job);
              outcomes.push({ ok: false, value: error });
            }
            await connection.executeQuery(RELEASE_UNIT);
          }
          await connection.executeQuery(COMMIT);
        } catch (error) {
          await connection.executeQuery(ROLLBACK).catch(() => {});
          throw error;
        }
      });
    } catch (error) {
      for (const job of batch) job.reject(error);
      return;
    }
    batch.forEach((job, i) => {
      if (retry.includes(job)) return;
      const outcome = outcomes[i];
      if (outcome.ok) job.resolve(outcome.value);
      else job.reject(outcome.value);
    });
    for (const job of retry) waiting.push({ ...job, tries: job.tries + 1 });
  }

  async function drain(): Promise<void> {
    running = true;
    while (waiting.length > 0) {
      const batch = waiting.slice(0, MAX_BATCH);
      waiting = waiting.slice(batch.length);
      await runBatch(batch);
    }
    running = false;
  }

  return <T>(work: (trx: Db) => Promise<T>, lockKey?: number) =>
    new Promise<T>((resolve, reject) => {
      waiting.push({ work, lockKey, resolve: resolve as (value: unknown) => void, reject, tries: 1 });
      // Let the requests that arrive in the same turn of the event loop join this batch.
      if (!running) {
        running = true;
        setImmediate(() => void drain());
      }
    });
}
