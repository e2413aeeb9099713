import { beforeAll, describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { inParallel } from '../support/fixtures';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

type VariantStatistics = components['schemas']['VariantStatistics'];
type EventStatistics = components['schemas']['EventStatistics'];
type IngestRequest = components['schemas']['IngestRequest'];

/** `count` participant keys `prefix-0000`, `prefix-0001`, … */
function keys(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);
}

/** An event entry with no data: counts 0 and every rate and comparison null. */
function emptyEvent(event: string, type: 'unique' | 'count'): EventStatistics {
  return {
    event,
    type,
    conversions: 0,
    unique_conversions: 0,
    count_conversion_rate: null,
    unique_conversion_rate: null,
    uplift: null,
    z_score: null,
    p_value: null,
    confidence: null,
    power: null,
    conversion_rate_interval: null,
    difference_interval: null,
    chance_to_beat_control: null,
    test: null,
    minimum_detectable_effect: null,
    participants_needed: null,
    means: type === 'unique' ? null : EMPTY_MEANS,
    regression_adjustment: null,
  };
}

/** The means of an arm without participants: every figure null. */
const EMPTY_MEANS = {
  mean: null,
  variance: null,
  control_mean: null,
  difference: null,
  standard_error: null,
  degrees_of_freedom: null,
  p_value: null,
  difference_interval: null,
  relative_uplift: null,
  relative_standard_error: null,
  relative_p_value: null,
  relative_interval: null,
  chance_to_beat_control: null,
  relative_chance_to_beat_control: null,
  minimum_detectable_effect: null,
  participants_needed: null,
};

const EVENT_FIELDS = [
  'chance_to_beat_control',
  'confidence',
  'conversion_rate_interval',
  'conversions',
  'count_conversion_rate',
  'difference_interval',
  'event',
  'means',
  'minimum_detectable_effect',
  'p_value',
  'participants_needed',
  'power',
  'regression_adjustment',
  'test',
  'type',
  'unique_conversion_rate',
  'unique_conversions',
  'uplift',
  'z_score',
];

