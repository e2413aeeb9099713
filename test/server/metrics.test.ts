// Count and value metrics through the real ingest: Σy and Σy² per variant × event equal what the
// participants sent (computed here, independently of the server's sums), capped, after
// concurrent ingests, batches, unenrolments and deletions, on both engines — and the daily
// roll-up adds up to them.
import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { seeded } from '../support/seeded';
import { useServer } from '../support/server';
import { inParallel, ingestOk } from '../support/fixtures';
import type { TestServer } from '../support/server';
import type { TestTeam } from '../support/team';

const MICRO = 1_000_000n;
/** A decimal string with at most 6 decimals in micro-units, without going through a double. */
function micros(written: string): bigint {
  const negative = written.startsWith('-');
  const [whole, fraction = ''] = written.replace('-', '').split('.');
  const value = BigInt(whole!) * MICRO + BigInt(fraction.padEnd(6, '0'));
  return negative ? -value : value;
}

async function setUp(team: TestTeam): Promise<void> {
  const path = { team: team.id };
  for (const body of [
    { key: 'purchase' },
    { key: 'revenue', type: 'value' as const, cap: 250.5 },
    { key: 'views', type: 'count' as const, cap: 3 },
    { key: 'refund', type: 'value' as const, direction: 'decrease' as const },
  ]) {
    const created = await team.api.POST('/api/teams/{team}/events', { params: { path }, body });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
  }
  await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'purchase' } });
  for (const variant of [{ key: 'control', control: true }, { key: 'treatment' }]) {
    await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'exp' } }, body: variant });
  }
  expect((await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'exp' } } })).response.status).toBe(200);
}

interface Sent {
  variant: string;
  count: Map<string, number>;
  value: Map<string, bigint>;
}

const CAPS: Record<string, { type: 'count' | 'value' | 'unique'; cap: bigint | null }> = {
  purchase: { type: 'unique', cap: null },
  revenue: { type: 'value', cap: micros('250.5') },
  views: { type: 'count', cap: 3n * MICRO },
  refund: { type: 'value', cap: null },
};

/** Σy and Σy² per `variant:event` of the participants still enrolled, from what the test sent. */
function expectedSums(sent: Map<string, Sent>): Map<string, { y: bigint; y2: bigint }> {
  const sums = new Map<string, { y: bigint; y2: bigint }>();
  for (const participant of sent.values()) {
    for (const [event, count] of participant.count) {
      const { type, cap } = CAPS[event]!;
      const raw = type === 'value' ? participant.value.get(event)! : BigInt(count) * MICRO;
      const y = cap !== null && raw > cap ? cap : raw;
      const key = `${participant.variant}:${event}`;
      const sum = sums.get(key) ?? { y: 0n, y2: 0n };
      sum.y += y;
      sum.y2 += y * y;
      sums.set(key, sum);
    }
  }
  return sums;
}

async function storedSums(server: TestServer, teamId: number) {
  const db = server.storage.db;
  const counters = await db
    .selectFrom('variant_event_counts as c')
    .innerJoin('variants as v', 'v.id', 'c.variant_id')
    .innerJoin('events as e', 'e.id', 'c.event_id')
    .select(['v.key as variant', 'e.key as event', 'c.sum_y', 'c.sum_y2'])
    .where('c.team_id', '=', teamId)
    .execute();
  const daily = await db
    .selectFrom('daily_variant_event_counts as c')
    .innerJoin('variants as v', 'v.id', 'c.variant_id')
    .innerJoin('events as e', 'e.id', 'c.event_id')
    .select(['v.key as variant', 'e.key as event', 'c.sum_y', 'c.sum_y2'])
    .where('c.team_id', '=', teamId)
    .execute();
  const byKey = (rows: typeof counters) => {
    const sums = new Map<string, { y: bigint; y2: bigint }>();
    for (const row of rows) {
      const sum = sums.get(`${row.variant}:${row.event}`) ?? { y: 0n, y2: 0n };
      sum.y += BigInt(String(row.sum_y));
      sum.y2 += BigInt(String(row.sum_y2));
      sums.set(`${row.variant}:${row.event}`, sum);
    }
    // A counter every participant left is 0; the expected map has no entry for it.
    return new Map([...sums].filter(([, s]) => s.y !== 0n || s.y2 !== 0n));
  };
  return { counters: byKey(counters), daily: byKey(daily) };
}

