// CUPED's sums stay exact when two server processes on one PostgreSQL database enrol and count the
// same participants at once: each variant's Σx, Σx² and Σxy equal what its enrolments' frozen
// covariates and their conversions add up to.
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { addDays } from '../../domain/days';
import { engines } from '../support/engines';
import { createExperiment, inParallel } from '../support/fixtures';
import { ingestOnce, startChild, stopChild, type ChildServer } from '../support/process';
import { startServer, type TestServer } from '../support/server';

const PARTICIPANTS = 150;
const INGESTS = 450;

describe.runIf(engines.includes('postgres'))('CUPED sums from two server processes on one postgres database', () => {
  let server: TestServer | undefined;
  const children: ChildServer[] = [];

  afterAll(async () => {
    for (const child of children) await stopChild(child);
    await server?.close();
  });

  it('when both enrol and count participants with a history at once, then every variant keeps Σx, Σx² and Σxy exactly', async () => {
    // Arrange: stored participants, each with 1 to 5 `goal`s yesterday
    server = await startServer('postgres');
    const team = await server.newTeam();
    await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'goal', type: 'count' } });
    await createExperiment(team, 'cuped', { event: 'goal' });
    const keys = Array.from({ length: PARTICIPANTS }, (_, i) => `p-${i}`);
    const created = await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path: { team: team.id } }, body: { items: keys.map((participant) => ({ participant, enrol: false })) } });
    expect(created.response.status).toBe(200);
    const db = server.storage.db;
    const yesterday = addDays(new Date().toISOString().slice(0, 10), -1);
    await sql`insert into pre_exposure_activity (team_id, participant_id, event_id, day, count, value)
      select p.team_id, p.id, e.id, ${yesterday}, 1 + cast(substr(p.key, 3) as integer) % 5, 0 from participants p join events e on e.team_id = p.team_id
      where p.team_id = ${team.id}`.execute(db);
    children.push(await startChild(server.storageEnv), await startChild(server.storageEnv));

    // Act: three goals per participant, alternating between the processes, 40 at a time
    const statuses = await inParallel([...Array(INGESTS).keys()], 40, async (i) => {
      const outcome = await ingestOnce(children[i % 2]!.baseUrl, team, { participant: keys[i % PARTICIPANTS]!, event: 'goal' });
      return outcome.kind === 'status' ? outcome.status : 0;
    });
    for (const child of children.splice(0)) await stopChild(child);

    // Assert: the counters against the sums of the rows, per variant
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    const { rows: expected } = await sql<{ variant_id: string; sum_x: string; sum_x2: string; sum_xy: string; enrolled: string }>`
      select n.variant_id, cast(sum(c.x) as text) as sum_x, cast(sum(c.x * c.x) as text) as sum_x2, cast(sum(c.x * v.count * 1000000) as text) as sum_xy, cast(count(*) as text) as enrolled
      from enrolments n join enrolment_covariates c on c.team_id = n.team_id and c.participant_id = n.participant_id and c.experiment_id = n.experiment_id
      join conversions v on v.team_id = n.team_id and v.participant_id = n.participant_id and v.experiment_id = n.experiment_id and v.event_id = c.event_id
      where n.team_id = ${team.id} group by n.variant_id order by n.variant_id`.execute(db);
    const { rows: counted } = await sql<{ variant_id: string; sum_x: string; sum_x2: string; sum_xy: string }>`
      select variant_id, cast(sum_x as text) as sum_x, cast(sum_x2 as text) as sum_x2, cast(sum_xy as text) as sum_xy from variant_event_counts where team_id = ${team.id} order by variant_id`.execute(db);
    expect(expected.reduce((total, row) => total + Number(row.enrolled), 0)).toBe(PARTICIPANTS);
    expect(counted.map((row) => [String(row.variant_id), BigInt(row.sum_x), BigInt(row.sum_x2), BigInt(row.sum_xy)])).toEqual(
      expected.map((row) => [String(row.variant_id), BigInt(row.sum_x), BigInt(row.sum_x2), BigInt(row.sum_xy)]),
    );
    // Every participant converted three times with its x = (1 + i % 5) goals
    const total = keys.reduce((sum, _, i) => sum + BigInt(1 + (i % 5)) * 1_000_000n * 3_000_000n, 0n);
    expect(counted.reduce((sum, row) => sum + BigInt(row.sum_xy), 0n)).toBe(total);
  });
});
