import { describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

type IngestRequest = components['schemas']['IngestRequest'];

function keys(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);
}

describe.each(engines)('guardrails and roles on %s', (engine) => {
  const server = useServer(engine);

  async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    const { data, error, response } = await call;
    if (response.status !== 200) throw new Error(`${response.url} answered ${response.status}: ${JSON.stringify(error)}`);
    return data!;
  }

  /** A team with events `purchase`, `errors` (decrease) and `zoom`. */
  async function teamWithEvents(): Promise<TestTeam> {
    const team = await server().newTeam();
    const path = { team: team.id };
    await ok(team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } }));
    await ok(team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'errors', direction: 'decrease' } }));
    await ok(team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'zoom' } }));
    return team;
  }

  const createExperiment = (team: TestTeam, body: components['schemas']['ExperimentCreate']) => team.api.POST('/api/teams/{team}/experiments', { params: { path: { team: team.id } }, body });
  const getExperiment = (team: TestTeam) => ok(team.api.GET('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: team.id, experiment: 'exp' } } }));
  const putExperiment = (team: TestTeam, body: components['schemas']['ExperimentUpdate']) => team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: team.id, experiment: 'exp' } }, body });

  it('when an experiment is created and changed with guardrails, then every read answers them in order, and [] without', async () => {
    // Arrange
    const team = await teamWithEvents();

    // Act
    const created = await ok(createExperiment(team, { key: 'exp', event: 'purchase', guardrails: ['zoom', 'errors'] }));
    const read = await getExperiment(team);
    const changed = await ok(putExperiment(team, { guardrails: ['errors'] }));
    const plain = await ok(createExperiment(team, { key: 'plain', event: 'purchase' }));

    // Assert
    expect(created.data.guardrails).toEqual(['zoom', 'errors']);
    expect(read.data.guardrails).toEqual(['zoom', 'errors']);
    expect(changed.data.guardrails).toEqual(['errors']);
    expect((await getExperiment(team)).data.guardrails).toEqual(['errors']);
    expect(plain.data.guardrails).toEqual([]);
  });

  it('when guardrails name an unknown event, the goal, or repeat one, then 404 or 400 names the field and nothing is stored', async () => {
    // Arrange
    const team = await teamWithEvents();
    await ok(createExperiment(team, { key: 'exp', event: 'purchase', guardrails: ['errors'] }));

    // Act
    const unknown = await createExperiment(team, { key: 'other', event: 'purchase', guardrails: ['errors', 'nope'] });
    const goal = await createExperiment(team, { key: 'other', event: 'purchase', guardrails: ['purchase'] });
    const repeated = await createExperiment(team, { key: 'other', event: 'purchase', guardrails: ['errors', 'errors'] });
    const putGoal = await putExperiment(team, { guardrails: ['zoom', 'purchase'] });
    const goalOntoGuardrail = await putExperiment(team, { event: 'errors' });
    const putUnknown = await putExperiment(team, { guardrails: ['nope'] });

    // Assert
    expectProblem(unknown.response, unknown.error, 404, 'Not Found');
    expect((unknown.error as { detail: string }).detail).toContain('/body/guardrails/1');
    expectProblem(goal.response, goal.error, 400, 'Bad Request', ['/body/guardrails']);
    expectProblem(repeated.response, repeated.error, 400, 'Bad Request', ['/body/guardrails']);
    expectProblem(putGoal.response, putGoal.error, 400, 'Bad Request', ['/body/guardrails']);
    expectProblem(goalOntoGuardrail.response, goalOntoGuardrail.error, 400, 'Bad Request', ['/body/event']);
    expectProblem(putUnknown.response, putUnknown.error, 404, 'Not Found');
    const list = await ok(team.api.GET('/api/teams/{team}/experiments', { params: { path: { team: team.id } } }));
    expect(list.data.map((e) => e.key)).toEqual(['exp']);
    expect((await getExperiment(team)).data).toMatchObject({ event: 'purchase', guardrails: ['errors'] });
  });

  it('when a variant raises a decrease guardrail, then the results give each event its role and the variant guardrail_violated', async () => {
    // Arrange: errors is a guardrail (decrease); the variant errs for 150 of 400, the control for 40 of 400
    const team = await teamWithEvents();
    const path = { team: team.id, experiment: 'exp' };
    await ok(createExperiment(team, { key: 'exp', event: 'purchase', guardrails: ['errors'] }));
    for (const [i, key] of ['control', 'treatment'].entries()) await ok(team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path }, body: { key, control: i === 0 } }));
    await ok(team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path } }));
    const enrol = async (variant: string, participants: string[], erring: number) => {
      const items = participants.map((participant, i): IngestRequest => ({ participant, experiment: 'exp', variant, ...(i < erring ? { event: 'errors' } : {}) }));
      const { data } = await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path: { team: team.id } }, body: { items } });
      expect(data?.data.every((outcome) => outcome.status === 200)).toBe(true);
    };
    await enrol('control', keys('c', 400), 40);
    await enrol('treatment', keys('t', 400), 150);

    // Act
    const read = (await ok(team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path, query: { events: ['zoom', 'errors', 'purchase'] } } }))).data;

    // Assert
    expect(read.events.map((e) => [e.event, e.role, e.direction])).toEqual([
      ['zoom', 'secondary', 'increase'],
      ['errors', 'guardrail', 'decrease'],
      ['purchase', 'goal', 'increase'],
    ]);
    const errors = read.events[1]!.variants;
    expect(errors[0]).toMatchObject({ variant: 'control', always_valid_p_value: null, adjusted_p_value: null, corrected_verdict: null });
    expect(errors[1]).toMatchObject({ variant: 'treatment', corrected_verdict: 'guardrail_violated' });
    expect(errors[1]!.always_valid_p_value).toBeLessThan(0.05);
    expect(errors[1]!.adjusted_p_value).toBe(errors[1]!.always_valid_p_value);
    expect(errors[1]!.decision).toMatchObject({ metric: 'unique_conversion_rate', test: 'one_sided', correction: 'none', verdict: 'guardrail_violated', always_valid_p_value: errors[1]!.always_valid_p_value });
    expect(read.events[2]!.variants[1]!.decision).toMatchObject({ test: 'two_sided', correction: 'holm' });
    // The uncorrected verdict is blind to the direction: more errors read as "better".
    expect(errors[1]!.verdict).toBe('variant_better');
    expect(read.events[2]!.variants[1]).toMatchObject({ corrected_verdict: 'collecting', always_valid_p_value: null });
    // The guardrail's history: its last day carries today's corrected verdict; a secondary event's days carry none
    const history = async (event: string) => (await ok(team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path, query: { history_event: event } } }))).data.history;
    const lastDay = (await history('errors')).days.at(-1)!.variants;
    expect(lastDay.map((v) => v.corrected_verdict)).toEqual([null, 'guardrail_violated']);
    expect((await history('zoom')).days.every((day) => day.variants.every((v) => v.corrected_verdict === null))).toBe(true);
  });

  it('when two variants beat the control on the goal, then their adjusted p-values are Holm over both, whichever events are read', async () => {
    // Arrange: purchase 40 of 400 in the control, 90 and 85 of 400 in the variants
    const team = await teamWithEvents();
    const path = { team: team.id, experiment: 'exp' };
    await ok(createExperiment(team, { key: 'exp', event: 'purchase' }));
    for (const [i, key] of ['control', 'one', 'two'].entries()) await ok(team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path }, body: { key, control: i === 0 } }));
    await ok(team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path } }));
    for (const [variant, buying] of [['control', 40], ['one', 90], ['two', 85]] as const) {
      const items = keys(variant, 400).map((participant, i): IngestRequest => ({ participant, experiment: 'exp', variant, ...(i < buying ? { event: 'purchase' } : {}) }));
      await ok(team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path: { team: team.id } }, body: { items } }));
    }
    const read = async (events?: string[]) => (await ok(team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path, query: events ? { events } : {} } }))).data;

    // Act
    const alone = await read();
    const all = await read(['zoom', 'purchase', 'errors']);

    // Assert
    const [, one, two] = alone.events[0]!.variants;
    const [small, large] = [one!, two!].sort((a, b) => a.always_valid_p_value! - b.always_valid_p_value!);
    expect(small!.adjusted_p_value).toBeCloseTo(Math.min(1, 2 * small!.always_valid_p_value!), 12);
    expect(large!.adjusted_p_value).toBeCloseTo(Math.max(small!.adjusted_p_value!, large!.always_valid_p_value!), 12);
    expect(alone.events[0]!.variants.slice(1).map((v) => v.corrected_verdict)).toEqual(['variant_better', 'variant_better']);
    expect(all.events[1]!.variants).toEqual(alone.events[0]!.variants);
  });

  it('when the guardrail event is deleted, then the experiment no longer lists it', async () => {
    // Arrange
    const team = await teamWithEvents();
    await ok(createExperiment(team, { key: 'exp', event: 'purchase', guardrails: ['zoom', 'errors'] }));

    // Act
    await ok(team.api.DELETE('/api/teams/{team}/events/{event}', { params: { path: { team: team.id, event: 'zoom' } } }));

    // Assert
    expect((await getExperiment(team)).data.guardrails).toEqual(['errors']);
  });
});
