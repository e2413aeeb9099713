/**
 * Whether an error means "storage does not answer right now" rather than "this request or our
 * code is wrong": the database went away (restart, failover, network, terminated connections,
 * pool exhausted past its connection timeout) or SQLite stayed locked or failed to read or write.
 * Such failures are answered 503 with `Retry-After` (the health check: 500); nothing was done,
 * since every write is one transaction. Every other error stays a 500.
 */
export function isStorageUnavailable(error: unknown): boolean {
  return matches(error, 0);
}

/** Node's socket errors on the way to PostgreSQL. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
]);

/**
 * PostgreSQL SQLSTATEs: class 08 (connection exception: 08000, 08001, 08003, 08004, 08006, …),
 * 57P01 admin shutdown (pg_terminate_backend, a fast or smart shutdown), 57P02 crash shutdown,
 * 57P03 cannot connect now (the server is starting or in recovery), 53300 too many connections.
 */
const POSTGRES_CODES = new Set(['57P01', '57P02', '57P03', '53300']);

/** node-postgres and pg-pool say these in words only (no code). */
const POSTGRES_MESSAGES = [
  /^Connection terminated/, // "Connection terminated", "… unexpectedly", "… due to connection timeout"
  /^timeout exceeded when trying to connect$/, // pg-pool: no client within connectionTimeoutMillis
  /^Client has encountered a connection error and is not queryable$/,
  /^Client was closed and is not queryable$/,
  /^Connection timeout$/,
];

function matches(error: unknown, depth: number): boolean {
  if (depth > 5 || typeof error !== 'object' || error === null) return false;
  const { code, message, cause, errors } = error as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code) || POSTGRES_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
    // better-sqlite3: SQLITE_BUSY (and its extended codes) once busy_timeout has passed; SQLITE_IOERR_* from the disk.
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_IOERR')) return true;
  }
  if (typeof message === 'string' && POSTGRES_MESSAGES.some((pattern) => pattern.test(message))) return true;
  // Node's happy-eyeballs connect fails with an AggregateError of one error per address.
  if (Array.isArray(errors) && errors.length > 0 && errors.every((inner) => matches(inner, depth + 1))) return true;
  return cause !== undefined && matches(cause, depth + 1);
}
