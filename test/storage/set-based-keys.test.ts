import { Migrator, sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { createTeam } from '../../server/admin/service';
import { migrationsOf, type Storage } from '../../server/storage/database';
import { INGEST_KEYS } from '../../server/storage/migrations/014_set_based_keys';
import { engines } from '../support/engines';
import { startServer } from '../support/server';

/**
 * Migration 014 (PostgreSQL): the foreign keys a flush writes rows under are checked once per
 * statement. Each still refuses a row naming a parent that is not there, deletes the rows of a
 * deleted parent, refuses a change of key, and holds against a concurrent delete as PostgreSQL's
 * own keys do; migrated down, they are PostgreSQL's own again.
 */
describe.runIf(engines.includes('postgres'))('foreign keys checked per statement (migration 014) on postgres', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** A team with two events and a running experiment; 4 participants enrolled, converted on both events, each ingest with a key. */
  async function served() {
    const { storage, baseUrl, storageEnv } = await startServer({ engine: 'postgres', closeWith: cleanups });
    const made = await createTeam(storage.db, { name: 'Keys', email: `keys-${Date.now()}@example.com` });
    const api = createApiClient(baseUrl, made.token);
    const path = { team: made.team.id };
    for (const key of ['purchase', 'share']) await api.POST('/api/teams/{team}/events', { params: { path }, body: { key } });
    await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'purchase' } });
    for (const key of ['control', 'treatment']) await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'exp' } }, body: { key, control: key === 'control' } });
    await api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'exp' } } });
    const items = ['p0', 'p1', 'p2', 'p3'].flatMap((participant) =>
      ['purchase', 'share'].map((event) => ({ participant, event, idempotency_key: `${participant}-${event}` })),
    );
    const ingested = await createApiClient(baseUrl, made.ingest_key).POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items } });
    expect(ingested.data?.data.every((item) => item.status === 200)).toBe(true);
    const one = async <Row,>(query: ReturnType<typeof sql<Row>>) => (await query.execute(storage.db)).rows[0]!;
    const ids = await one<{ participant: number; experiment: number; variant: number; event: number }>(sql`
      select e.participant_id as participant, e.experiment_id as experiment, e.variant_id as variant, v.id as event
      from enrolments e, events v where e.team_id = ${made.team.id} and v.team_id = ${made.team.id} and v.key = 'share' limit 1`);
    return { storage, storageEnv, storageUrl: storageEnv.DATABASE_URL!, teamId: made.team.id, ...ids };
  }

  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (error: { code?: string; constraint?: string }) => ({ code: error.code, constraint: error.constraint }),
    );
  const countOf = async (storage: Storage, table: string) => (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(storage.db)).rows[0]!.n;

  async function connected(url: string) {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    cleanups.push(() => client.end());
    const pid = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
    return Object.assign(client, { pid });
  }

  /** True once the backend `pid` waits for a lock; false if `statement` settles first, without waiting. */
  async function waitsForLock(observer: pg.Client, pid: number, statement: Promise<unknown>): Promise<boolean> {
    let settled = false;
    void statement.then(
      () => (settled = true),
      () => (settled = true),
    );
    while (!settled) {
      const { rows } = await observer.query<{ wait_event_type: string | null }>('select wait_event_type from pg_stat_activity where pid = $1', [pid]);
      if (rows[0]?.wait_event_type === 'Lock') return true;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return false;
  }

  const insertParticipant = 'insert into participants (team_id, key, attributes, created_at, updated_at) values ($1, $2, \'{}\', now(), now()) returning id';
  const insertEnrolment = 'insert into enrolments (team_id, participant_id, experiment_id, variant_id, enrolled_at) values ($1, $2, $3, $4, now())';

  it('when one row of a statement names a parent that is not there, then the statement is refused with the key’s name and none of its rows is stored', async () => {
    // Arrange
    const { storage, teamId, participant, experiment, variant, event } = await served();
    const missing = 1_000_000;
    const fresh = (await sql<{ id: number }>`insert into participants (team_id, key, attributes, created_at, updated_at) values (${teamId}, 'fresh', '{}', now(), now()) returning id`.execute(storage.db)).rows[0]!.id;
    const statements = {
      participants_team_id_fkey: sql`insert into participants (team_id, key, attributes, created_at, updated_at) values (${teamId}, 'a', '{}', now(), now()), (${missing}, 'b', '{}', now(), now())`,
      ingest_keys_team_id_fkey: sql`insert into ingest_keys (team_id, key, outcome, created_at) values (${teamId}, 'a', '{}', now()), (${missing}, 'b', '{}', now())`,
      enrolments_participant_fkey: sql`insert into enrolments (team_id, participant_id, experiment_id, variant_id, enrolled_at)
        values (${teamId}, ${fresh}, ${experiment}, ${variant}, now()), (${teamId}, ${missing}, ${experiment}, ${variant}, now())`,
      enrolments_variant_fkey: sql`insert into enrolments (team_id, participant_id, experiment_id, variant_id, enrolled_at) values (${teamId}, ${fresh}, ${experiment}, ${missing}, now())`,
      conversions_enrolment_fkey: sql`insert into conversions (team_id, participant_id, experiment_id, event_id, count)
        values (${teamId}, ${fresh}, ${experiment}, ${event}, 1)`,
      conversions_event_fkey: sql`insert into conversions (team_id, participant_id, experiment_id, event_id, count)
        values (${teamId}, ${participant}, ${experiment}, ${missing}, 1)`,
    };
    const tables = [...new Set(INGEST_KEYS.map((key) => key.child))];
    const before = await Promise.all(tables.map((table) => countOf(storage, table)));

    // Act
    const refused: Record<string, unknown> = {};
    for (const [name, statement] of Object.entries(statements)) refused[name] = await refusal(statement.execute(storage.db));

    // Assert
    expect(Object.keys(statements).sort()).toEqual(INGEST_KEYS.map((key) => key.name).sort());
    for (const name of Object.keys(statements)) expect(refused[name], name).toEqual({ code: '23503', constraint: name });
    expect(await Promise.all(tables.map((table) => countOf(storage, table)))).toEqual(before);
  });

  it('when a parent is deleted, then every row naming it is deleted with it, and no other', async () => {
    for (const key of INGEST_KEYS) {
      // Arrange: a parent that rows name — of those, the last by key (so, of the events, the one no experiment has as its goal)
      const { storage } = await served();
      const naming = (alias: string) => sql.raw(key.columns.map((column, i) => `c.${column} = ${alias}.${key.parentColumns[i]}`).join(' and '));
      const parentKey = sql.raw(key.parentColumns.map((column) => `p.${column}`).join(', '));
      const chosen = await sql<Record<string, number>>`select ${parentKey} from ${sql.table(key.parent)} p
        where exists (select from ${sql.table(key.child)} c where ${naming('p')}) order by ${sql.raw(key.parentColumns.map((column) => `p.${column} desc`).join(', '))} limit 1`.execute(storage.db);
      const values = key.parentColumns.map((column) => chosen.rows[0]![column]);
      const asParent = sql`(select ${sql.join(values.map((value, i) => sql`${value}::bigint as ${sql.ref(key.parentColumns[i]!)}`))}) p`;
      const namingIt = async () => (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(key.child)} c, ${asParent} where ${naming('p')}`.execute(storage.db)).rows[0]!.n;
      const [rows, named] = [await countOf(storage, key.child), await namingIt()];

      // Act
      await sql`delete from ${sql.table(key.parent)} where (${sql.raw(key.parentColumns.join(', '))}) = (${sql.join(values)})`.execute(storage.db);

      // Assert
      expect(named, key.name).toBeGreaterThan(0);
      expect(await namingIt(), key.name).toBe(0);
      expect(await countOf(storage, key.child), key.name).toBe(rows - named);
    }
  });

  it('when a parent is deleted while a statement naming it is not committed, then the delete waits for it and deletes its rows too', async () => {
    // Arrange
    const { storage, storageUrl, teamId, experiment, variant } = await served();
    const [writer, deleter, observer] = [await connected(storageUrl), await connected(storageUrl), await connected(storageUrl)];
    await writer.query('begin');
    const fresh = (await writer.query<{ id: number }>(insertParticipant, [teamId, 'late'])).rows[0]!.id;
    await writer.query(insertEnrolment, [teamId, fresh, experiment, variant]);

    // Act
    const deleting = deleter.query('delete from variants where team_id = $1 and id = $2', [teamId, variant]);
    const waited = await waitsForLock(observer, deleter.pid, deleting);
    await writer.query('commit');
    await deleting;

    // Assert
    expect(waited).toBe(true);
    expect((await sql<{ n: number }>`select count(*)::int as n from enrolments where variant_id = ${variant}`.execute(storage.db)).rows[0]!.n).toBe(0);
  });

  it('when a statement names a parent whose delete is not committed, then it waits for the delete and is refused', async () => {
    // Arrange
    const { storageUrl, teamId, experiment, variant } = await served();
    const [writer, deleter, observer] = [await connected(storageUrl), await connected(storageUrl), await connected(storageUrl)];
    await deleter.query('begin');
    await deleter.query('delete from variants where team_id = $1 and id = $2', [teamId, variant]);
    await writer.query('begin');
    const fresh = (await writer.query<{ id: number }>(insertParticipant, [teamId, 'late'])).rows[0]!.id;

    // Act
    const writing = refusal(writer.query(insertEnrolment, [teamId, fresh, experiment, variant]));
    const waited = await waitsForLock(observer, writer.pid, writing);
    await deleter.query('commit');
    const refused = await writing;
    await writer.query('rollback');

    // Assert
    expect(waited).toBe(true);
    expect(refused).toEqual({ code: '23503', constraint: 'enrolments_variant_fkey' });
  });

  it('when a key column of a row or of its parent changes, then the update is refused; set to itself, it is not', async () => {
    // Arrange
    const { storage } = await served();
    const firstFiring = (table: string, column: string) =>
      INGEST_KEYS.filter((key) => (key.child === table && key.columns.includes(column)) || (key.parent === table && key.parentColumns.includes(column)))
        .map((key) => key.name)
        .sort()[0];
    const changing = (table: string, column: string, by: number) =>
      refusal(sql`update ${sql.table(table)} set ${sql.ref(column)} = ${sql.ref(column)} + ${by} where ctid = (select ctid from ${sql.table(table)} limit 1)`.execute(storage.db));

    for (const key of INGEST_KEYS) {
      for (const [table, column] of [
        [key.child, key.columns.at(-1)!],
        [key.parent, key.parentColumns.at(-1)!],
      ] as const) {
        // Act
        const changed = await changing(table, column, 1_000_000);
        const unchanged = await changing(table, column, 0);

        // Assert
        expect(changed, `${key.name}: ${table}.${column}`).toEqual({ code: '23503', constraint: firstFiring(table, column) });
        expect(unchanged, `${key.name}: ${table}.${column}`).toBeUndefined();
      }
    }
  });

  it('when a statement inserts rows, then each key is checked once for all of them, by a probe of the parent’s unique index', async () => {
    // Arrange: a connection that counts its functions' calls and reports every nested statement's plan
    const { storageUrl, teamId, experiment, variant } = await served();
    const client = await connected(storageUrl);
    const plans: string[] = [];
    client.on('notice', (notice) => plans.push(notice.message ?? ''));
    await client.query(`set track_functions = 'pl'; load 'auto_explain'; set auto_explain.log_min_duration = 0;
      set auto_explain.log_nested_statements = on; set auto_explain.log_level = notice`);
    await client.query('begin');

    // Act
    const fresh = (
      await client.query<{ id: number }>(`insert into participants (team_id, key, attributes, created_at, updated_at)
        select $1, 'n' || n, '{}', now(), now() from generate_series(1, 3) n returning id`, [teamId])
    ).rows.map((row) => row.id);
    await client.query(
      `insert into enrolments (team_id, participant_id, experiment_id, variant_id, enrolled_at) select $1, id, $2, $3, now() from unnest($4::bigint[]) id`,
      [teamId, experiment, variant, fresh],
    );
    const calls = async (name: string) => (await client.query<{ n: number }>(`select pg_stat_get_xact_function_calls('${name}_check'::regproc)::int as n`)).rows[0]!.n;
    const checked = [await calls('participants_team_id_fkey'), await calls('enrolments_participant_fkey'), await calls('enrolments_variant_fkey')];
    await client.query('rollback');

    // Assert
    expect(checked).toEqual([1, 1, 1]);
    const checks = plans.filter((plan) => /for key share/.test(plan));
    expect(checks).toHaveLength(3);
    for (const plan of checks) {
      expect(plan).toMatch(/Index Scan using \S+ on (teams|participants|variants)/);
      expect(plan).not.toMatch(/Seq Scan/);
    }
  });

  it('when a transaction inserts rows under parents it wrote itself, then it locks none of those; a parent another transaction wrote is locked (migration 016)', async () => {
    // Arrange
    const { storage, storageUrl, teamId, experiment, variant, event } = await served();
    const writer = await connected(storageUrl);
    await writer.query('begin');
    const xid = (await writer.query<{ xid: string }>('select pg_current_xact_id()::xid::text as xid')).rows[0]!.xid;
    // Act
    const own = (await writer.query<{ id: number }>(insertParticipant, [teamId, 'own'])).rows[0]!.id;
    await writer.query(insertEnrolment, [teamId, own, experiment, variant]);
    await writer.query('insert into conversions (team_id, participant_id, experiment_id, event_id, count) values ($1, $2, $3, $4, 1)', [teamId, own, experiment, event]);
    await writer.query('commit');
    // Assert (xmax: the transaction that last locked or changed the row version; 0 for none)
    const xmaxOf = async (query: ReturnType<typeof sql<{ xmax: string }>>) => (await query.execute(storage.db)).rows.map((row) => row.xmax);
    expect(await xmaxOf(sql`select xmax::text from participants where id = ${own}`)).toEqual(['0']);
    expect(await xmaxOf(sql`select xmax::text from enrolments where participant_id = ${own}`)).toEqual(['0']);
    expect(await xmaxOf(sql`select xmax::text from variants where id = ${variant}`)).toEqual([xid]);
    expect(await xmaxOf(sql`select xmax::text from events where id = ${event}`)).toEqual([xid]);
  });

  it('when migrated down and up again, then every row is kept, and the keys are PostgreSQL’s own in between', async () => {
    // Arrange
    const before = await served();
    const tables = [...new Set(INGEST_KEYS.map((key) => key.child))];
    const counts = async (storage: Storage) => Promise.all(tables.map((table) => countOf(storage, table)));
    const written = await counts(before.storage);
    const keysOf = async (storage: Storage) =>
      (
        await sql<{ name: string; kind: string }>`select conname as name, 'constraint' as kind from pg_constraint where contype = 'f'
          union all select substring(tgname from '^(.*_fkey)_insert$'), 'per statement' from pg_trigger where tgname like '%\\_fkey\\_insert'`.execute(storage.db)
      ).rows.filter((row) => INGEST_KEYS.some((key) => key.name === row.name));

    // Act: down to 013, then opened again (up to the latest)
    const { error } = await new Migrator({ db: before.storage.db, provider: { getMigrations: async () => migrationsOf('postgres') } }).migrateTo('013_participant_keys');
    const down = { rows: await counts(before.storage), keys: await keysOf(before.storage) };
    const refusedDown = await refusal(sql`insert into conversions (team_id, participant_id, experiment_id, event_id, count) values (${before.teamId}, ${before.participant}, ${before.experiment}, 1000000, 1)`.execute(before.storage.db));
    await before.storage.close();
    const after = await startServer({ engine: 'postgres', storageEnv: before.storageEnv, closeWith: cleanups });

    // Assert
    expect(error).toBeUndefined();
    expect(down.rows).toEqual(written);
    expect(down.keys.map((key) => key.kind)).toEqual(INGEST_KEYS.map(() => 'constraint'));
    expect(down.keys.map((key) => key.name).sort()).toEqual(INGEST_KEYS.map((key) => key.name).sort());
    expect(refusedDown).toEqual({ code: '23503', constraint: 'conversions_event_fkey' });
    expect(await counts(after.storage)).toEqual(written);
    expect((await keysOf(after.storage)).map((key) => key.kind)).toEqual(INGEST_KEYS.map(() => 'per statement'));
  });
});
