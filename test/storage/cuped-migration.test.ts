import { Migrator } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { createTeam } from '../../server/admin/service';
import { migrationsOf, type Storage } from '../../server/storage/database';
import { engines } from '../support/engines';
import { freshStorage, type StorageEnv } from '../support/storage';
import { startServer } from '../support/server';

/** Migration 022 adds CUPED's storage (the window, Σx/Σx²/Σxy, pre-exposure activity, frozen covariates) and takes it away again. */
describe.each(engines)('migration 022_cuped on %s storage', (engine) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const open = (storageEnv: StorageEnv) => startServer({ storageEnv, closeWith: cleanups });
  const migrator = (storage: Storage) => new Migrator({ db: storage.db, provider: { getMigrations: async () => migrationsOf(engine) } });
  const columns = async (storage: Storage, name: string) => (await storage.db.introspection.getTables()).find((table) => table.name === name)?.columns.map((column) => column.name) ?? [];
  /** Fresh storage, served, with a team, an event `purchase` and an experiment `exp` on it. */
  const teamWithExperiment = async (name: string) => {
    const { storageEnv, cleanup } = await freshStorage(engine);
    cleanups.push(cleanup);
    const served = await open(storageEnv);
    const made = await createTeam(served.storage.db, { name, email: `${name.toLowerCase()}@example.com` });
    const api = createApiClient(served.baseUrl, made.token);
    const path = { team: made.team.id };
    await api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } });
    await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'purchase' } });
    return { ...served, storageEnv, made, api, path };
  };

  it('when migrated down and up again, then experiments stay, the new storage is gone and then back with a 14-day window and zero sums', async () => {
    // Arrange: an experiment with an event
    const before = await teamWithExperiment('Adjusted');
    const { storageEnv, made } = before;

    // Act: down to 021, then opened again (up to the latest)
    const down = await migrator(before.storage).migrateTo('021_webhooks');
    const withoutWindow = await columns(before.storage, 'experiments');
    const withoutSums = await columns(before.storage, 'daily_variant_event_counts');
    const withoutTables = (await before.storage.db.introspection.getTables()).map((table) => table.name);
    await before.storage.close();
    const after = await open(storageEnv);
    const windows = await after.storage.db.selectFrom('experiments').select('pre_exposure_days').where('team_id', '=', made.team.id).execute();

    // Assert
    expect(down.error).toBeUndefined();
    expect(down.results?.map((result) => [result.migrationName, result.direction, result.status])).toContainEqual(['022_cuped', 'Down', 'Success']);
    expect(withoutWindow).not.toContain('pre_exposure_days');
    expect(withoutSums).not.toContain('sum_xy');
    expect(withoutTables).not.toContain('pre_exposure_activity');
    expect(withoutTables).not.toContain('enrolment_covariates');
    expect(windows).toEqual([{ pre_exposure_days: 14 }]);
    for (const table of ['variant_event_counts', 'daily_variant_event_counts']) expect(await columns(after.storage, table)).toEqual(expect.arrayContaining(['sum_x', 'sum_x2', 'sum_xy']));
    expect(await columns(after.storage, 'pre_exposure_activity')).toEqual(expect.arrayContaining(['participant_id', 'event_id', 'day', 'count', 'value']));
    expect(await columns(after.storage, 'enrolment_covariates')).toEqual(expect.arrayContaining(['participant_id', 'experiment_id', 'event_id', 'x']));
  });

  it('when a stored window is outside 0 to 60 days, then the database refuses it', async () => {
    const { storage, made } = await teamWithExperiment('Windowed');

    await storage.db.updateTable('experiments').set({ pre_exposure_days: 0 }).where('team_id', '=', made.team.id).execute();
    for (const value of [-1, 61]) {
      await expect(storage.db.updateTable('experiments').set({ pre_exposure_days: value }).where('team_id', '=', made.team.id).execute()).rejects.toThrow(/check/i);
    }
  });

  it('when a participant is deleted, then its pre-exposure activity and covariates go with it', async () => {
    const { storage, baseUrl, made, api, path } = await teamWithExperiment('Forgotten');
    await createApiClient(baseUrl, made.ingest_key).POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items: [{ participant: 'ann' }] } });
    const participant = await storage.db.selectFrom('participants').select('id').where('team_id', '=', made.team.id).where('key', '=', 'ann').executeTakeFirstOrThrow();
    const event = await storage.db.selectFrom('events').select('id').where('team_id', '=', made.team.id).executeTakeFirstOrThrow();
    const experiment = await storage.db.selectFrom('experiments').select('id').where('team_id', '=', made.team.id).executeTakeFirstOrThrow();
    const keys = { team_id: made.team.id, participant_id: participant.id, event_id: event.id };
    await storage.db.insertInto('pre_exposure_activity').values({ ...keys, day: '2026-11-01', count: 2, value: '3000000' }).execute();
    await storage.db.insertInto('enrolment_covariates').values({ ...keys, experiment_id: experiment.id, x: '1000000' }).execute();

    const deleted = await api.DELETE('/api/teams/{team}/participants/{participant}', { params: { path: { ...path, participant: 'ann' } } });

    expect(deleted.response.ok).toBe(true);
    expect(await storage.db.selectFrom('pre_exposure_activity').selectAll().where('team_id', '=', made.team.id).execute()).toEqual([]);
    expect(await storage.db.selectFrom('enrolment_covariates').selectAll().where('team_id', '=', made.team.id).execute()).toEqual([]);
  });
});
