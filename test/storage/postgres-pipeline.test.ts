import { CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { Storage } from '../../server/storage/database';
import { ASSUMPTION_CHANGED } from '../../server/storage/sql-states';
import { inOneRoundTrip } from '../../server/storage/postgres-pipeline';
import { preparingStatements } from '../../server/storage/postgres-statements';
import type { Database } from '../../server/storage/schema';
import { engines } from '../support/engines';
import { poolOfOne } from '../support/pools';
import { freshStorage, openStorageAt } from '../support/storage';

/** Statements sent together (storage/postgres-pipeline.ts): one message, values as literals, statements prepared once per connection. */
describe.runIf(engines.includes('postgres'))('pipelines on postgres', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function storage(poolSize = 10): Promise<Storage> {
    const { storageEnv, cleanup } = await freshStorage('postgres');
    const opened = await openStorageAt(storageEnv, { poolSize });
    cleanups.push(cleanup, () => opened.close());
    return opened;
  }

  const backend = (db: Storage['db']) => sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db).then(({ rows }) => rows[0]!.pid);

  it('when values need quoting, then each statement answers exactly what the same statement sent alone answers', async () => {
    // Arrange
    const { db } = await storage();
    const awkward = ["it's", 'back\\slash', "both \\' and '", '$1 ; -- not a comment', 'naïve 😀', '', 'E\'x\'', '{"a":[1,"}"]}'];
    const queries = [
      sql`select ${awkward}::text[] as texts, ${awkward[1]}::text as one, ${null}::text as nothing`.compile(db),
      sql`select ${[1, 2, 9_007_199_254_740_991]}::bigint[] as ids, ${'12.345678'}::numeric::text as value, ${'2026-11-25T01:02:03.456Z'}::timestamptz as at`.compile(db),
      // Arrays with nulls, numbers with decimals and signs, and elements of another kind (dates, nested arrays).
      sql`select ${['a', null, 'b"c\\d', 'NULL']}::text[] as texts, ${[1.5, -2, 0]}::numeric[]::text[] as values,
        ${[new Date('2026-11-25T01:02:03.456Z'), null]}::timestamptz[] as ats, ${[[1, 2], [3, 4]]}::int[] as grid`.compile(db),
    ];
    const alone = await Promise.all(queries.map((query) => db.executeQuery(query).then((result) => result.rows)));
    // Act
    const answers = await db.connection().execute((connection) => inOneRoundTrip(connection, queries));
    // Assert
    expect(answers.map((answer) => answer.rows)).toEqual(alone);
    expect(answers[0]!.rows).toEqual([{ texts: awkward, one: 'back\\slash', nothing: null }]);
    expect(answers[2]!.rows).toEqual([{ texts: ['a', null, 'b"c\\d', 'NULL'], values: ['1.5', '-2', '0'], ats: [new Date('2026-11-25T01:02:03.456Z'), null], grid: [[1, 2], [3, 4]] }]);
  });

  it('when statements are sent together without a transaction of their own, then they arrive as one message and run as one transaction, rolled back whole when one fails', async () => {
    // Arrange
    const { db } = await storage();
    await sql`create table marks (n int)`.execute(db);
    // statement_timestamp(): when the message holding the statement was received; clock_timestamp(): now.
    const stamp = CompiledQuery.raw('select transaction_timestamp()::text as at, statement_timestamp()::text as received, clock_timestamp()::text as ran');
    // Act
    const together = await db.connection().execute((connection) => inOneRoundTrip(connection, [stamp, CompiledQuery.raw('select pg_sleep(0.01)'), stamp]));
    const failed = await db
      .connection()
      .execute((connection) => inOneRoundTrip(connection, [sql`insert into marks values (${1})`.compile(db), sql`select ${1}::int / 0`.compile(db), sql`insert into marks values (${2})`.compile(db)]))
      .catch((error: unknown) => error as { code?: string });
    // Assert
    const [first, , last] = together.map((answer) => answer.rows[0] as { at: string; received: string; ran: string });
    expect(last!.ran > first!.ran).toBe(true);
    expect(last!.received).toBe(first!.received);
    expect(last!.at).toBe(first!.at);
    expect(failed).toMatchObject({ code: '22012' });
    expect((await sql<{ count: number }>`select count(*)::int as count from marks`.execute(db)).rows[0]!.count).toBe(0);
  });

  it('when a pipeline runs twice on a connection, then its statements are prepared once and the connection is kept', async () => {
    // Arrange
    const { db } = await storage(1);
    const queries = (n: number) => [sql`select ${n}::int + 1 as next`.compile(db), sql`select ${n}::int * 2 as twice`.compile(db)];
    const before = await backend(db);
    // Act
    const answers = [];
    for (const n of [1, 5]) answers.push(await db.connection().execute((connection) => inOneRoundTrip(connection, queries(n))));
    // Assert
    expect(answers.map((run) => run.map((answer) => answer.rows[0]))).toEqual([
      [{ next: 2 }, { twice: 2 }],
      [{ next: 6 }, { twice: 10 }],
    ]);
    const prepared = await sql<{ count: number }>`select count(*)::int as count from pg_prepared_statements where name like ${'pipelined_%'}`.execute(db);
    expect(prepared.rows[0]!.count).toBe(2);
    expect(await backend(db)).toBe(before);
  });

  it('when no statement name is left (past the cap), then each statement is prepared, run and dropped in the same message', async () => {
    // Arrange
    const { storageEnv, cleanup } = await freshStorage('postgres');
    const pool = poolOfOne(storageEnv.DATABASE_URL);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingStatements(pool, 0) }) });
    cleanups.push(cleanup, () => db.destroy());
    const queries = (n: number) => [sql`select ${n}::int + 1 as next`.compile(db), sql`select ${"it's"}::text as text`.compile(db)];
    // Act
    const answers = [];
    for (const n of [1, 2]) answers.push(await db.connection().execute((connection) => inOneRoundTrip(connection, queries(n))));
    const prepared = await sql<{ count: number }>`select count(*)::int as count from pg_prepared_statements`.execute(db);
    // Assert
    expect(answers.map((run) => run.map((answer) => answer.rows[0]))).toEqual([
      [{ next: 2 }, { text: "it's" }],
      [{ next: 3 }, { text: "it's" }],
    ]);
    expect(prepared.rows[0]!.count).toBe(0);
  });

  it('when a pipeline that prepares statements fails, then its connection is closed rather than reused, and the next one prepares anew', async () => {
    // Arrange
    const { db } = await storage(1);
    const before = await backend(db);
    const queries = (divisor: number) => [sql`select ${1}::int as one`.compile(db), sql`select ${6}::int / ${divisor}::int as quotient`.compile(db)];
    // Act
    const failed = await db
      .connection()
      .execute((connection) => inOneRoundTrip(connection, queries(0)))
      .catch((error: unknown) => error as { code?: string });
    const after = await backend(db);
    const answers = await db.connection().execute((connection) => inOneRoundTrip(connection, queries(3)));
    // Assert
    expect(failed).toMatchObject({ code: '22012' });
    expect(after).not.toBe(before);
    expect(answers.map((answer) => answer.rows[0])).toEqual([{ one: 1 }, { quotient: 2 }]);
  });

  it("when a flush's check of what it assumed fails after the message's PREPAREs, then the connection is kept with them, still in its transaction at the savepoint and holding its lock", async () => {
    // Arrange
    const { storageEnv, cleanup } = await freshStorage('postgres');
    const opened = await openStorageAt(storageEnv, { poolSize: 1 });
    const { db } = opened;
    const other = new pg.Client({ connectionString: storageEnv.DATABASE_URL });
    await other.connect();
    cleanups.push(cleanup, () => opened.close(), () => other.end());
    const before = await backend(db);
    const lock = CompiledQuery.raw('select pg_advisory_xact_lock($1, $2)', [7, 7]);
    const check = (holds: boolean) => sql`select ingest_flush_assumes(${holds}::boolean) as held`.compile(db);
    const message = (holds: boolean) => [CompiledQuery.raw('begin'), lock, CompiledQuery.raw('savepoint assumed'), check(holds), sql`select ${2}::int as two`.compile(db), CompiledQuery.raw('commit')];
    // Act
    const { failed, lockedMeanwhile, resumed } = await db.connection().execute(async (connection) => {
      const failed = await inOneRoundTrip(connection, message(false)).catch((error: unknown) => error as { code?: string });
      const lockedMeanwhile = await other.query<{ got: boolean }>('select pg_try_advisory_xact_lock(7, 7) as got');
      const resumed = await inOneRoundTrip(connection, [CompiledQuery.raw('rollback to savepoint assumed'), sql`select ${3}::int as three`.compile(db), CompiledQuery.raw('commit')]);
      return { failed, lockedMeanwhile: !lockedMeanwhile.rows[0]!.got, resumed };
    });
    const answers = await db.connection().execute((connection) => inOneRoundTrip(connection, message(true)));
    // Assert
    expect(failed).toMatchObject({ code: ASSUMPTION_CHANGED });
    expect(lockedMeanwhile).toBe(true);
    expect(resumed[1]!.rows).toEqual([{ three: 3 }]);
    expect(await backend(db)).toBe(before);
    expect(answers[3]!.rows).toEqual([{ held: true }]);
    expect(answers[4]!.rows).toEqual([{ two: 2 }]);
  });
});
