// `enrol: false` on ingest and on each batch item: the participant is enrolled nowhere, and its
// event is counted only where it was enrolled already (with `experiment`, only there). Both engines.
import { describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment, ingestOk } from '../support/fixtures';
import type { TestTeam } from '../support/team';

type IngestRequest = components['schemas']['IngestRequest'];

/** Participants and conversions of `goal` over both variants of an experiment. */
async function totals(team: TestTeam, experiment: string): Promise<{ participants: number; conversions: number }> {
  let participants = 0;
  let conversions = 0;
  for (const variant of ['control', 'treatment']) {
    const { data } = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', { params: { path: { team: team.id, experiment, variant } } });
    participants += data!.data.participants;
    conversions += data!.data.events.find((event) => event.event === 'goal')!.conversions;
  }
  return { participants, conversions };
}

async function experimentsOf(team: TestTeam, participant: string): Promise<string[]> {
  const { data } = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments', { params: { path: { team: team.id, participant } } });
  return data!.data.map((enrolment) => enrolment.experiment).sort();
}

async function batch(team: TestTeam, items: IngestRequest[]) {
  const { data, response } = await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path: { team: team.id } }, body: { items } });
  expect(response.status).toBe(200);
  return data!.data;
}

describe.each(engines)('ingest with enrol: false on %s', (engine) => {
  const server = useServer(engine);

  it('when a new participant sends an event with enrol: false, then it is created with its attributes but enrolled nowhere and nothing is counted', async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'one');
    await createExperiment(team, 'two');

    const data = await ingestOk(team, { participant: { key: 'new', attributes: { plan: 'pro' } }, event: 'goal', enrol: false });

    expect(data).toMatchObject({ participant: { key: 'new', attributes: { plan: 'pro' } }, assignments: [] });
    expect(await experimentsOf(team, 'new')).toEqual([]);
    expect(await totals(team, 'one')).toEqual({ participants: 0, conversions: 0 });
    expect(await totals(team, 'two')).toEqual({ participants: 0, conversions: 0 });
  });

  it('when the participant is enrolled in one of two running experiments, then enrol: false counts its event there only and enrols it in neither other', async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'one');
    await createExperiment(team, 'two');
    await ingestOk(team, { participant: 'seen', experiment: 'one' });

    const data = await ingestOk(team, { participant: 'seen', event: 'goal', enrol: false });

    expect(data.assignments.map((assignment) => assignment.experiment)).toEqual(['one']);
    expect(await experimentsOf(team, 'seen')).toEqual(['one']);
    expect(await totals(team, 'one')).toEqual({ participants: 1, conversions: 1 });
    expect(await totals(team, 'two')).toEqual({ participants: 0, conversions: 0 });
  });

  it('when enrol: false names an experiment, then the event counts there if the participant is enrolled there, and nowhere otherwise', async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'one');
    await createExperiment(team, 'two');
    await ingestOk(team, { participant: 'both' });

    await ingestOk(team, { participant: 'both', event: 'goal', experiment: 'two', enrol: false });
    const outsider = await ingestOk(team, { participant: 'outsider', event: 'goal', experiment: 'two', variant: 'treatment', enrol: false });

    expect(outsider.assignments).toEqual([]);
    expect(await experimentsOf(team, 'outsider')).toEqual([]);
    expect(await totals(team, 'one')).toEqual({ participants: 1, conversions: 0 });
    expect(await totals(team, 'two')).toEqual({ participants: 1, conversions: 1 });
  });

  it('when a batch mixes exposures and events with enrol: false, then only the exposures enrol and each event counts where its participant is enrolled', async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'one');
    await createExperiment(team, 'two');

    const items = await batch(team, [
      { participant: 'a', event: 'goal', enrol: false },
      { participant: 'a', experiment: 'one', variant: 'control' },
      { participant: 'a', event: 'goal', enrol: false },
      { participant: 'b', event: 'goal', enrol: false },
      { participant: 'b', event: 'goal', experiment: 'two', enrol: false },
    ]);

    expect(items.map((item) => item.status)).toEqual([200, 200, 200, 200, 200]);
    expect(items.map((item) => item.data!.assignments.map((assignment) => assignment.experiment))).toEqual([[], ['one'], ['one'], [], []]);
    expect(await experimentsOf(team, 'a')).toEqual(['one']);
    expect(await experimentsOf(team, 'b')).toEqual([]);
    expect(await totals(team, 'one')).toEqual({ participants: 1, conversions: 1 });
    expect(await totals(team, 'two')).toEqual({ participants: 0, conversions: 0 });
  });

  it('when enrol: false names an experiment that is not running, then 409 as without it, and nothing is stored', async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'draft', { start: false });

    const result = await team.ingest.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body: { participant: 'late', event: 'goal', experiment: 'draft', enrol: false } });

    expect(result.response.status).toBe(409);
    const read = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'late' } } });
    expect(read.response.status).toBe(404);
  });
});
