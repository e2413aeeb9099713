import { afterEach, describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { confidenceSequence } from '../../domain/sequential';
import { setClock } from '../../server/storage/values';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

type ExperimentResults = components['schemas']['ExperimentResults'];
type IngestRequest = components['schemas']['IngestRequest'];

/** `count` participant keys `prefix-0000`, `prefix-0001`, … */
function keys(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);
}

describe.each(engines)('experiment results on %s', (engine) => {
  const server = useServer(engine);
  let restoreClock: (() => void) | undefined;
  afterEach(() => restoreClock?.());

  /** The clock of the server (in this process) at `at`, until the test ends. */
  function clockAt(at: string) {
    restoreClock = setClock(() => new Date(at));
  }

  async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    const { data, error, response } = await call;
    if (response.status !== 200) throw new Error(`${response.url} answered ${response.status}: ${JSON.stringify(error)}`);
    return data!;
  }

  /** A team with events `purchase` (the goal) and `zoom`, and experiment `exp` with the given variants (the first the control), started. */
  async function running(variants: string[]): Promise<TestTeam> {
    const team = await server().newTeam();
    const path = { team: team.id };
    await ok(team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } }));
    await ok(team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'zoom', type: 'count' } }));
    await ok(team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'purchase' } }));
    for (const [i, key] of variants.entries()) {
      await ok(team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { team: team.id, experiment: 'exp' } }, body: { key, control: i === 0 } }));
    }
    await ok(team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { team: team.id, experiment: 'exp' } } }));
    return team;
  }

  /** Enrols `participants` in `variant`, the first `converters` of them with `purchase`, in batches of 500. */
  async function enrol(team: TestTeam, variant: string, participants: string[], converters = 0) {
    const items = participants.map((participant, i): IngestRequest => ({ participant, experiment: 'exp', variant, ...(i < converters ? { event: 'purchase' } : {}) }));
    for (let start = 0; start < items.length; start += 500) {
      const { data } = await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path: { team: team.id } }, body: { items: items.slice(start, start + 500) } });
      expect(data?.data.every((outcome) => outcome.status === 200)).toBe(true);
    }
  }

  async function results(team: TestTeam, query: { history_event?: string; events?: string[]; history_days?: number } = {}): Promise<ExperimentResults> {
    return (await ok(team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { team: team.id, experiment: 'exp' }, query } }))).data;
  }

  it('when variants did better, worse, the same, or have too few participants, then each gets its verdict from the always-valid sequence', async () => {
    // Arrange: 400 in the control with 40 purchases; better 160 of 400, worse 5 of 400, same 44 of 400, few 30 of 60
    const team = await running(['control', 'better', 'few', 'same', 'worse']);
    await enrol(team, 'control', keys('c', 400), 40);
    await enrol(team, 'better', keys('b', 400), 160);
    await enrol(team, 'worse', keys('w', 400), 5);
    await enrol(team, 'same', keys('s', 400), 44);
    await enrol(team, 'few', keys('f', 60), 30);

    // Act
    const read = await results(team, { events: ['purchase', 'zoom'] });

    // Assert: one entry per event asked for, in that order; the control first in each, then by key
    expect(read.experiment).toBe('exp');
    expect(read.status).toBe('running');
    expect(read.goal).toBe('purchase');
    expect(read.control).toBe('control');
    expect(read.participants).toBe(1660);
    expect(read.method).toEqual({ name: 'msprt_normal_mixture', alpha: 0.05, mixing_sd: 0.02, means_effect_size: 0.1, minimum_participants: 100 });
    expect(read.events.map((e) => [e.event, e.goal])).toEqual([['purchase', true], ['zoom', false]]);
    const purchase = read.events[0]!;
    expect(purchase.variants.map((v) => v.variant)).toEqual(['control', 'better', 'few', 'same', 'worse']);
    expect(Object.fromEntries(purchase.variants.map((v) => [v.variant, v.verdict]))).toEqual({
      control: null,
      better: 'variant_better',
      few: 'collecting',
      same: 'no_difference',
      worse: 'variant_worse',
    });
    // The sequence is the method's, on the counts stored, and wider than the fixed-horizon interval
    for (const entry of purchase.variants.filter((v) => !v.control)) {
      const arm = { participants: entry.participants, uniqueConversions: entry.statistics.unique_conversions };
      expect(entry.confidence_sequence).toEqual(confidenceSequence(arm, { participants: 400, uniqueConversions: 40 }));
      expect(entry.difference).toBeCloseTo(entry.statistics.unique_conversions / entry.participants - 0.1, 12);
      expect(entry.confidence_sequence!.upper - entry.confidence_sequence!.lower).toBeGreaterThan(entry.statistics.difference_interval!.upper - entry.statistics.difference_interval!.lower);
    }
    // A fixed-horizon p below 0.05 (few: 50 % against 10 %) is not enough for a verdict below 100 participants
    expect(purchase.variants.find((v) => v.variant === 'few')!.statistics.p_value).toBeLessThan(0.05);
    // Nobody recorded zoom: no variance, so collecting
    expect(read.events[1]!.variants.filter((v) => !v.control).every((v) => v.verdict === 'collecting' && v.confidence_sequence === null)).toBe(true);
  });

  it('when read, then each statistics entry is what the variant statistics read gives, and the sample-ratio check is the same', async () => {
    const team = await running(['control', 'treatment']);
    await enrol(team, 'control', keys('c', 120), 12);
    await enrol(team, 'treatment', keys('t', 150), 30);

    const read = await results(team, { events: ['zoom', 'purchase'] });

    expect(read.events.map((event) => event.event)).toEqual(['zoom', 'purchase']);
    for (const variant of ['control', 'treatment']) {
      const statistics = (await ok(team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', { params: { path: { team: team.id, experiment: 'exp', variant } } }))).data;
      expect(read.srm).toEqual(statistics.srm);
      for (const event of read.events) expect(event.variants.find((v) => v.variant === variant)!.statistics).toEqual(statistics.events.find((e) => e.event === event.event));
    }
  });

  it('when participants are not split as the traffic says, then the sample-ratio warning is on', async () => {
    const team = await running(['control', 'treatment']);
    await enrol(team, 'control', keys('c', 300));
    await enrol(team, 'treatment', keys('t', 200));

    const read = await results(team);

    expect(read.srm.p_value).toBeLessThan(0.001);
    expect(read.srm_warning).toBe(true);
  });

  it('when the split is as expected, then the sample-ratio warning is off', async () => {
    const team = await running(['control', 'treatment']);
    await enrol(team, 'control', keys('c', 200));
    await enrol(team, 'treatment', keys('t', 210));

    expect((await results(team)).srm_warning).toBe(false);
  });

  it('when the experiment ran over days, then the history sums each day into the counts at its end, gaps filled, an erased participant taken out on the day it was erased', async () => {
    // Arrange: started on day 1; participants on days 1, 2 and 4 (none on day 3); one leaves on day 4
    clockAt('2026-03-01T10:00:00.000Z');
    const team = await running(['control', 'treatment']);
    await enrol(team, 'control', keys('c1-', 100), 10);
    await enrol(team, 'treatment', keys('t1-', 100), 20);
    clockAt('2026-03-02T23:59:59.000Z');
    await enrol(team, 'control', keys('c2-', 50), 5);
    await enrol(team, 'treatment', keys('t2-', 50), 15);
    clockAt('2026-03-04T00:00:00.000Z');
    await enrol(team, 'treatment', keys('t4-', 10), 1);
    // Erased (a data-deletion request) — a withdrawal would keep it, by intention to treat
    await ok(team.api.DELETE('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 't1--0000' } } }));
    clockAt('2026-03-05T12:00:00.000Z');
    await ok(team.api.POST('/api/teams/{team}/experiments/{experiment}/stop', { params: { path: { team: team.id, experiment: 'exp' } } }));
    clockAt('2026-03-09T00:00:00.000Z');

    // Act
    const read = await results(team);

    // Assert
    expect(read.runtime).toEqual({ started_at: '2026-03-01T10:00:00.000Z', stopped_at: '2026-03-05T12:00:00.000Z', days_running: 4.08 });
    expect(read.history.event).toBe('purchase');
    const days = read.history.days.map((d) => [d.day, d.variants.map((v) => [v.variant, v.participants, v.unique_conversions])]);
    expect(days).toEqual([
      ['2026-03-01', [['control', 100, 10], ['treatment', 100, 20]]],
      ['2026-03-02', [['control', 150, 15], ['treatment', 150, 35]]],
      ['2026-03-03', [['control', 150, 15], ['treatment', 150, 35]]],
      ['2026-03-04', [['control', 150, 15], ['treatment', 159, 35]]],
    ]);
    const last = read.history.days.at(-1)!.variants.find((v) => v.variant === 'treatment')!;
    const now = read.events[0]!.variants.find((v) => v.variant === 'treatment')!;
    expect([last.participants, last.unique_conversions, last.difference, last.confidence_sequence]).toEqual([now.participants, now.statistics.unique_conversions, now.difference, now.confidence_sequence]);
    expect(read.history.days[0]!.variants[1]!.confidence_sequence).toEqual(confidenceSequence({ participants: 100, uniqueConversions: 20 }, { participants: 100, uniqueConversions: 10 }));
    expect(read.history.days.every((d) => d.variants[0]!.difference === null && d.variants[0]!.confidence_sequence === null)).toBe(true);
  });

  it('when history_event names another event, then the history is that event\'s', async () => {
    const team = await running(['control', 'treatment']);
    await enrol(team, 'control', keys('c', 5));
    const { data } = await team.ingest.POST('/api/teams/{team}/ingest/batch', {
      params: { path: { team: team.id } },
      body: { items: [{ participant: 'c-0000', experiment: 'exp', event: 'zoom' }, { participant: 'c-0000', experiment: 'exp', event: 'zoom' }, { participant: 'c-0001', experiment: 'exp', event: 'zoom' }] },
    });
    expect(data?.data.map((o) => o.status)).toEqual([200, 200, 200]);

    const read = await results(team, { history_event: 'zoom' });

    expect(read.history.event).toBe('zoom');
    expect(read.history.days.at(-1)!.variants.map((v) => [v.variant, v.participants, v.unique_conversions])).toEqual([['control', 5, 2], ['treatment', 0, 0]]);
  });

  it('when no events are asked for, then only the goal is described; when more than 20 or an unknown one, then 400 or 404 naming it', async () => {
    const team = await running(['control', 'treatment']);
    const url = `${server().baseUrl}/api/teams/${team.id}/experiments/exp/results`;
    const get = (query: string) => fetch(`${url}?${query}`, { headers: { authorization: `Bearer ${team.token}` } });

    const alone = await results(team);
    const both = (await (await get('events=zoom,purchase')).json()) as { data: ExperimentResults };

    expect(alone.events.map((event) => [event.event, event.goal])).toEqual([['purchase', true]]);
    expect(both.data.events.map((event) => [event.event, event.goal])).toEqual([['zoom', false], ['purchase', true]]);
    const tooMany = await get(`events=${Array.from({ length: 21 }, (_, i) => `e${i}`).join(',')}`);
    expectProblem(tooMany, await tooMany.json(), 400, 'Bad Request', ['/query/events']);
    const unknown = await get('events=purchase,nope');
    const problem = (await unknown.json()) as { detail: string };
    expectProblem(unknown, problem, 404, 'Not Found');
    expect(problem.detail).toBe(`No event 'nope' in team ${team.id}.`);
  });

  it('when history_days is less than the days counted, then the history is the last ones, each as cumulative as in the whole history', async () => {
    // Arrange: participants on five days
    clockAt('2026-04-01T10:00:00.000Z');
    const team = await running(['control', 'treatment']);
    for (let day = 1; day <= 5; day++) {
      clockAt(`2026-04-0${day}T10:00:00.000Z`);
      await enrol(team, 'control', keys(`c${day}-`, 10 * day), day);
      await enrol(team, 'treatment', keys(`t${day}-`, 10 * day), 2 * day);
    }

    // Act
    const whole = await results(team);
    const window = await results(team, { history_days: 2 });

    // Assert
    expect(whole.history.days.map((d) => d.day)).toEqual(['2026-04-01', '2026-04-02', '2026-04-03', '2026-04-04', '2026-04-05']);
    expect(window.history.days).toEqual(whole.history.days.slice(-2));
    expect(window.history.days[0]!.variants.map((v) => [v.variant, v.participants, v.unique_conversions])).toEqual([['control', 100, 10], ['treatment', 100, 20]]);
  });

  it('when the experiment is a draft, then the runtime is empty, verdicts wait for a control, and the history is empty', async () => {
    const team = await server().newTeam();
    const path = { team: team.id };
    await ok(team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } }));
    await ok(team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'purchase' } }));

    const read = await results(team);

    expect(read).toMatchObject({ status: 'draft', control: null, participants: 0, runtime: { started_at: null, stopped_at: null, days_running: null }, srm_warning: false, history: { event: 'purchase', days: [] } });
    expect(read.events.map((e) => e.variants)).toEqual([[]]);
  });

  it('when the experiment, the team or the history event is unknown, or the event is not a key, then 404 or 400 naming it', async () => {
    const team = await running(['control', 'treatment']);
    const unknownExperiment = await team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { team: team.id, experiment: 'nope' } } });
    expectProblem(unknownExperiment.response, unknownExperiment.error, 404, 'Not Found');
    expect(unknownExperiment.error?.detail).toBe(`No experiment 'nope' in team ${team.id}.`);
    const unknownEvent = await team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { team: team.id, experiment: 'exp' }, query: { history_event: 'nope' } } });
    expectProblem(unknownEvent.response, unknownEvent.error, 404, 'Not Found');
    expect(unknownEvent.error?.detail).toBe(`No event 'nope' in team ${team.id}.`);
    const badEvent = await team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { team: team.id, experiment: 'exp' }, query: { history_event: 'sign-up' } } });
    expectProblem(badEvent.response, badEvent.error, 400, 'Bad Request');
    expect(badEvent.error?.errors?.map((e) => e.path)).toEqual(['/query/history_event']);
    const otherTeam = await server().newTeam();
    const foreign = await otherTeam.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { team: team.id, experiment: 'exp' } } });
    expect(foreign.response.status).toBe(404);
  });
});
