import { Migrator, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { createTeam } from '../../server/admin/service';
import { migrationsOf, type Storage } from '../../server/storage/database';
import type { Engine } from '../../server/storage/engine';
import { engines } from '../support/engines';
import type { StorageEnv } from '../support/storage';
import { startServer } from '../support/server';

const COUNTERS = ['variant_event_counts', 'daily_variant_counts', 'daily_variant_event_counts'] as const;

/**
 * Migration 012: on PostgreSQL the counters and their daily roll-up name their variant and event
 * with their team in composite foreign keys, and team_id's own key goes. A row naming another
 * team's variant or event, or a team that is not there, is refused; deleting a variant, an event
 * or the team still removes their rows; rows written before are kept through down and up.
 */
function suite(engine: Engine) {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const served = (storageEnv?: StorageEnv) => startServer({ engine: engine, storageEnv, closeWith: cleanups });


  /** A team with a running experiment on `purchase` and 10 participants ingested, half of them converted. */
  async function counted(storage: Storage, baseUrl: string, name: string) {
    const made = await createTeam(storage.db, { name, email: `${name}-${Date.now()}@example.com` });
    const api = createApiClient(baseUrl, made.token);
    const path = { team: made.team.id };
    for (const key of ['purchase', 'share']) await api.POST('/api/teams/{team}/events', { params: { path }, body: { key } });
    await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'purchase' } });
    for (const key of ['control', 'treatment']) {
      await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'exp' } }, body: { key, control: key === 'control' } });
    }
    await api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'exp' } } });
    const items = Array.from({ length: 10 }, (_, i) => ({ participant: `p${i}`, ...(i % 2 ? {} : { event: i % 4 ? 'purchase' : 'share' }) }));
    const ingested = await createApiClient(baseUrl, made.ingest_key).POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items } });
    expect(ingested.data?.data.every((item) => item.status === 200)).toBe(true);
    const ids = async (table: 'variants' | 'events') => (await sql<{ id: number }>`select id from ${sql.table(table)} where team_id = ${made.team.id} order by id`.execute(storage.db)).rows.map((row) => row.id);
    return { api, path, teamId: made.team.id, variants: await ids('variants'), events: await ids('events') };
  }

  /** Each counter table's rows of the team; with `but`, those of other events than it. */
  const rowsOf = async (storage: Storage, teamId: number, but?: string) => {
    const counts: Record<string, number> = {};
    for (const table of COUNTERS) {
      const other = but && table !== 'daily_variant_counts' ? sql`and event_id not in (select id from events where team_id = ${teamId} and key = ${but})` : sql``;
      counts[table] = Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(table)} where team_id = ${teamId} ${other}`.execute(storage.db)).rows[0]!.n);
    }
    return counts;
  };

  const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (error: { code?: string; constraint?: string }) => ({ code: error.code, constraint: error.constraint }));

  it('when migrated down and up again, then every counter row is kept and ingest goes on counting', async () => {
    // Arrange
    const before = await served();
    const { teamId, path } = await counted(before.storage, before.baseUrl, 'kept');
    const written = await rowsOf(before.storage, teamId);

    // Act: down to 011, then opened again (up to the latest)
    const { error } = await new Migrator({ db: before.storage.db, provider: { getMigrations: async () => migrationsOf(engine) } }).migrateTo('011_minimum_effect');
    const down = await rowsOf(before.storage, teamId);
    await before.storage.close();
    const after = await served(before.storageEnv);
    const up = await rowsOf(after.storage, teamId);
    const teamRow = await after.storage.db.selectFrom('teams').select('ingest_key_hash').where('id', '=', teamId).executeTakeFirstOrThrow();
    expect(teamRow).toBeDefined();

    // Assert
    expect(error).toBeUndefined();
    expect(Object.values(written).every((n) => n > 0)).toBe(true);
    expect(down).toEqual(written);
    expect(up).toEqual(written);
    const participants = await sql<{ n: number }>`select sum(participants) as n from variants where team_id = ${teamId}`.execute(after.storage.db);
    expect(Number(participants.rows[0]!.n)).toBe(10);
    expect(path.team).toBe(teamId);
  });

  if (engine !== 'postgres') return;

  const foreignKeysOf = async (storage: Storage, table: string) =>
    (await sql<{ name: string }>`select conname as name from pg_constraint where conrelid = ${table}::regclass and contype = 'f' order by conname`.execute(storage.db)).rows.map((row) => row.name);
  const indexesOf = async (storage: Storage, table: string) =>
    (await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = ${table} order by indexname`.execute(storage.db)).rows.map((row) => row.name);

  it('when migrated, then each counter table has the composite keys and no key of its own to teams, and the roll-ups lost their variant indexes', async () => {
    // Arrange, act
    const { storage } = await served();

    // Assert
    expect(await foreignKeysOf(storage, 'variant_event_counts')).toEqual(['variant_event_counts_event_fkey', 'variant_event_counts_variant_fkey']);
    expect(await foreignKeysOf(storage, 'daily_variant_counts')).toEqual(['daily_variant_counts_variant_fkey']);
    expect(await foreignKeysOf(storage, 'daily_variant_event_counts')).toEqual(['daily_variant_event_counts_event_fkey', 'daily_variant_event_counts_variant_fkey']);
    expect(await indexesOf(storage, 'daily_variant_counts')).toEqual(['daily_variant_counts_pkey']);
    expect(await indexesOf(storage, 'daily_variant_event_counts')).toEqual(['daily_variant_event_counts_event', 'daily_variant_event_counts_pkey']);
  });

  it.each(COUNTERS)('when a %s row names another team\'s variant or a team that is not there, then it is refused', async (table) => {
    // Arrange: two teams; a new day, so that the row is new
    const { storage, baseUrl } = await served();
    const mine = await counted(storage, baseUrl, 'mine');
    const theirs = await counted(storage, baseUrl, 'theirs');
    const insert = (teamId: number, variantId: number, eventId: number) =>
      table === 'daily_variant_counts'
        ? sql`insert into daily_variant_counts (team_id, variant_id, day, participants) values (${teamId}, ${variantId}, '1999-01-01', 1)`
        : table === 'variant_event_counts'
          ? sql`insert into variant_event_counts (team_id, variant_id, event_id, conversions, unique_conversions) values (${teamId}, ${variantId}, ${eventId}, 1, 1)`
          : sql`insert into daily_variant_event_counts (team_id, variant_id, event_id, day, conversions, unique_conversions) values (${teamId}, ${variantId}, ${eventId}, '1999-01-01', 1, 1)`;
    // variant_event_counts has a row per variant and event already: the one written here names an event with none.
    const unusedEvent = mine.events[1]!;
    await sql`delete from variant_event_counts where team_id = ${mine.teamId} and event_id = ${unusedEvent}`.execute(storage.db);

    // Act
    const otherTeamsVariant = await refusal(insert(mine.teamId, theirs.variants[0]!, unusedEvent).execute(storage.db));
    const noTeam = await refusal(insert(mine.teamId + theirs.teamId + 1000, mine.variants[0]!, unusedEvent).execute(storage.db));
    const accepted = await refusal(insert(mine.teamId, mine.variants[0]!, unusedEvent).execute(storage.db));

    // Assert
    expect(otherTeamsVariant).toEqual({ code: '23503', constraint: `${table}_variant_fkey` });
    expect(noTeam).toEqual({ code: '23503', constraint: `${table}_variant_fkey` });
    expect(accepted).toBeUndefined();
  });

  it.each(['variant_event_counts', 'daily_variant_event_counts'])('when a %s row names another team\'s event, then it is refused', async (table) => {
    // Arrange
    const { storage, baseUrl } = await served();
    const mine = await counted(storage, baseUrl, 'mine');
    const theirs = await counted(storage, baseUrl, 'theirs');

    // Act
    const refused = await refusal(
      table === 'variant_event_counts'
        ? sql`insert into variant_event_counts (team_id, variant_id, event_id, conversions, unique_conversions) values (${mine.teamId}, ${mine.variants[0]!}, ${theirs.events[0]!}, 1, 1)`.execute(storage.db)
        : sql`insert into daily_variant_event_counts (team_id, variant_id, event_id, day, conversions, unique_conversions) values (${mine.teamId}, ${mine.variants[0]!}, ${theirs.events[0]!}, '1999-01-01', 1, 1)`.execute(storage.db),
    );

    // Assert
    expect(refused).toEqual({ code: '23503', constraint: `${table}_event_fkey` });
  });

  it('when an event, a stopped experiment and then the team are deleted, then their counter rows go with them', async () => {
    // Arrange
    const { storage, baseUrl } = await served();
    const { api, path, teamId } = await counted(storage, baseUrl, 'deleted');
    await api.POST('/api/teams/{team}/experiments/{experiment}/stop', { params: { path: { ...path, experiment: 'exp' } } });
    const all = await rowsOf(storage, teamId);
    const notShare = await rowsOf(storage, teamId, 'share');
    expect(notShare).not.toEqual(all);

    // Act
    const eventDeleted = await api.DELETE('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: 'share' } } });
    const afterEvent = await rowsOf(storage, teamId);
    const experimentDeleted = await api.DELETE('/api/teams/{team}/experiments/{experiment}', { params: { path: { ...path, experiment: 'exp' } } });
    const afterExperiment = await rowsOf(storage, teamId);
    await sql`delete from teams where id = ${teamId}`.execute(storage.db);
    const left = await sql<{ n: number }>`select (select count(*) from variant_event_counts) + (select count(*) from daily_variant_counts) + (select count(*) from daily_variant_event_counts) as n`.execute(storage.db);

    // Assert
    expect([eventDeleted.response.status, experimentDeleted.response.status]).toEqual([200, 200]);
    expect(afterEvent).toEqual(notShare);
    expect(afterExperiment).toEqual({ variant_event_counts: 0, daily_variant_counts: 0, daily_variant_event_counts: 0 });
    expect(Number(left.rows[0]!.n)).toBe(0);
  });
}

describe.each(engines)('migration 012_counter_keys on %s storage', (engine) => suite(engine));
