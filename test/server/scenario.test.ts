import { describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { expectedVariant, inParallel } from '../support/fixtures';
import type { TestTeam } from '../support/team';

type IngestRequest = components['schemas']['IngestRequest'];
type IngestOutcome = components['schemas']['IngestOutcome'];
type VariantStatistics = components['schemas']['VariantStatistics'];

const PARTICIPANTS = 1000;
const IN_FLIGHT = 12;

async function ingest(team: TestTeam, body: IngestRequest): Promise<IngestOutcome> {
  const { data, response, error } = await team.ingest.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body });
  if (response.status !== 200) throw new Error(`ingest ${JSON.stringify(body)} answered ${response.status}: ${JSON.stringify(error)}`);
  return data!.data;
}

async function statistics(team: TestTeam, variant: string): Promise<VariantStatistics> {
  const { data, response } = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', {
    params: { path: { team: team.id, experiment: 'checkout', variant } },
  });
  expect(response.status).toBe(200);
  return data!.data;
}

describe.each(engines)('an experiment from start to stop on %s', (engine) => {
  const server = useServer(engine);

  it('when 1 000 participants are ingested by hash and the experiment stops, then the statistics match what was sent and then freeze', async () => {
    // Arrange: team → events → experiment with control and treatment → start.
    const team = await server().newTeam();
    const path = { team: team.id };
    for (const key of ['purchase', 'view']) {
      expect((await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key } })).response.status).toBe(200);
    }
    const created = await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'checkout', event: 'purchase' } });
    expect(created.data?.data.status).toBe('draft');
    for (const variant of [{ key: 'control', control: true }, { key: 'treatment' }]) {
      const added = await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'checkout' } }, body: variant });
      expect(added.data?.data.key).toBe(variant.key);
    }
    const listed = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'checkout' } } });
    expect(listed.data?.data.map((v) => [v.key, v.control, v.traffic])).toEqual([
      ['control', true, 50],
      ['treatment', false, 50],
    ]);
    const started = await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'checkout' } } });
    expect(started.data?.data.status).toBe('running');
    const config = await team.ingest.GET('/api/teams/{team}/config', { params: { path } });
    expect(config.data?.data.experiments.map((e) => e.key)).toEqual(['checkout']);
    const { seed, variants } = config.data!.data.experiments[0];

    // Act: 1 000 distinct participants through the ingest key, ~14 % with a purchase; every second buyer buys again.
    const people = Array.from({ length: PARTICIPANTS }, (_, i) => ({
      key: i % 3 === 0 ? `José-${i}` : i % 3 === 1 ? `user-${i}@example.com` : `用户-${i}`,
      buys: i % 7 === 0,
      buysAgain: i % 14 === 0,
    }));
    const answers = await inParallel(people, IN_FLIGHT, (person) => ingest(team, person.buys ? { participant: person.key, event: 'purchase' } : { participant: person.key }));
    const again = people.filter((person) => person.buysAgain);
    await inParallel(again, IN_FLIGHT, (person) => ingest(team, { participant: person.key, event: 'purchase' }));

    // What was sent, per variant, read from the answers' assignments.
    const sent: Record<string, { n: number; x: number; c: number }> = { control: { n: 0, x: 0, c: 0 }, treatment: { n: 0, x: 0, c: 0 } };
    answers.forEach((answer, i) => {
      expect(answer.participant.key).toBe(people[i].key);
      expect(answer.assignments).toHaveLength(1);
      const [assignment] = answer.assignments;
      expect(assignment).toMatchObject({ experiment: 'checkout', status: 'running' });
      expect(assignment.variant).toBe(expectedVariant(seed, people[i].key, variants));
      const tally = sent[assignment.variant];
      tally.n += 1;
      if (people[i].buys) tally.x += 1;
      if (people[i].buys) tally.c += people[i].buysAgain ? 2 : 1;
    });

    // Assert: the statistics of both variants match what was sent.
    const control = await statistics(team, 'control');
    const treatment = await statistics(team, 'treatment');
    expect(control.participants + treatment.participants).toBe(PARTICIPANTS);
    expect(control.srm).toEqual(treatment.srm);
    // Pearson's χ² of the 50/50 split as sent; its p-value is as random as the seed, so only its range is checked.
    expect(control.srm.chi_square).toBeCloseTo((sent.control.n - sent.treatment.n) ** 2 / PARTICIPANTS, 9);
    expect(control.srm.p_value).toBeGreaterThan(0);
    expect(control.srm.p_value).toBeLessThanOrEqual(1);

    for (const stats of [control, treatment]) {
      const tally = sent[stats.variant];
      expect(stats).toMatchObject({ experiment: 'checkout', control: 'control', participants: tally.n });
      expect(stats.events.map((e) => e.event)).toEqual(['purchase', 'view']);
      const [purchase, view] = stats.events;
      expect(purchase).toMatchObject({ type: 'unique', unique_conversions: tally.x, conversions: tally.c });
      expect(purchase.unique_conversion_rate).toBeCloseTo(tally.x / tally.n, 12);
      expect(purchase.count_conversion_rate).toBeCloseTo(tally.c / tally.n, 12);
      expect(view).toMatchObject({ conversions: 0, unique_conversions: 0, unique_conversion_rate: 0, count_conversion_rate: 0 });
    }
    const [controlPurchase] = control.events;
    expect(controlPurchase).toMatchObject({ uplift: 0, z_score: 0, p_value: 1, confidence: 0, power: null, difference_interval: null, chance_to_beat_control: null });
    const [treatmentPurchase] = treatment.events;
    const pC = sent.control.x / sent.control.n;
    const pV = sent.treatment.x / sent.treatment.n;
    expect(treatmentPurchase.uplift).toBeCloseTo((pV - pC) / pC, 9);
    expect(treatmentPurchase.confidence).toBeCloseTo(1 - treatmentPurchase.p_value!, 12);

    const teamBefore = await team.api.GET('/api/teams/{team}', { params: { path } });
    expect(teamBefore.data?.data.participants_count).toBe(PARTICIPANTS);

    // Act: stop, then keep ingesting — new participants and old buyers, with purchases.
    const stopped = await team.api.POST('/api/teams/{team}/experiments/{experiment}/stop', { params: { path: { ...path, experiment: 'checkout' } } });
    expect(stopped.data?.data.status).toBe('stopped');
    const late = [
      ...Array.from({ length: 50 }, (_, i) => ({ participant: `late-${i}`, event: 'purchase' })),
      ...people.slice(0, 50).map((person) => ({ participant: person.key, event: 'purchase' })),
    ];
    const lateAnswers = await inParallel(late, IN_FLIGHT, (body) => ingest(team, body));

    // Assert: nothing of it reached the stopped experiment, and the config no longer lists it.
    for (const answer of lateAnswers) expect(answer.assignments).toEqual([]);
    expect(await statistics(team, 'control')).toEqual(control);
    expect(await statistics(team, 'treatment')).toEqual(treatment);
    const configAfter = await team.ingest.GET('/api/teams/{team}/config', { params: { path } });
    expect(configAfter.data?.data.experiments).toEqual([]);
    const teamAfter = await team.api.GET('/api/teams/{team}', { params: { path } });
    expect(teamAfter.data?.data.participants_count).toBe(PARTICIPANTS + 50);
  }, 180_000);
});
