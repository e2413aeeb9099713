import { Migrator } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { createTeam } from '../../server/admin/service';
import { migrationsOf } from '../../server/storage/database';
import { engines } from '../support/engines';
import { freshStorage, type StorageEnv } from '../support/storage';
import { startServer } from '../support/server';

/** Storage that held conversions before migration 007: upgraded, Σy and Σy² are those of the stored counts. */
describe.each(engines)('migration 007_metrics on %s storage holding data', (engine) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const open = (storageEnv: StorageEnv) => startServer({ storageEnv, closeWith: cleanups });

  it('when conversions were stored before 007, then the counters and today’s roll-up get Σy and Σy² of the counts (in micro-units), and value events can be created after', async () => {
    // Arrange: participants with 0 to 3 `views` each in two variants, then storage as before 007
    const { storageEnv, cleanup } = await freshStorage(engine);
    cleanups.push(cleanup);
    const before = await open(storageEnv);
    const made = await createTeam(before.storage.db, { name: 'Old data', email: 'old@example.com' });
    const api = createApiClient(before.baseUrl, made.token);
    const path = { team: made.team.id };
    await api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'views', type: 'count' } });
    await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'views' } });
    await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'exp' } }, body: { key: 'control', control: true } });
    await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'exp' } }, body: { key: 'treatment' } });
    await api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'exp' } } });
    const items = Array.from({ length: 20 }, (_, i) => ({ participant: `p${i}`, experiment: 'exp', variant: i % 2 ? 'treatment' : 'control' })).flatMap((item, i) => [
      item,
      ...Array.from({ length: i % 4 }, () => ({ ...item, event: 'views' })),
    ]);
    const ingested = await createApiClient(before.baseUrl, made.ingest_key).POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items } });
    expect(ingested.data?.data.every((item) => item.status === 200)).toBe(true);
    const { error } = await new Migrator({ db: before.storage.db, provider: { getMigrations: async () => migrationsOf(engine) } }).migrateTo('004_composite_keys');
    expect(error).toBeUndefined();
    await before.storage.close();

    // Act: opened again, the storage is upgraded
    const after = await open(storageEnv);

    // Assert: control has p0, p2, … with counts 0, 2, 0, 2, … ; treatment p1, p3, … with 1, 3, 1, 3, …
    const expected = (counts: number[]) => ({ y: String(counts.reduce((s, c) => s + c, 0) * 1e6), y2: String(counts.reduce((s, c) => s + c * c, 0) * 1e12) });
    const control = expected(Array.from({ length: 10 }, (_, i) => (2 * i) % 4));
    const treatment = expected(Array.from({ length: 10 }, (_, i) => (2 * i + 1) % 4));
    for (const table of ['variant_event_counts', 'daily_variant_event_counts'] as const) {
      const rows = await after.storage.db
        .selectFrom(table)
        .innerJoin('variants as v', 'v.id', `${table}.variant_id`)
        .select(['v.key', `${table}.sum_y`, `${table}.sum_y2`])
        .where(`${table}.team_id`, '=', made.team.id)
        .orderBy('v.key')
        .execute();
      expect(rows.map((row) => [row.key, String(row.sum_y), String(row.sum_y2)])).toEqual([
        ['control', control.y, control.y2],
        ['treatment', treatment.y, treatment.y2],
      ]);
    }
    const created = await createApiClient(after.baseUrl, made.token).POST('/api/teams/{team}/events', { params: { path }, body: { key: 'revenue', type: 'value', cap: 100 } });
    expect(created.data?.data).toMatchObject({ key: 'revenue', type: 'value', cap: 100, direction: 'increase' });
  });
});