describe.each(engines)('count and value metrics on %s', (engine) => {
  const server = useServer(engine);

  it('when participants send counts and values concurrently, singly and in batches, and some are withdrawn or erased meanwhile, then Σy and Σy² per variant × event equal what they sent (the withdrawn ones until they left, the erased ones not at all), capped, and the daily roll-up adds up to them', async () => {
    const team = await server().newTeam();
    await setUp(team);
    const path = { team: team.id };
    const draw = seeded(20261124);
    const sent = new Map<string, Sent>();
    const events = ['purchase', 'revenue', 'views', 'refund'];
    const ingests = Array.from({ length: 240 }, (_, i) => {
      const participant = `p${i % 60}`;
      const event = events[Math.floor(draw() * events.length)]!;
      // Two decimals, some negative, some far above the cap (≤ 10⁹).
      const cents = Math.floor(draw() * 40_000) - 5_000 + (draw() < 0.05 ? 90_000_000_000 : 0);
      const written = (cents / 100).toFixed(2);
      return { participant, event, written, value: CAPS[event]!.type === 'value' ? Number(written) : undefined };
    });
    const record = (participant: string, variant: string, event: string, written: string) => {
      const state = sent.get(participant) ?? { variant, count: new Map(), value: new Map() };
      state.count.set(event, (state.count.get(event) ?? 0) + 1);
      if (CAPS[event]!.type === 'value') state.value.set(event, (state.value.get(event) ?? 0n) + micros(written));
      sent.set(participant, state);
    };

    const singles = ingests.slice(0, 160);
    const batch = ingests.slice(160);
    const leaving = ['p3', 'p17', 'p29', 'p44'];
    const deleted = ['p8', 'p51'];
    await Promise.all([
      inParallel(singles, 16, async (item) => {
        const outcome = await ingestOk(team, { participant: item.participant, event: item.event, ...(item.value !== undefined && { value: item.value }) });
        record(item.participant, outcome.assignments[0]!.variant, item.event, item.written);
      }),
      (async () => {
        const answer = await team.ingest.POST('/api/teams/{team}/ingest/batch', {
          params: { path },
          body: { items: batch.map((item) => ({ participant: item.participant, event: item.event, ...(item.value !== undefined && { value: item.value }) })) },
        });
        expect(answer.response.status).toBe(200);
        answer.data!.data.forEach((outcome, i) => {
          expect(outcome.status).toBe(200);
          record(batch[i]!.participant, outcome.data!.assignments[0]!.variant, batch[i]!.event, batch[i]!.written);
        });
      })(),
    ]);
    // Withdrawn (intention to treat: what they sent stays) and erased (what they sent leaves) while later ingests of others still arrive
    await Promise.all([
      ...leaving.map((participant) => team.api.DELETE('/api/teams/{team}/participants/{participant}/experiments/{experiment}', { params: { path: { ...path, participant, experiment: 'exp' } } })),
      ...deleted.map((participant) => team.api.DELETE('/api/teams/{team}/participants/{participant}', { params: { path: { ...path, participant } } })),
      inParallel(['p1', 'p2', 'p5', 'p6'], 4, async (participant) => {
        const outcome = await ingestOk(team, { participant, event: 'revenue', value: 12.345678 });
        record(participant, outcome.assignments[0]!.variant, 'revenue', '12.345678');
      }),
    ]);
    for (const participant of deleted) sent.delete(participant);
    // A withdrawn participant's later events count nowhere
    await ingestOk(team, { participant: leaving[0]!, event: 'views' });

    const expected = expectedSums(sent);
    const { counters, daily } = await storedSums(server(), team.id);
    expect(counters).toEqual(expected);
    expect(daily).toEqual(expected);
    // Some totals were capped, so the cap was exercised.
    expect([...sent.values()].some((s) => (s.value.get('revenue') ?? 0n) > micros('250.5'))).toBe(true);
  });

  it('audit, chance to beat the control for means: when the arms carry the sums of STATISTICS.md means row 1, then the statistics and results reads give its reference figures for the value event, the chance to beat the control on the absolute and the relative lift included', async () => {
    // Arrange: control 250 × 3.2 and 250 × 0.4 (n 500, Σy 900, Σy² 2600); treatment 160 × 1, 240 × 3.5 and 100 without the event (n 500, Σy 1000, Σy² 3100)
    const team = await server().newTeam();
    await setUp(team);
    const path = { team: team.id };
    const arm = (variant: string, groups: Array<[number, number | undefined]>) =>
      groups.flatMap(([count, value], g) =>
        Array.from({ length: count }, (_, i) => ({ participant: `${variant}-${g}-${i}`, experiment: 'exp', variant, ...(value !== undefined && { event: 'revenue', value }) })),
      );
    const items = [...arm('control', [[250, 3.2], [250, 0.4]]), ...arm('treatment', [[160, 1], [240, 3.5], [100, undefined]])];
    for (let i = 0; i < items.length; i += 500) {
      const answer = await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items: items.slice(i, i + 500) } });
      expect(answer.data!.data.every((item) => item.status === 200)).toBe(true);
    }

    // Act
    const statistics = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', { params: { path: { ...path, experiment: 'exp', variant: 'treatment' } } });
    const results = await team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { ...path, experiment: 'exp' }, query: { events: ['purchase', 'revenue'] } } });

    // Assert
    const revenue = statistics.data!.data.events.find((e) => e.event === 'revenue')!;
    expect(statistics.data!.data.events.map((e) => e.event)).toEqual(['purchase', 'refund', 'revenue', 'views']);
    const means = revenue.means!;
    expect([means.mean, means.control_mean, means.difference]).toEqual([2, 1.8, expect.closeTo(0.2, 10)]);
    expect(means.degrees_of_freedom).toBeCloseTo(994.7, 1);
    for (const [actual, expected] of [
      [means.standard_error, 0.0913],
      [means.p_value, 0.0287],
      [means.difference_interval!.lower, 0.0208],
      [means.difference_interval!.upper, 0.3792],
      [means.relative_uplift, 0.1111],
      [means.relative_standard_error, 0.0535],
      [means.relative_p_value, 0.0379],
      [means.relative_interval!.lower, 0.0062],
      [means.relative_interval!.upper, 0.216],
    ] as const) {
      expect(actual).toBeCloseTo(expected, 4);
    }
    // Φ(0.2 / 0.0913) and Φ(0.1111 / 0.0535): the normal posterior's mass above 0, absolute and relative.
    expect(means.chance_to_beat_control).toBeCloseTo(0.9857, 3);
    expect(means.relative_chance_to_beat_control).toBeCloseTo(0.9811, 3);
    expect(statistics.data!.data.events.find((e) => e.event === 'purchase')!.means).toBeNull();
    const inResults = results.data!.data.events.find((e) => e.event === 'revenue')!.variants.find((v) => v.variant === 'treatment')!;
    expect(inResults.statistics).toEqual(revenue);
    const controlMeans = results.data!.data.events.find((e) => e.event === 'revenue')!.variants.find((v) => v.control)!.statistics.means!;
    expect(controlMeans).toMatchObject({ mean: 1.8, difference: null, p_value: null });
    expect(controlMeans.variance).toBeCloseTo(1.9639, 4);
  });

  it('audit, variance lost to rounding: when value events carry 999 999 999.97 to 10⁹, then the served variances, Welch\'s test and the sequences are those of the values themselves (test/vectors/means.py), now and in the history', async () => {
    // Arrange: test/vectors/means.json largeValues case 1 — the control alternates 999 999 999.99 and 10⁹ (50), the treatment 999 999 999.97, .98, 10⁹, 10⁹ (48)
    const team = await server().newTeam();
    const path = { team: team.id };
    await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'deposit', type: 'value' } });
    await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'large', event: 'deposit' } });
    for (const variant of [{ key: 'control', control: true }, { key: 'treatment' }]) {
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'large' } }, body: variant });
    }
    await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'large' } } });
    const arm = (variant: string, values: number[], times: number) =>
      Array.from({ length: times }, (_, round) => values.map((value, i) => ({ participant: `${variant}-${round}-${i}`, experiment: 'large', variant, event: 'deposit', value }))).flat();
    const items = [...arm('control', [999_999_999.99, 1e9], 25), ...arm('treatment', [999_999_999.97, 999_999_999.98, 1e9, 1e9], 12)];
    const answer = await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items } });
    expect(answer.data!.data.every((item) => item.status === 200)).toBe(true);
    const experiment = { ...path, experiment: 'large' };

    // Act
    const statistics = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', { params: { path: { ...experiment, variant: 'treatment' } } });
    const results = (await team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: experiment } })).data!.data;

    // Assert: the reference's variances 2.5510e-5 and 1.7234e-4 (in doubles, the control's was 0), difference −0.0075, p 0.00046
    const means = statistics.data!.data.events[0]!.means!;
    expect(means.variance! / 0.0001723404255319149).toBeCloseTo(1, 9);
    expect(results.events[0]!.variants[0]!.statistics.means!.variance! / 2.5510204081632654e-5).toBeCloseTo(1, 9);
    expect(means.difference).toBeCloseTo(-0.0075, 9);
    expect(means.p_value).toBeCloseTo(0.0004637831, 7);
    const treatment = results.events[0]!.variants[1]!;
    expect(treatment.decision!.always_valid_p_value).toBeLessThan(1);
    const lastDay = results.history.days.at(-1)!.variants[1]!;
    expect(lastDay.means_sequence!.always_valid_p_value).toBeCloseTo(treatment.means_sequence!.always_valid_p_value, 12);
    expect(lastDay.means_sequence!.difference).toBeCloseTo(-0.0075, 9);
  });

  /** A count goal `clicks` with n 500, Σc 900, Σc² 2 600 in the control and n 500, Σc 1 000, Σc² 3 100 in the treatment (STATISTICS.md means row 1). */
  async function countGoal(team: TestTeam): Promise<{ team: number; experiment: string }> {
    // control 40 × 1, 10 × 2, 280 × 3 clicks and 170 without; treatment 100 × 1, 150 × 2, 150 × 4 and 100 without
    const path = { team: team.id };
    await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'clicks', type: 'count' } });
    await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'counted', event: 'clicks', minimum_effect: 0.05 } });
    for (const variant of [{ key: 'control', control: true }, { key: 'treatment' }]) {
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'counted' } }, body: variant });
    }
    await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'counted' } } });
    const arm = (variant: string, groups: Array<[number, number]>) =>
      groups.flatMap(([participants, clicks], g) =>
        Array.from({ length: participants }, (_, i) => {
          const item = { participant: `${variant}-${g}-${i}`, experiment: 'counted', variant };
          return clicks === 0 ? [item] : Array.from({ length: clicks }, () => ({ ...item, event: 'clicks' }));
        }).flat(),
      );
    const items = [...arm('control', [[40, 1], [10, 2], [280, 3], [170, 0]]), ...arm('treatment', [[100, 1], [150, 2], [150, 4], [100, 0]])];
    for (let i = 0; i < items.length; i += 500) {
      const answer = await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items: items.slice(i, i + 500) } });
      expect(answer.data!.data.every((item) => item.status === 200)).toBe(true);
    }
    return { ...path, experiment: 'counted' };
  }

  it('audit, two verdicts on one count event: when the count goal\'s share of converters is higher in the variant but its mean is not shown different, then the one decision judges the mean, says so, and agrees with corrected_verdict', async () => {
    // Arrange
    const team = await server().newTeam();
    const experiment = await countGoal(team);

    // Act
    const read = (await team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: experiment } })).data!.data;

    // Assert
    const event = read.events[0]!;
    expect(event.metric).toBe('mean');
    expect(read.history.metric).toBe('mean');
    const [control, treatment] = event.variants;
    expect(control!.decision).toBeNull();
    const decision = treatment!.decision!;
    expect(decision).toMatchObject({ metric: 'mean', test: 'two_sided', correction: 'holm', verdict: 'no_difference' });
    expect(decision.difference).toBeCloseTo(0.2, 10);
    expect(decision.confidence_sequence).toEqual(treatment!.means_sequence!.confidence_sequence);
    expect([decision.always_valid_p_value, decision.adjusted_p_value, decision.verdict]).toEqual([treatment!.always_valid_p_value, treatment!.adjusted_p_value, treatment!.corrected_verdict]);
    // The share of converters (66 % against 80 %) is in the fixed-horizon statistics, not judged beside it.
    expect(treatment!.statistics.unique_conversion_rate).toBe(0.8);
  });

  it('when a count goal has n 500, Σc 900, Σc² 2 600 against n 500, Σc 1 000, Σc² 3 100, then Welch gives p 0.029, the planning figure is the reference, and the verdicts and history judge the mean, not the rate', async () => {
    // Arrange
    const team = await server().newTeam();
    const experiment = await countGoal(team);

    // Act
    const statistics = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', { params: { path: { ...experiment, variant: 'treatment' } } });
    const results = await team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: experiment } });

    // Assert: the fixed-horizon test (STATISTICS.md means row 1) and the planning figure of test/vectors/means.py
    const clicks = statistics.data!.data.events[0]!;
    expect(clicks.means!.p_value).toBeCloseTo(0.0287, 4);
    expect(clicks.means!.participants_needed).toBe(7079);
    const read = results.data!.data;
    expect(read.method.means_effect_size).toBe(0.1);
    const [control, treatment] = read.events[0]!.variants;
    expect(control!.means_sequence).toBeNull();
    // Always valid on the mean: τ = 0.1 · √((s_V² + s_C²)/2), the sequence and p by the formula (computed independently)
    const sequence = treatment!.means_sequence!;
    expect(sequence.difference).toBeCloseTo(0.2, 10);
    expect(sequence.confidence_sequence!.lower).toBeCloseTo(-0.0908, 4);
    expect(sequence.confidence_sequence!.upper).toBeCloseTo(0.4908, 4);
    expect(sequence.always_valid_p_value).toBeCloseTo(0.3372, 4);
    expect(sequence.verdict).toBe('no_difference');
    // The rate (66 % against 80 % with a click) would say better; the verdict to decide by judges the mean
    expect(treatment!.verdict).toBe('variant_better');
    expect(treatment).toMatchObject({ always_valid_p_value: sequence.always_valid_p_value, adjusted_p_value: sequence.always_valid_p_value, corrected_verdict: 'no_difference' });
    const lastDay = read.history.days.at(-1)!.variants;
    expect(lastDay[0]).toMatchObject({ variant: 'control', means_sequence: null, corrected_verdict: null });
    expect(lastDay[1]!.corrected_verdict).toBe('no_difference');
    expect(lastDay[1]!.means_sequence!.always_valid_p_value).toBeCloseTo(sequence.always_valid_p_value, 9);
    expect(lastDay[1]!.means_sequence!.confidence_sequence!.lower).toBeCloseTo(sequence.confidence_sequence!.lower, 9);
  });

  it('when a value has more than 6 decimals, then 400 names the field and nothing is stored; a value with a count event, or a value event without one, is 409', async () => {
    const team = await server().newTeam();
    await setUp(team);
    const path = { team: team.id };
    const tooPrecise = await team.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: 'a', event: 'revenue', value: 0.1234567 } });
    expect(tooPrecise.response.status).toBe(400);
    expect(tooPrecise.error).toMatchObject({ errors: [{ path: '/body/value' }] });
    const tooLarge = await team.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: 'a', event: 'revenue', value: 1e9 + 1 } });
    expect(tooLarge.response.status).toBe(400);
    const onCount = await team.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: 'a', event: 'views', value: 3 } });
    expect(onCount.response.status).toBe(409);
    const missing = await team.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: 'a', event: 'revenue' } });
    expect(missing.response.status).toBe(409);
    const batch = await team.ingest.POST('/api/teams/{team}/ingest/batch', {
      params: { path },
      body: { items: [{ participant: 'b', event: 'revenue', value: 1.5 }, { participant: 'c', event: 'purchase', value: 2 }] },
    });
    expect(batch.data!.data.map((item) => item.status)).toEqual([200, 409]);
    const participants = await team.api.GET('/api/teams/{team}/participants', { params: { path } });
    expect(participants.data!.data.map((p) => p.key)).toEqual(['b']);
  });

  it('when an event has stored conversions, then its cap and a change to or from value are 409; before any, they change', async () => {
    const team = await server().newTeam();
    await setUp(team);
    const path = { team: team.id };
    const before = await team.api.PUT('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: 'refund' } }, body: { cap: 40 } });
    expect(before.response.status, JSON.stringify(before.error)).toBe(200);
    expect(before.data!.data).toMatchObject({ type: 'value', cap: 40, direction: 'decrease' });
    await ingestOk(team, { participant: 'a', event: 'refund', value: 5 });
    const capAfter = await team.api.PUT('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: 'refund' } }, body: { cap: 50 } });
    expect(capAfter.response.status).toBe(409);
    const typeAfter = await team.api.PUT('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: 'refund' } }, body: { type: 'count' } });
    expect(typeAfter.response.status).toBe(409);
    const rename = await team.api.PUT('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: 'refund' } }, body: { description: 'Money back', direction: 'decrease' } });
    expect(rename.response.status).toBe(200);
  });
});
