// On PostgreSQL, when more than a flush's worth of ingests waits, the next flush opens while the
// one before writes (ingest/flusher.ts): its transaction waits at the team's lock for that commit,
// then reads what it wrote. Seen here by holding the first flush's write at a row lock.
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { createTeam } from '../../server/admin/service';
import { engines } from '../support/engines';
import { startServer } from '../support/server';

describe.runIf(engines.includes('postgres'))('ingest flushes overlapping on postgres', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('when more than a flush of ingests waits while a flush writes, then the next flush opens and waits at the team lock, and every ingest is stored once', async () => {
    // Arrange: three running experiments (7 rows an ingest with an event: three batches of 100 are more than a flush of 2 000 rows), the month's usage row written
    const { storage, baseUrl, storageEnv } = await startServer({ engine: 'postgres', closeWith: cleanups });
    const made = await createTeam(storage.db, { name: 'Overlap', email: `overlap-${Date.now()}@example.com` });
    const api = createApiClient(baseUrl, made.token);
    const path = { team: made.team.id };
    await api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } });
    for (const experiment of ['a', 'b', 'c']) {
      await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: experiment, event: 'purchase' } });
      for (const key of ['control', 'treatment']) await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment } }, body: { key, control: key === 'control' } });
      await api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment } } });
    }
    const ingest = createApiClient(baseUrl, made.ingest_key);
    expect((await ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: 'first', event: 'purchase' } })).response.status).toBe(200);
    const holder = new pg.Client({ connectionString: storageEnv.DATABASE_URL });
    const observer = new pg.Client({ connectionString: storageEnv.DATABASE_URL });
    await Promise.all([holder.connect(), observer.connect()]);
    cleanups.push(() => holder.end(), () => observer.end());
    await holder.query('begin');
    await holder.query('select 1 from ingest_usage where team_id = $1 for update', [made.team.id]);
    const waiting = async (events: string[]) => {
      const { rows } = await observer.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and wait_event = any($1)`,
        [events],
      );
      return rows[0]!.n;
    };
    const until = async (condition: () => Promise<boolean>) => {
      for (const started = Date.now(); Date.now() - started < 20_000; ) {
        if (await condition()) return true;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return false;
    };

    // Act: one ingest whose flush writes and waits at the held row; then three batches
    const single = ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: 'held', event: 'purchase' } });
    const writeHeld = await until(async () => (await waiting(['transactionid', 'tuple'])) === 1);
    const batches = [0, 1, 2].map((b) =>
      ingest.POST('/api/teams/{team}/ingest/batch', {
        params: { path },
        body: { items: Array.from({ length: 100 }, (_, i) => ({ participant: `b${b}-${i}`, event: 'purchase' })) },
      }),
    );
    const nextOpened = await until(async () => (await waiting(['advisory'])) === 1);
    await holder.query('commit');
    const answers = await Promise.all([single, ...batches]);

    // Assert
    expect([writeHeld, nextOpened]).toEqual([true, true]);
    expect(answers[0]!.response.status).toBe(200);
    for (const batch of answers.slice(1)) expect((batch.data as { data: Array<{ status: number }> }).data.every((item) => item.status === 200)).toBe(true);
    const { rows } = await sql<{ participants: number; enrolments: number; used: number }>`
      select (select count(*)::int from participants where team_id = ${made.team.id}) as participants,
        (select count(*)::int from enrolments where team_id = ${made.team.id}) as enrolments,
        (select count::int from ingest_usage where team_id = ${made.team.id}) as used`.execute(storage.db);
    expect(rows[0]).toEqual({ participants: 302, enrolments: 906, used: 302 });
  });
});
