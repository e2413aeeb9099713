import type BetterSqlite3 from 'better-sqlite3';

/**
 * The sums of a metric (Σy, Σy² in micro-units, and a participant's total value) are integers that
 * outgrow 64 bits (Σy² of values up to 10⁹ with six decimals): PostgreSQL keeps them as `numeric`,
 * SQLite as decimal text, and both engines add them with `exact_add(a, b)` — PostgreSQL's a SQL
 * function over numeric (migration 007), SQLite's this one over BigInt — so no sum ever rounds.
 */
export function registerExactAdd(database: BetterSqlite3.Database): void {
  database.function('exact_add', { deterministic: true }, (a: unknown, b: unknown) => (exact(a) + exact(b)).toString());
}

/** A stored exact sum (decimal text, numeric string, or a small number) as a BigInt; null is 0. */
export function exact(value: unknown): bigint {
  if (value === null || value === undefined) return 0n;
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') return BigInt(value);
  return BigInt(String(value));
}
