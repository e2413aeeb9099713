import { Migrator, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { createTeam } from '../../server/admin/service';
import { migrationsOf, type Storage } from '../../server/storage/database';
import type { StorageEnv } from '../support/storage';
import { startServer } from '../support/server';

/**
 * PostgreSQL checks an enrolment's variant with its team and experiment in one foreign key, and
 * a conversion against the enrolment it counts for (migration 004): rows that break either are
 * refused, deletes still reach every row that hangs on what is deleted, and storage upgraded
 * from before keeps every row.
 */
describe('composite foreign keys on postgres', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const serve = (storageEnv?: StorageEnv) => startServer({ engine: 'postgres', storageEnv, closeWith: cleanups });


  /** Two running experiments on `purchase`; 20 participants enrolled in both, half of them converted on `purchase`, a quarter on `share`. */
  async function withConversions(storage: Storage, baseUrl: string) {
    const made = await createTeam(storage.db, { name: 'Keys', email: `keys${Date.now()}@example.com` });
    const api = createApiClient(baseUrl, made.token);
    const path = { team: made.team.id };
    for (const key of ['purchase', 'share']) await api.POST('/api/teams/{team}/events', { params: { path }, body: { key } });
    for (const experiment of ['first', 'second']) {
      await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: experiment, event: 'purchase' } });
      for (const key of ['control', 'treatment']) {
        await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment } }, body: { key, control: key === 'control' } });
      }
      await api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment } } });
    }
    const items = Array.from({ length: 20 }, (_, i) => ({ participant: `p${i}`, ...(i % 2 ? {} : { event: i % 4 ? 'purchase' : 'share' }) }));
    const ingested = await createApiClient(baseUrl, made.ingest_key).POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items } });
    expect(ingested.data?.data.every((item) => item.status === 200)).toBe(true);
    return { api, path, teamId: made.team.id, ingestKey: made.ingest_key };
  }

  const countOf = async (storage: Storage, table: 'enrolments' | 'conversions', teamId: number) =>
    (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)} where team_id = ${teamId}`.execute(storage.db)).rows[0]!.n;

  /** The table's foreign keys: PostgreSQL's own, and those checked per statement (014_set_based_keys), by the name of their insert trigger. */
  const foreignKeysOf = async (storage: Storage, table: string) =>
    (
      await sql<{ name: string }>`select conname as name from pg_constraint where conrelid = ${table}::regclass and contype = 'f'
        union all select substring(tgname from '^(.*_fkey)_insert$') from pg_trigger where tgrelid = ${table}::regclass and tgname like '%\\_fkey\\_insert'
        order by name`.execute(storage.db)
    ).rows.map((row) => row.name);

  const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (error: { code?: string; constraint?: string }) => ({ code: error.code, constraint: error.constraint }));

  it('when a conversion is written for a participant not enrolled in its experiment, then it is refused', async () => {
    // Arrange: p1's enrolment in 'first' removed, so a conversion of p1 there belongs to no enrolment
    const { storage, baseUrl } = await serve();
    const { teamId } = await withConversions(storage, baseUrl);
    const { rows } = await sql<{ participant_id: number; experiment_id: number; event_id: number }>`
      select p.id as participant_id, x.id as experiment_id, e.id as event_id
      from participants p, experiments x, events e where p.team_id = ${teamId} and p.key = 'p1' and x.team_id = ${teamId} and x.key = 'first' and e.team_id = ${teamId} and e.key = 'purchase'`.execute(storage.db);
    const { participant_id, experiment_id, event_id } = rows[0]!;
    await sql`delete from enrolments where participant_id = ${participant_id} and experiment_id = ${experiment_id}`.execute(storage.db);

    // Act
    const refused = await refusal(sql`insert into conversions (team_id, participant_id, experiment_id, event_id, count) values (${teamId}, ${participant_id}, ${experiment_id}, ${event_id}, 1)`.execute(storage.db));

    // Assert
    expect(refused).toEqual({ code: '23503', constraint: 'conversions_enrolment_fkey' });
  });

  it('when an enrolment names a variant of another experiment, then it is refused', async () => {
    // Arrange: p3's enrolment in 'first' removed, to be written again with a variant of 'second'
    const { storage, baseUrl } = await serve();
    const { teamId } = await withConversions(storage, baseUrl);
    const { rows } = await sql<{ participant_id: number; experiment_id: number; variant_id: number }>`
      select p.id as participant_id, x.id as experiment_id, v.id as variant_id
      from participants p, experiments x, variants v, experiments other
      where p.team_id = ${teamId} and p.key = 'p3' and x.team_id = ${teamId} and x.key = 'first'
        and other.team_id = ${teamId} and other.key = 'second' and v.experiment_id = other.id and v.key = 'control'`.execute(storage.db);
    const { participant_id, experiment_id, variant_id } = rows[0]!;
    await sql`delete from enrolments where participant_id = ${participant_id} and experiment_id = ${experiment_id}`.execute(storage.db);

    // Act
    const refused = await refusal(
      sql`insert into enrolments (team_id, participant_id, experiment_id, variant_id, enrolled_at) values (${teamId}, ${participant_id}, ${experiment_id}, ${variant_id}, now())`.execute(storage.db),
    );

    // Assert
    expect(refused).toEqual({ code: '23503', constraint: 'enrolments_variant_fkey' });
  });

  it('when a stopped experiment and an event participants converted on are deleted, then their enrolments and conversions go with them and the rest stay', async () => {
    // Arrange
    const { storage, baseUrl } = await serve();
    const { api, path, teamId } = await withConversions(storage, baseUrl);
    expect([await countOf(storage, 'enrolments', teamId), await countOf(storage, 'conversions', teamId)]).toEqual([40, 20]);
    await api.POST('/api/teams/{team}/experiments/{experiment}/stop', { params: { path: { ...path, experiment: 'second' } } });

    // Act
    const experimentDeleted = await api.DELETE('/api/teams/{team}/experiments/{experiment}', { params: { path: { ...path, experiment: 'second' } } });
    const afterExperiment = [await countOf(storage, 'enrolments', teamId), await countOf(storage, 'conversions', teamId)];
    const eventDeleted = await api.DELETE('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: 'share' } } });
    const afterEvent = [await countOf(storage, 'enrolments', teamId), await countOf(storage, 'conversions', teamId)];

    // Assert: 10 converted in each experiment, 5 of them on share
    expect([experimentDeleted.response.status, eventDeleted.response.status]).toEqual([200, 200]);
    expect(afterExperiment).toEqual([20, 10]);
    expect(afterEvent).toEqual([20, 5]);
  });

  it('when storage from before the composite keys is opened, then it is upgraded with every enrolment and conversion kept, and ingest goes on', async () => {
    // Arrange: data written, then the schema taken back to 003
    const before = await serve();
    const { teamId, path, ingestKey } = await withConversions(before.storage, before.baseUrl);
    const { error } = await new Migrator({ db: before.storage.db, provider: { getMigrations: async () => migrationsOf('postgres') } }).migrateTo('003_daily_counts');
    expect(error).toBeUndefined();
    expect(await foreignKeysOf(before.storage, 'conversions')).toEqual(['conversions_event_id_fkey', 'conversions_experiment_id_fkey', 'conversions_participant_id_fkey', 'conversions_team_id_fkey']);

    // Act
    const after = await serve(before.storageEnv);
    const kept = [await countOf(after.storage, 'enrolments', teamId), await countOf(after.storage, 'conversions', teamId)];
    const ingested = await createApiClient(after.baseUrl, ingestKey).POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: 'after-upgrade', event: 'purchase' } });

    // Assert
    expect(await foreignKeysOf(after.storage, 'conversions')).toEqual(['conversions_enrolment_fkey', 'conversions_event_fkey']);
    // 013_participant_keys then names the participant with its team; 014_set_based_keys checks these keys per statement.
    expect(await foreignKeysOf(after.storage, 'enrolments')).toEqual(['enrolments_participant_fkey', 'enrolments_variant_fkey']);
    expect(kept).toEqual([40, 20]);
    expect(ingested.data?.data.assignments.map((a) => a.experiment)).toEqual(['first', 'second']);
    expect([await countOf(after.storage, 'enrolments', teamId), await countOf(after.storage, 'conversions', teamId)]).toEqual([42, 22]);
  });
});
