/** Timestamps leave the store as RFC 3339 strings, whichever engine produced them. */
export function iso(value: Date | string): string {
  return value instanceof Date ? value.toISOString() : value;
}

export function isoOrNull(value: Date | string | null): string | null {
  return value === null ? null : iso(value);
}

export function now(): string {
  return new Date().toISOString();
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
