import type { ColumnType } from 'kysely';

// Timestamps are written as RFC 3339 strings on both engines; PostgreSQL reads them back as Date.
export type Timestamp = ColumnType<Date | string, string, string>;
// An exact sum (storage/exact-sums.ts): decimal text on SQLite, numeric (read as a string) on PostgreSQL.
export type ExactSum = ColumnType<string | number, string | undefined, string>;
// SQLite stores booleans as 0/1 (bound so by server/storage/sqlite-statements.ts); PostgreSQL as boolean.
export type Bool = ColumnType<boolean | number, boolean, boolean>;
