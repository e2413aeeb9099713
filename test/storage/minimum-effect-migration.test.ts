import { Migrator } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { createTeam } from '../../server/admin/service';
import { migrationsOf, type Storage } from '../../server/storage/database';
import { engines } from '../support/engines';
import { freshStorage, type StorageEnv } from '../support/storage';
import { startServer } from '../support/server';

/** Migration 011 adds `experiments.minimum_effect` and takes it away again, the experiments kept either way. */
describe.each(engines)('migration 011_minimum_effect on %s storage', (engine) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const open = (storageEnv: StorageEnv) => startServer({ storageEnv, closeWith: cleanups });
  const migrator = (storage: Storage) => new Migrator({ db: storage.db, provider: { getMigrations: async () => migrationsOf(engine) } });

  it('when migrated down and up again, then the experiments stay, their minimum effect is gone and then null, and a new one is kept', async () => {
    // Arrange: an experiment with a minimum effect
    const { storageEnv, cleanup } = await freshStorage(engine);
    cleanups.push(cleanup);
    const before = await open(storageEnv);
    const made = await createTeam(before.storage.db, { name: 'Planned', email: 'planned@example.com' });
    const api = createApiClient(before.baseUrl, made.token);
    const path = { team: made.team.id };
    await api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } });
    await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'purchase', minimum_effect: 0.05 } });

    // Act: down to 010, then opened again (up to the latest)
    const down = await migrator(before.storage).migrateTo('010_ingest_keys');
    const columns = async (storage: Storage) => (await storage.db.introspection.getTables()).find((table) => table.name === 'experiments')!.columns.map((column) => column.name);
    const withoutColumn = await columns(before.storage);
    const kept = await before.storage.db.selectFrom('experiments').select('key').where('team_id', '=', made.team.id).execute();
    await before.storage.close();
    const after = await open(storageEnv);
    const read = await createApiClient(after.baseUrl, made.token).GET('/api/teams/{team}/experiments/{experiment}', { params: { path: { ...path, experiment: 'exp' } } });
    const changed = await createApiClient(after.baseUrl, made.token).PUT('/api/teams/{team}/experiments/{experiment}', { params: { path: { ...path, experiment: 'exp' } }, body: { minimum_effect: 0.1 } });

    // Assert
    expect(down.error).toBeUndefined();
    expect(down.results?.map((result) => [result.migrationName, result.direction, result.status])).toContainEqual(['011_minimum_effect', 'Down', 'Success']);
    expect(withoutColumn).not.toContain('minimum_effect');
    expect(kept).toEqual([{ key: 'exp' }]);
    expect(await columns(after.storage)).toContain('minimum_effect');
    expect(read.data!.data).toMatchObject({ key: 'exp', minimum_effect: null });
    expect(changed.data!.data.minimum_effect).toBe(0.1);
  });

  it('when a stored minimum effect is outside (0, 10], then the database refuses it', async () => {
    const { storageEnv, cleanup } = await freshStorage(engine);
    cleanups.push(cleanup);
    const { storage, baseUrl } = await open(storageEnv);
    const made = await createTeam(storage.db, { name: 'Checked', email: 'checked@example.com' });
    const api = createApiClient(baseUrl, made.token);
    await api.POST('/api/teams/{team}/events', { params: { path: { team: made.team.id } }, body: { key: 'purchase' } });
    await api.POST('/api/teams/{team}/experiments', { params: { path: { team: made.team.id } }, body: { key: 'exp', event: 'purchase' } });

    for (const value of [0, 10.5]) {
      await expect(storage.db.updateTable('experiments').set({ minimum_effect: value }).where('team_id', '=', made.team.id).execute()).rejects.toThrow(/check/i);
    }
  });
});
