import { Migrator } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { createTeam } from '../../server/admin/service';
import { migrationsOf } from '../../server/storage/database';
import { engines } from '../support/engines';
import { freshStorage, type StorageEnv } from '../support/storage';
import { startServer } from '../support/server';

/**
 * Storage that held experiments before the daily roll-up existed: upgraded, the results' history
 * has their counts on the day of the upgrade, so that it adds up to the counters.
 */
describe.each(engines)('the daily roll-up added to %s storage holding data', (engine) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const serve = (storageEnv: StorageEnv) => startServer({ storageEnv, closeWith: cleanups });

  it('when the roll-up is added after participants converted, then the history has one day, today, equal to the current counts', async () => {
    // Arrange: an experiment with enrolled and converted participants, then storage as it was before 003
    const { storageEnv, cleanup } = await freshStorage(engine);
    cleanups.push(cleanup);
    const before = await serve(storageEnv);
    const made = await createTeam(before.storage.db, { name: 'Old data', email: 'old@example.com' });
    const api = createApiClient(before.baseUrl, made.token);
    const path = { team: made.team.id };
    await api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } });
    await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'purchase' } });
    await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'exp' } }, body: { key: 'control', control: true } });
    await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'exp' } }, body: { key: 'treatment' } });
    await api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'exp' } } });
    const items = Array.from({ length: 40 }, (_, i) => ({ participant: `p${i}`, experiment: 'exp', variant: i % 2 ? 'treatment' : 'control', ...(i % 4 < 2 ? {} : { event: 'purchase' }) }));
    const ingested = await createApiClient(before.baseUrl, made.ingest_key).POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items } });
    expect(ingested.data?.data.every((item) => item.status === 200)).toBe(true);
    const { error } = await new Migrator({ db: before.storage.db, provider: { getMigrations: async () => migrationsOf(engine) } }).migrateTo('002_config_version');
    expect(error).toBeUndefined();
    await before.storage.close();

    // Act: opened again, the storage is upgraded
    const after = await serve(storageEnv);
    const { data } = await createApiClient(after.baseUrl, made.token).GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { ...path, experiment: 'exp' } } });

    // Assert
    const goal = data!.data.events[0]!;
    expect(goal.variants.map((v) => [v.variant, v.participants, v.statistics.unique_conversions])).toEqual([
      ['control', 20, 10],
      ['treatment', 20, 10],
    ]);
    expect(data!.data.history.days).toHaveLength(1);
    expect(data!.data.history.days[0]!.day).toBe(new Date().toISOString().slice(0, 10));
    expect(data!.data.history.days[0]!.variants.map((v) => [v.variant, v.participants, v.unique_conversions])).toEqual([
      ['control', 20, 10],
      ['treatment', 20, 10],
    ]);
  });
});
