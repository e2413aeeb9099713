import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { enrolmentsOf } from '../../server/enrolments/store';
import { postgresLedger } from '../../server/ledger/postgres';
import { removeEnrolments, withdrawEnrolment } from '../../server/ledger/removals';
import { migrationsOf, type Storage } from '../../server/storage/database';
import { preparingStatements } from '../../server/storage/postgres-statements';
import type { Database } from '../../server/storage/schema';
import { engines } from '../support/engines';
import { enrolledTeam } from '../support/enrolled-team';
import { poolOfOne } from '../support/pools';
import type { StorageEnv } from '../support/storage';
import { startServer } from '../support/server';

/**
 * Migration 017 (PostgreSQL): participants are keyed by (team_id, id) and enrolments by
 * (team_id, participant_id, experiment_id), with no index of their id alone. The keys still
 * refuse a repeated row; every delete of enrolments finds them through the key; rows written
 * before are kept through down and up.
 */
describe.runIf(engines.includes('postgres'))('migration 017_natural_primary_keys on postgres storage', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const served = (storageEnv?: StorageEnv) => startServer({ engine: 'postgres', storageEnv, closeWith: cleanups });

  /** A team with two running experiments and three participants enrolled in both, through a batch ingest. */
  async function enrolled(storage: Storage, baseUrl: string, name: string) {
    const { teamId, token, path, idOf } = await enrolledTeam(storage, baseUrl, name, ['first', 'second'], ['first', 'second']);
    return { teamId, participant: await idOf('participants', 'p0'), path, token };
  }

  const rowsOf = async (db: Storage['db'], teamId: number) => {
    const { rows } = await sql<{ participants: number; enrolments: number; conversions: number }>`
      select (select count(*)::int from participants where team_id = ${teamId}) as participants,
        (select count(*)::int from enrolments where team_id = ${teamId}) as enrolments,
        (select count(*)::int from conversions where team_id = ${teamId}) as conversions`.execute(db);
    return rows[0]!;
  };

  const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (error: { code?: string; constraint?: string }) => ({ code: error.code, constraint: error.constraint }));

  it('when migrated, then no index of id alone is left to maintain, and a repeated participant id or enrolment is still refused by the primary key', async () => {
    // Arrange
    const { storage, baseUrl } = await served();
    const { teamId, participant } = await enrolled(storage, baseUrl, 'keys');
    const enrolment = (await sql<{ experiment_id: number; variant_id: number }>`
      select experiment_id, variant_id from enrolments where team_id = ${teamId} and participant_id = ${participant} limit 1`.execute(storage.db)).rows[0]!;

    // Act
    const indexes = await sql<{ indexdef: string }>`select indexdef from pg_indexes where tablename in ('participants', 'enrolments') order by indexname`.execute(storage.db);
    const participantAgain = await refusal(sql`insert into participants (id, team_id, key, attributes, created_at, updated_at)
      values (${participant}, ${teamId}, 'another key', '{}', now(), now())`.execute(storage.db));
    const enrolmentAgain = await refusal(sql`insert into enrolments (team_id, participant_id, experiment_id, variant_id, enrolled_at)
      values (${teamId}, ${participant}, ${enrolment.experiment_id}, ${enrolment.variant_id}, now())`.execute(storage.db));

    // Assert
    expect(indexes.rows.map((row) => row.indexdef.replace(/^.* ON public\./, ''))).toEqual([
      'enrolments USING btree (team_id, participant_id, experiment_id)',
      'enrolments USING btree (variant_id)',
      'participants USING btree (team_id, id)',
      'participants USING btree (team_id, key)',
    ]);
    expect(participantAgain).toEqual({ code: '23505', constraint: 'participants_pkey' });
    expect(enrolmentAgain).toEqual({ code: '23505', constraint: 'enrolments_pkey' });
  });

  it("when an enrolment is withdrawn or a participant's enrolments are removed, then each delete finds its rows through the primary key", async () => {
    // Arrange: the store's own statements on a connection that reports the plan of each, and plans no sequential scan where an index serves
    const { storage, baseUrl, storageEnv } = await served();
    const { teamId, participant } = await enrolled(storage, baseUrl, 'withdrawn');
    const other = await enrolled(storage, baseUrl, 'other');
    const pool = poolOfOne(storageEnv.DATABASE_URL);
    const plans: string[] = [];
    pool.on('connect', (client) => client.on('notice', (notice) => plans.push(notice.message ?? '')));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingStatements(pool) }) });
    cleanups.push(() => db.destroy());
    await sql`load 'auto_explain'; set auto_explain.log_min_duration = 0; set auto_explain.log_level = notice; set enable_seqscan = off`.execute(db);
    const [first, second] = await enrolmentsOf(db, teamId, participant);

    // Act
    await withdrawEnrolment(postgresLedger, db, { id: participant, team_id: teamId }, first!);
    await removeEnrolments(postgresLedger, db, { id: participant, team_id: teamId }, [second!]);

    // Assert
    const deletes = plans.filter((plan) => /delete from "enrolments"/i.test(plan));
    expect(deletes).toHaveLength(2);
    for (const plan of deletes) {
      expect(plan).toMatch(/Index Cond: \(\(team_id = [^)]*\) AND \(participant_id = [^)]*\) AND \(experiment_id = /);
      expect(plan).not.toMatch(/Filter:/);
    }
    expect(await rowsOf(storage.db, teamId)).toEqual({ participants: 3, enrolments: 4, conversions: 4 });
    expect(await rowsOf(storage.db, other.teamId)).toEqual({ participants: 3, enrolments: 6, conversions: 6 });
  });

  it("when migrated down and up again, then every participant, enrolment and conversion is kept, and so is the order of a participant's enrolments", async () => {
    // Arrange
    const before = await served();
    const { teamId, path, token } = await enrolled(before.storage, before.baseUrl, 'kept');
    const written = await rowsOf(before.storage.db, teamId);
    const listed = async (baseUrl: string) =>
      (await createApiClient(baseUrl, token).GET('/api/teams/{team}/participants/{participant}/experiments', { params: { path: { ...path, participant: 'p1' } } })).data?.data;
    const listedBefore = await listed(before.baseUrl);

    // Act: down to 016, then opened again (up to the latest)
    const { error } = await new Migrator({ db: before.storage.db, provider: { getMigrations: async () => migrationsOf('postgres') } }).migrateTo('016_own_parents_unlocked');
    const down = await rowsOf(before.storage.db, teamId);
    await before.storage.close();
    const after = await served(before.storageEnv);

    // Assert
    expect(error).toBeUndefined();
    expect(down).toEqual(written);
    expect(await rowsOf(after.storage.db, teamId)).toEqual(written);
    expect(listedBefore?.map((enrolment) => enrolment.experiment)).toEqual(['first', 'second']);
    expect(await listed(after.baseUrl)).toEqual(listedBefore);
  });
});
