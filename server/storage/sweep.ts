/**
 * Runs `remove` — a delete of at most `batch` rows — until it removes fewer: a sweep never holds
 * the write lock (SQLite) or many row locks (PostgreSQL) for long. Answers how many rows went.
 */
export async function removeInBatches(batch: number, remove: () => Promise<{ numAffectedRows?: bigint }>): Promise<number> {
  let removed = 0;
  for (;;) {
    const count = Number((await remove()).numAffectedRows ?? 0);
    removed += count;
    if (count < batch) return removed;
  }
}
