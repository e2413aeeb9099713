import { Migrator } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { createTeam } from '../../server/admin/service';
import { migrationsOf, type Storage } from '../../server/storage/database';
import { engines } from '../support/engines';
import { freshStorage, type StorageEnv } from '../support/process';
import { serveStorage } from '../support/served-storage';

/** Migration 022 adds CUPED's storage (the window, Σx/Σx²/Σxy, pre-exposure activity, frozen covariates) and takes it away again. */
describe.each(engines)('migration 022_cuped on %s storage', (engine) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const open = (storageEnv: StorageEnv) => serveStorage(storageEnv, cleanups);
  const migrator = (storage: Storage) => new Migrator({ db: storage.db, provider: { getMigrations: async () => migrationsOf(engine) } });
  const columns = async (storage: Storage, name: string) => (await storage.db.introspection.getTables()).find((table) => table.name === name)?.columns.map((column) => column.name) ?? [];

  it('when migrated down and up again, then experiments stay, the new storage is gone and then back with a 14-day window and zero sums', async () => {
    // Arrange: an experiment with an event
    const { storageEnv, cleanup } = await freshStorage(engine);
    cleanups.push(cleanup);
    const before = await open(storageEnv);
    const made = await createTeam(before.storage.db, { name: 'Adjusted', email: 'adjusted@example.com' });
    const api = createApiClient(before.baseUrl, made.token);
    const path = { team: made.team.id };
    await api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } });
    await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'purchase' } });

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
    const { storageEnv, cleanup } = await freshStorage(engine);
    cleanups.push(cleanup);
    const { storage, baseUrl } = await open(storageEnv);
    const made = await createTeam(storage.db, { name: 'Windowed', email: 'windowed@example.com' });
    const api = createApiClient(baseUrl, made.token);
    await api.POST('/api/teams/{team}/events', { params: { path: { team: made.team.id } }, body: { key: 'purchase' } });
    await api.POST('/api/teams/{team}/experiments', { params: { path: { team: made.team.id } }, body: { key: 'exp', event: 'purchase' } });

    await storage.db.updateTable('experiments').set({ pre_exposure_days: 0 }).where('team_id', '=', made.team.id).execute();
    for (const value of [-1, 61]) {
      await expect(storage.db.updateTable('experiments').set({ pre_exposure_days: value }).where('team_id', '=', made.team.id).execute()).rejects.toThrow(/check/i);
    }
  });
});
