import { sql } from 'kysely';
import { expect } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { createTeam } from '../../server/admin/service';
import type { Storage } from '../../server/storage/database';

/**
 * A team made on `storage` and served at `baseUrl`, with a `purchase` event, the `experiments`
 * (control and treatment, goal `purchase`) of which `started` run, and participants p0, p1 and p2
 * enrolled in those through one batch ingest with a purchase each. Answers the team, its token and
 * the id of its row of a participant or an experiment by key.
 */
export async function enrolledTeam(storage: Storage, baseUrl: string, name: string, experiments: string[], started: string[]) {
  const made = await createTeam(storage.db, { name, email: `${name}-${Date.now()}@example.com` });
  const api = createApiClient(baseUrl, made.token);
  const path = { team: made.team.id };
  await api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } });
  for (const experiment of experiments) {
    await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: experiment, event: 'purchase' } });
    for (const key of ['control', 'treatment']) {
      await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment } }, body: { key, control: key === 'control' } });
    }
  }
  for (const experiment of started) await api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment } } });
  const items = ['p0', 'p1', 'p2'].map((participant) => ({ participant, event: 'purchase' }));
  const ingested = await createApiClient(baseUrl, made.ingest_key).POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items } });
  expect(ingested.data?.data.every((item) => item.status === 200)).toBe(true);
  const idOf = async (table: 'participants' | 'experiments', key: string) =>
    Number((await sql<{ id: number }>`select id from ${sql.table(table)} where team_id = ${made.team.id} and key = ${key}`.execute(storage.db)).rows[0]!.id);
  return { teamId: made.team.id, token: made.token, path, idOf };
}
