// An ingest flush on PostgreSQL runs its statements on plans made once (ingest/flush-postgres.ts):
// PostgreSQL's own choice planned the reads anew at every run. pg_prepared_statements counts, for
// each statement a connection prepared, the runs on a generic plan and those planned anew. A
// flush that decides on assumptions runs their check in place of the reads.
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { createTeam } from '../../server/admin/service';
import { engines } from '../support/engines';
import { startServer } from '../support/server';

describe.runIf(engines.includes('postgres'))('ingest flush plans on postgres', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('when a team ingests flush after flush, then every statement of the flushes runs on one plan made once, none planned anew', async () => {
    // Arrange: one connection, so every flush runs on it.
    const { storage, baseUrl } = await startServer({ engine: 'postgres', open: { poolSize: 1 }, closeWith: cleanups });
    const made = await createTeam(storage.db, { name: 'Plans', email: `plans-${Date.now()}@example.com` });
    const api = createApiClient(baseUrl, made.token);
    const path = { team: made.team.id };
    await api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } });
    await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'purchase' } });
    for (const key of ['control', 'treatment']) await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'exp' } }, body: { key, control: key === 'control' } });
    await api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'exp' } } });
    const ingest = createApiClient(baseUrl, made.ingest_key);
    // Act: each ingest waits for the one before: a flush of its own. The first reads its
    // participant after deciding (no config seen yet), the next five decide on what the server saw
    // (new participants), the last six read their participants first (stored by this server).
    const participants = [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5];
    for (const n of participants) {
      const answered = await ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: `p-${n}`, event: 'purchase' } });
      expect(answered.response.status).toBe(200);
    }
    // Assert
    const { rows } = await sql<{ statement: string; generic_plans: number; custom_plans: number }>`
      select statement, generic_plans::int, custom_plans::int from pg_prepared_statements where name like 'pipelined%'`.execute(storage.db);
    expect(rows.filter((row) => row.custom_plans > 0)).toEqual([]);
    const runsOf = (pattern: RegExp) => rows.filter((row) => pattern.test(row.statement)).reduce((runs, row) => runs + row.generic_plans, 0);
    expect(runsOf(/pg_advisory_xact_lock/)).toBeGreaterThanOrEqual(participants.length);
    expect(runsOf(/ingest_flush_assumes/)).toBe(5);
    expect(runsOf(/json_agg/)).toBe(6);
    expect(runsOf(/insert into enrolments/)).toBe(participants.length);
  });
});
