import { Kysely, PostgresDialect, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { ingestContexts } from '../../server/ingest/context';
import { ingestBatch, ingestion } from '../../server/ingest/service';
import { ingestKeyWindowFromEnv } from '../../server/settings/settings';
import { preparingStatements } from '../../server/storage/postgres-statements';
import type { Database } from '../../server/storage/schema';
import { findTeam } from '../../server/teams/store';
import { engines } from '../support/engines';
import { enrolledTeam } from '../support/enrolled-team';
import { poolOfOne } from '../support/pools';
import { startServer } from '../support/server';

/**
 * The write of a PostgreSQL ingest flush (ingest/flush-postgres.ts) runs on a plan made once per
 * connection for every flush, from estimates that know nothing of its arrays' lengths. No part of
 * it may then read another part once per row: rows under participants the flush creates find
 * their ids by position in an array, not by a join the plan could make a loop.
 */
describe.runIf(engines.includes('postgres'))('the write of an ingest flush on postgres', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('when a flush creates participants with enrolments and conversions, then each part of its write is read once, and every row names its own participant', async () => {
    // Arrange: a team with two running experiments; a connection that reports each statement's plan as it ran
    const { storage, baseUrl, storageEnv } = await startServer({ engine: 'postgres', closeWith: cleanups });
    const { teamId } = await enrolledTeam(storage, baseUrl, 'planned', ['one', 'two'], ['one', 'two']);
    const pool = poolOfOne(storageEnv.DATABASE_URL);
    const plans: string[] = [];
    pool.on('connect', (client) => {
      client.on('notice', (notice) => plans.push(notice.message ?? ''));
      void client.query(`load 'auto_explain'; set auto_explain.log_min_duration = 0; set auto_explain.log_analyze = on; set auto_explain.log_level = notice`);
    });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingStatements(pool) }) });
    cleanups.push(() => db.destroy());
    const explained = { ...storage, db };
    const team = (await findTeam(storage.db, teamId))!;
    const ingesting = ingestion(explained, ingestContexts(), ingestKeyWindowFromEnv());
    const items = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => ({ participant: `${prefix}-${i}`, event: 'purchase' }));
    await ingestBatch(ingesting, team, items('warm', 2));
    plans.length = 0;

    // Act
    const answered = await ingestBatch(ingesting, team, items('new', 40));

    // Assert
    expect(answered.every((item) => item.status === 200)).toBe(true);
    const writes = plans.filter((plan) => /Insert on enrolments/.test(plan));
    expect(writes).toHaveLength(1);
    const scans = [...writes[0]!.matchAll(/CTE Scan on (\w+)[^\n]*loops=(\d+)/g)].map(([, cte, loops]) => ({ cte, loops: Number(loops) }));
    expect(scans.length).toBeGreaterThan(0);
    expect(scans.filter((scan) => scan.loops > 1)).toEqual([]);
    const { rows } = await sql<{ key: string; enrolments: number; conversions: number }>`
      select p.key, (select count(*)::int from enrolments e where e.team_id = p.team_id and e.participant_id = p.id) as enrolments,
        (select count(*)::int from conversions c where c.team_id = p.team_id and c.participant_id = p.id) as conversions
      from participants p where p.team_id = ${teamId} and p.key like 'new-%' order by p.key`.execute(storage.db);
    const expected = items('new', 40).map(({ participant }) => ({ key: participant, enrolments: 2, conversions: 2 }));
    expect(rows).toEqual(expected.sort((a, b) => (a.key < b.key ? -1 : 1)));
  });
});
