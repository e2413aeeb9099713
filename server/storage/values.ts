/** Timestamps leave the store as RFC 3339 strings, whichever engine produced them. */
export function iso(value: Date | string): string {
  return value instanceof Date ? value.toISOString() : value;
}

export function isoOrNull(value: Date | string | null): string | null {
  return value === null ? null : iso(value);
}

let clock = (): Date => new Date();

/** What stored timestamps are taken from: the real clock unless a simulation set another. */
export function now(): string {
  return clock().toISOString();
}

/**
 * Puts the process on another clock — for `npm run demo`, which plays two weeks of an experiment
 * in minutes, and for tests of what happens over days. Answers how to put the real one back.
 */
export function setClock(next: () => Date): () => void {
  clock = next;
  return () => {
    clock = () => new Date();
  };
}

/** The UTC day of an RFC 3339 UTC timestamp, e.g. `2026-11-24`: the unit of the daily roll-up. */
export function utcDay(at: string): string {
  return at.slice(0, 10);
}

/** A unique constraint refused the write (SQLite or PostgreSQL). */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Runs a write; a duplicate key becomes the given error instead. */
export async function onDuplicate<T>(write: Promise<T>, toError: () => Error): Promise<T> {
  try {
    return await write;
  } catch (error) {
    throw isUniqueViolation(error) ? toError() : error;
  }
}
