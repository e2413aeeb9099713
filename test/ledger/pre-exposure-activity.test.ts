// Every event a participant sends is kept as its pre-exposure history (CUPED), per participant ×
// event × UTC day — `enrol: false` and participants enrolled nowhere too — and days no window
// can read any more are swept. Through the real server, on both engines.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { sweepPreExposureActivity } from '../../server/ledger/pre-exposure-sweep';
import { addDays } from '../../domain/days';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment, ingestOk } from '../support/fixtures';
import type { TestTeam } from '../support/team';

const today = () => new Date().toISOString().slice(0, 10);

describe.each(engines)('pre-exposure activity on %s', (engine) => {
  const server = useServer(engine);

  /** The team's activity rows as [participant, event, day, count, value in micro-units], sorted. */
  async function activityOf(team: TestTeam): Promise<Array<[string, string, string, number, string]>> {
    const { rows } = await sql<{ participant: string; event: string; day: string; count: number | string; value: number | string }>`
      select p.key as participant, e.key as event, a.day, a.count, a.value from pre_exposure_activity a
      join participants p on p.team_id = a.team_id and p.id = a.participant_id join events e on e.id = a.event_id
      where a.team_id = ${team.id}`.execute(server().storage.db);
    return rows.map((r): [string, string, string, number, string] => [r.participant, r.event, r.day, Number(r.count), BigInt(r.value).toString()]).sort((a, b) => (a.join() < b.join() ? -1 : 1));
  }

  it('when participants send events — enrolled, with enrol: false, in no experiment, single and in batches — then each participant × event × day keeps their number and value sum', async () => {
    // Arrange: an experiment on `goal`; `spend` a value event no experiment uses
    const team = await server().newTeam();
    await createExperiment(team, 'one');
    await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'spend', type: 'value' } });
    const before = today();

    // Act
    await ingestOk(team, { participant: 'enrolled', event: 'goal' });
    await ingestOk(team, { participant: 'enrolled', event: 'goal' });
    await ingestOk(team, { participant: 'outsider', event: 'goal', enrol: false });
    await ingestOk(team, { participant: 'outsider', event: 'spend', value: 2.5, enrol: false });
    const batch = await team.ingest.POST('/api/teams/{team}/ingest/batch', {
      params: { path: { team: team.id } },
      body: {
        items: [
          { participant: 'outsider', event: 'spend', value: 1.000001, enrol: false },
          { participant: 'outsider', event: 'spend', value: -0.5, enrol: false },
          { participant: 'newcomer', event: 'spend', value: 7 },
          { participant: 'exposed', experiment: 'one' },
        ],
      },
    });
    const after = today();

    // Assert: an exposure without an event adds nothing
    expect(batch.response.status).toBe(200);
    const rows = await activityOf(team);
    const day = rows[0]![2];
    expect([before, after]).toContain(day);
    expect(rows).toEqual([
      ['enrolled', 'goal', day, 2, '0'],
      ['newcomer', 'spend', day, 1, '7000000'],
      ['outsider', 'goal', day, 1, '0'],
      ['outsider', 'spend', day, 3, '3000001'],
    ]);
  });

  it("when the sweep runs, then a team keeps the days its longest window of a draft or running experiment reads, a stopped experiment's window keeps nothing, and a team without one keeps today only", async () => {
    // Arrange: three teams, each with one participant's activity on `goal` today, 14, 15 and 30 days ago
    const windowed = await server().newTeam();
    await createExperiment(windowed, 'short'); // 14 days by default
    await createExperiment(windowed, 'draft', { start: false });
    await windowed.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: windowed.id, experiment: 'draft' } }, body: { pre_exposure_days: 15 } });
    const stopped = await server().newTeam();
    await createExperiment(stopped, 'done');
    await stopped.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: stopped.id, experiment: 'done' } }, body: { pre_exposure_days: 60 } });
    await stopped.api.POST('/api/teams/{team}/experiments/{experiment}/stop', { params: { path: { team: stopped.id, experiment: 'done' } } });
    const bare = await server().newTeam();
    await bare.api.POST('/api/teams/{team}/events', { params: { path: { team: bare.id } }, body: { key: 'goal' } });
    const now = today();
    const days = [now, addDays(now, -14), addDays(now, -15), addDays(now, -30)];
    for (const team of [windowed, stopped, bare]) {
      await ingestOk(team, { participant: 'p', event: 'goal', enrol: false });
      const { rows } = await sql<{ participant_id: number; event_id: number }>`select participant_id, event_id from pre_exposure_activity where team_id = ${team.id}`.execute(server().storage.db);
      for (const day of days.slice(1)) {
        await sql`insert into pre_exposure_activity (team_id, participant_id, event_id, day, count, value) values (${team.id}, ${rows[0]!.participant_id}, ${rows[0]!.event_id}, ${day}, 1, '0')`.execute(server().storage.db);
      }
    }

    // Act
    await sweepPreExposureActivity(server().storage, now);
    const kept = async (team: TestTeam) => (await activityOf(team)).map((row) => row[2]).sort().reverse();

    // Assert: the draft's 15 days are the longest window of the first team
    expect(await kept(windowed)).toEqual([now, addDays(now, -14), addDays(now, -15)]);
    expect(await kept(stopped)).toEqual([now]);
    expect(await kept(bare)).toEqual([now]);
  });
});
