import { Migrator, sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { migrationsOf, type Storage } from '../../server/storage/database';
import { engines } from '../support/engines';
import { enrolledTeam } from '../support/enrolled-team';
import type { StorageEnv } from '../support/storage';
import { startServer } from '../support/server';

/**
 * Migration 013 (PostgreSQL): enrolments and exclusions name their participant with their team.
 * A row naming another team's participant is refused; deleting a participant finds its rows by
 * their unique keys' index — not by reading the whole tables — and deletes them; rows written
 * before are kept through down and up.
 */
describe.runIf(engines.includes('postgres'))('migration 013_participant_keys on postgres storage', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const served = (storageEnv?: StorageEnv) => startServer({ engine: 'postgres', storageEnv, closeWith: cleanups });


  /** A team with a running experiment and three participants enrolled, the first of them excluded from a second experiment. */
  async function enrolled(storage: Storage, baseUrl: string, name: string) {
    const { teamId, idOf } = await enrolledTeam(storage, baseUrl, name, ['exp', 'other'], ['exp']);
    const participant = await idOf('participants', 'p0');
    const other = await idOf('experiments', 'other');
    await sql`insert into exclusions (team_id, participant_id, experiment_id) values (${teamId}, ${participant}, ${other})`.execute(storage.db);
    return { teamId, participant, other };
  }

  const rowsOf = async (storage: Storage, teamId: number) => {
    const { rows } = await sql<{ enrolments: number; exclusions: number; conversions: number }>`
      select (select count(*)::int from enrolments where team_id = ${teamId}) as enrolments,
        (select count(*)::int from exclusions where team_id = ${teamId}) as exclusions,
        (select count(*)::int from conversions where team_id = ${teamId}) as conversions`.execute(storage.db);
    return rows[0]!;
  };

  const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (error: { code?: string; constraint?: string }) => ({ code: error.code, constraint: error.constraint }));

  it("when an enrolment or an exclusion names another team's participant, then it is refused", async () => {
    // Arrange
    const { storage, baseUrl } = await served();
    const mine = await enrolled(storage, baseUrl, 'mine');
    const theirs = await enrolled(storage, baseUrl, 'theirs');
    const variant = (await sql<{ id: number }>`select id from variants where experiment_id = ${mine.other} limit 1`.execute(storage.db)).rows[0]!.id;

    // Act
    const enrolment = await refusal(
      sql`insert into enrolments (team_id, participant_id, experiment_id, variant_id, enrolled_at) values (${mine.teamId}, ${theirs.participant}, ${mine.other}, ${variant}, now())`.execute(storage.db),
    );
    const exclusion = await refusal(sql`insert into exclusions (team_id, participant_id, experiment_id) values (${theirs.teamId}, ${mine.participant}, ${theirs.other})`.execute(storage.db));

    // Assert
    expect(enrolment).toEqual({ code: '23503', constraint: 'enrolments_participant_fkey' });
    expect(exclusion).toEqual({ code: '23503', constraint: 'exclusions_participant_fkey' });
  });

  it('when a participant is deleted, then its enrolments and exclusions are found through an index and go with it', async () => {
    // Arrange: a connection that reports the plan of every statement, the foreign keys' own included, and plans no sequential scan where an index serves
    const { storage, baseUrl, storageEnv } = await served();
    const { teamId, participant } = await enrolled(storage, baseUrl, 'erased');
    const before = await rowsOf(storage, teamId);
    const client = new pg.Client({ connectionString: storageEnv.DATABASE_URL });
    await client.connect();
    cleanups.push(() => client.end());
    const plans: string[] = [];
    client.on('notice', (notice) => plans.push(notice.message ?? ''));
    await client.query(`load 'auto_explain'; set auto_explain.log_min_duration = 0; set auto_explain.log_nested_statements = on;
      set auto_explain.log_level = notice; set enable_seqscan = off`);

    // Act
    await client.query('delete from participants where team_id = $1 and id = $2', [teamId, participant]);

    // Assert
    // exclusions' cascade is PostgreSQL's own; enrolments' is one statement over the deleted participants (014_set_based_keys).
    const cascades = plans.filter((plan) => /delete from (only "public"\."exclusions"|enrolments c using deleted)/i.test(plan));
    expect(cascades).toHaveLength(2);
    // The index is searched from the team and the participant, not read whole (a scan with participant_id as a filter, or no index at all).
    for (const plan of cascades) expect(plan).toMatch(/Index Cond: \(\(team_id = [^)]*\) AND \(participant_id = /);
    expect(before).toEqual({ enrolments: 3, exclusions: 1, conversions: 3 });
    expect(await rowsOf(storage, teamId)).toEqual({ enrolments: 2, exclusions: 0, conversions: 2 });
  });

  it('when migrated down and up again, then every enrolment and exclusion is kept', async () => {
    // Arrange
    const before = await served();
    const { teamId } = await enrolled(before.storage, before.baseUrl, 'kept');
    const written = await rowsOf(before.storage, teamId);

    // Act: down to 012, then opened again (up to the latest)
    const { error } = await new Migrator({ db: before.storage.db, provider: { getMigrations: async () => migrationsOf('postgres') } }).migrateTo('012_counter_keys');
    const down = await rowsOf(before.storage, teamId);
    await before.storage.close();
    const after = await served(before.storageEnv);

    // Assert
    expect(error).toBeUndefined();
    expect(down).toEqual(written);
    expect(await rowsOf(after.storage, teamId)).toEqual(written);
  });
});
