import type { Db } from './database';

/**
 * Runs reads that must agree with each other — counters read by separate queries — against one
 * snapshot of the data: a read-only REPEATABLE READ transaction on PostgreSQL (a writer committing
 * between two of the reads is not seen by the second), a transaction on SQLite (which holds the
 * writers off until it ends: it is short).
 */
export function inSnapshot<T>(db: Db, reads: (snapshot: Db) => Promise<T>): Promise<T> {
  return db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(reads);
}