describe.each(engines)('variant statistics on %s', (engine) => {
  const server = useServer(engine);

  /** A new team with the given events (the first is the goal) and a draft experiment `exp` judged by the first. */
  async function teamWithExperiment(events: Array<{ key: string; type?: 'unique' | 'count' }>): Promise<TestTeam> {
    const team = await server().newTeam();
    const path = { team: team.id };
    for (const event of events) {
      const { response } = await team.api.POST('/api/teams/{team}/events', { params: { path }, body: event });
      expect(response.status).toBe(200);
    }
    const { response } = await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: events[0]!.key } });
    expect(response.status).toBe(200);
    return team;
  }

  async function addVariant(team: TestTeam, key: string, extra: { control?: boolean; traffic?: number } = {}) {
    const { response } = await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', {
      params: { path: { team: team.id, experiment: 'exp' } },
      body: { key, ...extra },
    });
    expect(response.status).toBe(200);
  }

  async function transition(team: TestTeam, action: 'start' | 'stop') {
    const path = action === 'start' ? '/api/teams/{team}/experiments/{experiment}/start' : '/api/teams/{team}/experiments/{experiment}/stop';
    const { response } = await team.api.POST(path, { params: { path: { team: team.id, experiment: 'exp' } } });
    expect(response.status).toBe(200);
  }

  /** A running experiment `exp` with `control` (the control) and `treatment` at 50/50. */
  async function runningAB(events: Array<{ key: string; type?: 'unique' | 'count' }> = [{ key: 'purchase' }]): Promise<TestTeam> {
    const team = await teamWithExperiment(events);
    await addVariant(team, 'control', { control: true });
    await addVariant(team, 'treatment');
    await transition(team, 'start');
    return team;
  }

  async function ingest(team: TestTeam, body: IngestRequest) {
    const { response, error } = await team.ingest.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body });
    if (response.status !== 200) throw new Error(`ingest answered ${response.status}: ${JSON.stringify(error)}`);
  }

  /** Enrols each participant in `exp` under `variant`; the first `converters` of them with `event`. */
  async function enrol(team: TestTeam, variant: string, participants: string[], converters = 0, event = 'purchase') {
    const bodies = participants.map((participant, i): IngestRequest => ({
      participant,
      experiment: 'exp',
      variant,
      ...(i < converters ? { event } : {}),
    }));
    await inParallel(bodies, 8, (body) => ingest(team, body));
  }

  /** One more `event` for each participant, counted in `exp`. */
  async function record(team: TestTeam, participants: string[], event: string) {
    await inParallel(participants, 8, (participant) => ingest(team, { participant, experiment: 'exp', event }));
  }

  async function statistics(team: TestTeam, variant: string, experiment = 'exp'): Promise<VariantStatistics> {
    const { data, response, error } = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', {
      params: { path: { team: team.id, experiment, variant } },
    });
    if (response.status !== 200) throw new Error(`statistics answered ${response.status}: ${JSON.stringify(error)}`);
    return data!.data;
  }

  function on(stats: VariantStatistics, event: string): EventStatistics {
    const entry = stats.events.find((e) => e.event === event);
    if (!entry) throw new Error(`no entry for event '${event}'`);
    return entry;
  }

  describe('shape', () => {
    it('when nobody is enrolled, then counts are 0 and every rate and comparison is null', async () => {
      const team = await teamWithExperiment([{ key: 'purchase' }, { key: 'zoom' }, { key: 'add_to_cart', type: 'count' }]);
      await addVariant(team, 'control', { control: true });
      await addVariant(team, 'treatment');

      const stats = await statistics(team, 'treatment');

      expect(stats).toEqual({
        experiment: 'exp',
        variant: 'treatment',
        control: 'control',
        participants: 0,
        srm: { chi_square: null, p_value: null },
        events: [emptyEvent('purchase', 'unique'), emptyEvent('add_to_cart', 'count'), emptyEvent('zoom', 'unique')],
      });
    });

    it('when the experiment is running but nobody is enrolled, then the control has nulls too', async () => {
      const team = await runningAB();

      const stats = await statistics(team, 'control');

      expect(stats).toEqual({
        experiment: 'exp',
        variant: 'control',
        control: 'control',
        participants: 0,
        srm: { chi_square: null, p_value: null },
        events: [emptyEvent('purchase', 'unique')],
      });
    });

    it('when the draft has no control yet, then control is null', async () => {
      const team = await teamWithExperiment([{ key: 'purchase' }]);
      await addVariant(team, 'only');

      const stats = await statistics(team, 'only');

      expect(stats.control).toBeNull();
      expect(stats.events).toEqual([emptyEvent('purchase', 'unique')]);
    });

    it('when the goal is not first by key, then it is listed first and the others follow by key', async () => {
      const team = await teamWithExperiment([{ key: 'zeta' }, { key: 'gamma' }, { key: 'alpha' }, { key: 'beta' }]);
      await addVariant(team, 'a');

      const stats = await statistics(team, 'a');

      expect(stats.events.map((e) => e.event)).toEqual(['zeta', 'alpha', 'beta', 'gamma']);
    });

    it('when there are participants, then every entry has exactly the schema fields', async () => {
      const team = await runningAB([{ key: 'purchase' }, { key: 'signup', type: 'count' }]);
      await enrol(team, 'control', keys('c', 4), 1);
      await enrol(team, 'treatment', keys('t', 4), 2);

      const stats = await statistics(team, 'treatment');

      expect(Object.keys(stats).sort()).toEqual(['control', 'events', 'experiment', 'participants', 'srm', 'variant']);
      expect(Object.keys(stats.srm).sort()).toEqual(['chi_square', 'p_value']);
      for (const entry of stats.events) expect(Object.keys(entry).sort()).toEqual(EVENT_FIELDS);
      expect(on(stats, 'signup').type).toBe('count');
      expect(on(stats, 'purchase').conversion_rate_interval).toEqual({ lower: expect.any(Number), upper: expect.any(Number) });
    });

    it('when the variant is the control, then uplift 0, z 0, p 1, confidence 0 and no power, difference or chance', async () => {
      const team = await runningAB();
      await enrol(team, 'control', keys('c', 10), 3);
      await enrol(team, 'treatment', keys('t', 10), 5);

      const stats = await statistics(team, 'control');

      expect(stats).toMatchObject({ variant: 'control', control: 'control', participants: 10 });
      const purchase = on(stats, 'purchase');
      expect(purchase).toEqual({
        event: 'purchase',
        type: 'unique',
        conversions: 3,
        unique_conversions: 3,
        count_conversion_rate: 0.3,
        unique_conversion_rate: 0.3,
        uplift: 0,
        z_score: 0,
        p_value: 1,
        confidence: 0,
        power: null,
        conversion_rate_interval: { lower: expect.any(Number), upper: expect.any(Number) },
        difference_interval: null,
        chance_to_beat_control: null,
        test: null,
        minimum_detectable_effect: null,
        participants_needed: null,
        means: null,
        regression_adjustment: null,
      });
      expect(purchase.conversion_rate_interval!.lower).toBeCloseTo(0.1078, 4);
      expect(purchase.conversion_rate_interval!.upper).toBeCloseTo(0.6032, 4);
    });

    it('when the variant has participants but the control has none, then rates are given and comparisons are null', async () => {
      const team = await runningAB();
      await enrol(team, 'treatment', keys('t', 4), 1);

      const purchase = on(await statistics(team, 'treatment'), 'purchase');

      expect(purchase).toMatchObject({
        conversions: 1,
        unique_conversions: 1,
        count_conversion_rate: 0.25,
        unique_conversion_rate: 0.25,
        uplift: null,
        z_score: null,
        p_value: null,
        confidence: null,
        power: null,
        difference_interval: null,
        chance_to_beat_control: null,
      });
      expect(purchase.conversion_rate_interval).not.toBeNull();
    });

    it('when the experiment or the variant does not exist, then 404', async () => {
      const team = await runningAB();
      const path = '/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics' as const;

      const noVariant = await team.api.GET(path, { params: { path: { team: team.id, experiment: 'exp', variant: 'nope' } } });
      const noExperiment = await team.api.GET(path, { params: { path: { team: team.id, experiment: 'nope', variant: 'control' } } });

      expectProblem(noVariant.response, noVariant.error, 404, 'Not Found');
      expectProblem(noExperiment.response, noExperiment.error, 404, 'Not Found');
    });

    it('when the ingest key asks for statistics, then 403', async () => {
      const team = await runningAB();

      const { error, response } = await team.ingest.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', {
        params: { path: { team: team.id, experiment: 'exp', variant: 'control' } },
      });

      expectProblem(response, error, 403, 'Forbidden');
    });
  });

  describe('reference row 1: control 1000 / 100, variant 1000 / 130', () => {
    let team: TestTeam;
    let beforeRepeats: VariantStatistics;
    const controls = keys('c', 1000);
    const treated = keys('t', 1000);
    const repeaters = treated.slice(0, 20);
    const variantSigners = treated.slice(125, 132);
    const controlSigners = controls.slice(500, 504);

    beforeAll(async () => {
      team = await runningAB([{ key: 'purchase' }, { key: 'signup', type: 'count' }, { key: 'add_to_cart' }]);
      await enrol(team, 'control', controls, 100);
      await enrol(team, 'treatment', treated, 130);
      beforeRepeats = await statistics(team, 'treatment');
      await record(team, repeaters, 'purchase');
      await record(team, [...variantSigners, variantSigners[0]!, ...controlSigners], 'signup');
    }, 120_000);

    it('when the row is ingested through the API, then every number of the row matches to 4 decimals', async () => {
      const stats = await statistics(team, 'treatment');

      expect(stats).toMatchObject({ experiment: 'exp', variant: 'treatment', control: 'control', participants: 1000 });
      const purchase = on(stats, 'purchase');
      expect(purchase.unique_conversions).toBe(130);
      expect(purchase.unique_conversion_rate).toBeCloseTo(0.13, 4);
      expect(purchase.uplift).toBeCloseTo(0.3, 4);
      expect(purchase.z_score).toBeCloseTo(2.1051, 4);
      expect(purchase.p_value).toBeCloseTo(0.0353, 4);
      expect(purchase.confidence).toBeCloseTo(1 - purchase.p_value!, 12);
      expect(purchase.power).toBeCloseTo(0.5577, 4);
      expect(purchase.conversion_rate_interval!.lower).toBeCloseTo(0.1106, 4);
      expect(purchase.conversion_rate_interval!.upper).toBeCloseTo(0.1523, 4);
      expect(purchase.difference_interval!.lower).toBeCloseTo(0.0021, 4);
      expect(purchase.difference_interval!.upper).toBeCloseTo(0.0579, 4);
      expect(purchase.chance_to_beat_control).toBeCloseTo(0.9822, 4);
    });

    it('when converters send the event again, then conversions grow and unique_conversions do not', async () => {
      const stats = await statistics(team, 'treatment');

      expect(on(beforeRepeats, 'purchase')).toMatchObject({ conversions: 130, unique_conversions: 130, count_conversion_rate: 0.13 });
      const purchase = on(stats, 'purchase');
      expect(purchase).toMatchObject({ conversions: 150, unique_conversions: 130 });
      expect(purchase.count_conversion_rate).toBeCloseTo(0.15, 10);
      expect(purchase.unique_conversion_rate).toBeCloseTo(0.13, 10);
      expect(purchase.z_score).toBe(on(beforeRepeats, 'purchase').z_score);
    });

    it('when the control is asked for, then it shows its own counts against itself', async () => {
      const stats = await statistics(team, 'control');

      expect(stats.participants).toBe(1000);
      expect(on(stats, 'purchase')).toMatchObject({
        conversions: 100,
        unique_conversions: 100,
        unique_conversion_rate: 0.1,
        uplift: 0,
        z_score: 0,
        p_value: 1,
        confidence: 0,
        power: null,
        difference_interval: null,
        chance_to_beat_control: null,
      });
    });

    it('when participants are enrolled 1000/1000 on a 50/50 split, then χ² is 0 and p is 1', async () => {
      const stats = await statistics(team, 'treatment');

      expect(stats.srm.chi_square).toBeCloseTo(0, 10);
      expect(stats.srm.p_value).toBeCloseTo(1, 10);
      expect((await statistics(team, 'control')).srm).toEqual(stats.srm);
    });

    it('when the team has other events, then they follow the goal by key with their own counts', async () => {
      const stats = await statistics(team, 'treatment');

      expect(stats.events.map((e) => e.event)).toEqual(['purchase', 'add_to_cart', 'signup']);
      const signup = on(stats, 'signup');
      expect(signup).toMatchObject({ type: 'count', conversions: 8, unique_conversions: 7 });
      expect(signup.count_conversion_rate).toBeCloseTo(0.008, 10);
      expect(signup.unique_conversion_rate).toBeCloseTo(0.007, 10);
      expect(signup.uplift).toBeCloseTo(0.75, 10);
      expect(on(await statistics(team, 'control'), 'signup')).toMatchObject({ conversions: 4, unique_conversions: 4 });
      const untouched = on(stats, 'add_to_cart');
      expect(untouched).toMatchObject({
        conversions: 0,
        unique_conversions: 0,
        count_conversion_rate: 0,
        unique_conversion_rate: 0,
        uplift: null,
        z_score: null,
        // Nobody converted in either arm: Fisher's exact test, p 1.
        p_value: 1,
        confidence: 0,
        power: null,
        difference_interval: null,
      });
      expect(untouched.conversion_rate_interval!.lower).toBe(0);
      expect(untouched.chance_to_beat_control).toBeCloseTo(0.5, 3);
    });
  });

  describe('sample-ratio check', () => {
    it('when an empty 0 % variant is in the experiment, then it is left out of χ²', async () => {
      const team = await teamWithExperiment([{ key: 'purchase' }]);
      await addVariant(team, 'a', { control: true, traffic: 50 });
      await addVariant(team, 'b', { traffic: 50 });
      await addVariant(team, 'off', { traffic: 0 });
      await transition(team, 'start');
      await enrol(team, 'a', keys('a', 3));
      await enrol(team, 'b', keys('b', 5));

      const stats = await statistics(team, 'b');

      // Over a and b only: E = 4 each, χ² = (1 + 1) / 4, df = 1.
      expect(stats.srm.chi_square).toBeCloseTo(0.5, 10);
      expect(stats.srm.p_value).toBeCloseTo(0.4795, 4);
      const off = await statistics(team, 'off');
      expect(off.participants).toBe(0);
      expect(off.srm).toEqual(stats.srm);
    });

    it('when fewer than two variants have a share, then both fields are null', async () => {
      const team = await teamWithExperiment([{ key: 'purchase' }]);
      await addVariant(team, 'a', { control: true, traffic: 100 });
      await addVariant(team, 'off', { traffic: 0 });
      await transition(team, 'start');
      await enrol(team, 'a', keys('a', 3));

      const stats = await statistics(team, 'a');

      expect(stats.srm).toEqual({ chi_square: null, p_value: null });
    });

    it('when the split is off, then χ² and p follow the counts', async () => {
      const team = await teamWithExperiment([{ key: 'purchase' }]);
      await addVariant(team, 'a', { control: true, traffic: 25 });
      await addVariant(team, 'b', { traffic: 75 });
      await transition(team, 'start');
      await enrol(team, 'a', keys('a', 10));
      await enrol(team, 'b', keys('b', 10));

      const stats = await statistics(team, 'a');

      // E = 5 and 15: χ² = 25/5 + 25/15 = 6.6667, df = 1.
      expect(stats.srm.chi_square).toBeCloseTo(6.6667, 4);
      expect(stats.srm.p_value).toBeCloseTo(0.0098, 4);
    });
  });

  describe('unenrol', () => {
    /** Control: 3 participants, 1 converter. Treatment: 3 participants, t-0000 converts twice, t-0001 once and signs up. */
    async function smallRun(): Promise<TestTeam> {
      const team = await runningAB([{ key: 'purchase' }, { key: 'signup' }]);
      await enrol(team, 'control', keys('c', 3), 1);
      await enrol(team, 'treatment', keys('t', 3), 2);
      await record(team, ['t-0000'], 'purchase');
      await record(team, ['t-0000'], 'signup');
      return team;
    }

    async function unenrol(team: TestTeam, participant: string) {
      return team.api.DELETE('/api/teams/{team}/participants/{participant}/experiments/{experiment}', {
        params: { path: { team: team.id, participant, experiment: 'exp' } },
      });
    }

    it('when a repeat converter is withdrawn, then by intention to treat participants, unique_conversions and conversions keep its share', async () => {
      const team = await smallRun();
      const before = await statistics(team, 'treatment');

      const { data, response } = await unenrol(team, 't-0000');

      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ experiment: 'exp', variant: 'treatment', status: 'running' });
      expect(before.participants).toBe(3);
      expect(on(before, 'purchase')).toMatchObject({ conversions: 3, unique_conversions: 2 });
      expect(on(before, 'signup')).toMatchObject({ conversions: 1, unique_conversions: 1 });
      expect(await statistics(team, 'treatment')).toEqual(before);
      const control = await statistics(team, 'control');
      expect(control.participants).toBe(3);
      expect(on(control, 'purchase')).toMatchObject({ conversions: 1, unique_conversions: 1 });
    });

    it('when a withdrawn participant sends events again, then they are not counted', async () => {
      const team = await smallRun();
      const before = await statistics(team, 'treatment');
      await unenrol(team, 't-0000');

      await record(team, ['t-0000'], 'purchase');
      await ingest(team, { participant: 't-0000', event: 'purchase' });

      expect(await statistics(team, 'treatment')).toEqual(before);
    });

    it('when the experiment is stopped, then a withdrawal still works and its statistics keep the participant', async () => {
      const team = await smallRun();
      await transition(team, 'stop');
      const before = await statistics(team, 'treatment');

      const { response } = await unenrol(team, 't-0001');

      expect(response.status).toBe(200);
      expect(await statistics(team, 'treatment')).toEqual(before);
    });

    it('when the participant is not enrolled or unknown, then 404 and nothing changes', async () => {
      const team = await smallRun();
      await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key: 'bystander' } });
      const before = await statistics(team, 'treatment');

      const notEnrolled = await unenrol(team, 'bystander');
      const unknown = await unenrol(team, 'nobody');

      expectProblem(notEnrolled.response, notEnrolled.error, 404, 'Not Found');
      expectProblem(unknown.response, unknown.error, 404, 'Not Found');
      expect(await statistics(team, 'treatment')).toEqual(before);
    });
  });

  describe('goal change', () => {
    it('when the goal changes, then the new goal is listed first and the old one keeps its counts', async () => {
      const team = await runningAB([{ key: 'purchase' }, { key: 'signup' }]);
      await enrol(team, 'control', keys('c', 4), 2);
      await enrol(team, 'treatment', keys('t', 4), 3);

      const { response } = await team.api.PUT('/api/teams/{team}/experiments/{experiment}', {
        params: { path: { team: team.id, experiment: 'exp' } },
        body: { event: 'signup' },
      });

      expect(response.status).toBe(200);
      const stats = await statistics(team, 'treatment');
      expect(stats.events.map((e) => e.event)).toEqual(['signup', 'purchase']);
      expect(on(stats, 'purchase')).toMatchObject({ conversions: 3, unique_conversions: 3 });
    });
  });
});
