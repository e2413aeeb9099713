import { describe, expect, it } from 'vitest';
import type { EventRow } from '../../server/events/store';
import type { ExperimentRow } from '../../server/experiments/store';
import { Conflict, QuotaExceeded } from '../../server/http/errors';
import { admission, planChange, type ResolvedIngest } from '../../server/ingest/plan';
import { participantKey, participantState, type EventHistory, type ParticipantState } from '../../server/ledger/change';
import type { TeamRow } from '../../server/teams/store';
import type { ResolvedVariant } from '../../server/experiments/variants-store';

// The ingest's decisions as plain values: no storage, no server (server/ingest/plan.ts).
const AT = '2026-11-28T12:00:00.000Z';
const team: TeamRow = { id: 1, name: 'team', ingest_key_hash: '', ingest_limit: null, config_version: 3, created_at: AT, updated_at: AT };

function experiment(id: number, key: string, fields: Partial<ExperimentRow> = {}): ExperimentRow {
  return {
    id, team_id: 1, key, description: null, status: 'running', event_id: 10, seed: `seed-${key}`, hash_version: 2, coverage: 10_000,
    group_key: null, group_start: null, group_end: null, conditions: null, minimum_effect: null, pre_exposure_days: 14,
    created_at: AT, updated_at: AT, started_at: AT, stopped_at: null, event_key: 'purchase', guardrail_events: [], ...fields,
  };
}

function variant(id: number, experimentId: number, key: string, share: number): ResolvedVariant {
  return { id, team_id: 1, experiment_id: experimentId, key, description: null, control: key === 'control' ? 1 : 0, traffic: share, participants: 0, created_at: AT, updated_at: AT, share };
}

const purchase: EventRow = { id: 10, team_id: 1, key: 'purchase', description: null, type: 'count', cap: null, direction: 'increase', created_at: AT, updated_at: AT };
const checkout = experiment(100, 'checkout');
const pricing = experiment(200, 'pricing');
// One variant takes all the traffic: where a participant enters is decided by the rules, not by its hash.
const variants = new Map([
  [100, [variant(101, 100, 'treatment', 100)]],
  [200, [variant(201, 200, 'treatment', 100)]],
]);

function ingest(participant: string, fields: Partial<ResolvedIngest> = {}): ResolvedIngest {
  const running = fields.running ?? [checkout, pricing];
  return { team, input: { participant }, given: { key: participant }, experiments: running, running, variants, event: purchase, rollouts: new Map(), ...fields };
}

function stored(key: string, fields: Partial<ParticipantState> = {}): [string, ParticipantState] {
  const row = { id: 7, team_id: 1, key, notes: null, attributes: '{}', created_at: AT, updated_at: AT };
  return [participantKey(1, key), { ...participantState(row, false), ...fields }];
}

const enrolment = (experimentRow: ExperimentRow, variantId: number) => ({
  id: 1, experiment_id: experimentRow.id, variant_id: variantId, experiment_key: experimentRow.key, status: 'running' as const, variant_key: 'treatment', enrolled_at: AT,
});

const plan = (admitted: ResolvedIngest[], participants = new Map<string, ParticipantState>()) =>
  planChange(admitted, { at: AT, month: '2026-11', cutoff: AT, participants, quota: new Map([[1, admitted.length]]) });

describe('ingest plan: what a batch of admitted ingests changes (server/ingest/plan.ts)', () => {
  it.each([
    { name: 'a new participant with an event enters every running experiment and converts in each', admitted: [ingest('a')], stored: [], enrolled: ['a:100:101', 'a:200:201'], moves: ['a:100:10 0→1', 'a:200:10 0→1'] },
    { name: '`enrol: false` enters nowhere: its event counts nowhere for a new participant', admitted: [ingest('a', { input: { participant: 'a', enrol: false } })], stored: [], enrolled: [], moves: [] },
    {
      name: '`enrol: false` counts its event where the participant is enrolled already',
      admitted: [ingest('a', { input: { participant: 'a', enrol: false } })],
      stored: [stored('a', { enrolments: [enrolment(checkout, 101)], conversions: new Map([['100:10', { count: 2, value: 0n }]]) })],
      enrolled: [],
      moves: ['a:100:10 2→3'],
    },
    { name: 'an excluded participant (unenrolled) never enters that experiment again', admitted: [ingest('a')], stored: [stored('a', { excluded: new Set([100]) })], enrolled: ['a:200:201'], moves: ['a:200:10 0→1'] },
    {
      name: 'a participant in an experiment of an exclusion group enters no other of the group',
      admitted: [ingest('a', { running: [experiment(100, 'checkout', { group_key: 'g', group_start: 0, group_end: 10_000 }), experiment(200, 'pricing', { group_key: 'g', group_start: 0, group_end: 10_000 })] })],
      stored: [],
      enrolled: ['a:100:101'],
      moves: ['a:100:10 0→1'],
    },
    { name: 'a named experiment is the only one entered and counted', admitted: [ingest('a', { target: pricing, experiments: [pricing] })], stored: [], enrolled: ['a:200:201'], moves: ['a:200:10 0→1'] },
    { name: 'an experiment no variant takes a participant of is not entered', admitted: [ingest('a', { variants: new Map([[100, [variant(101, 100, 'treatment', 0)]], [200, variants.get(200)!]]) })], stored: [], enrolled: ['a:200:201'], moves: ['a:200:10 0→1'] },
    { name: 'an ingest without an event enrols and converts nothing', admitted: [ingest('a', { event: undefined })], stored: [], enrolled: ['a:100:101', 'a:200:201'], moves: [] },
    { name: 'ingests of one participant in one plan: enrolled once (sticky), conversions moved once from before the first to after the last', admitted: [ingest('a'), ingest('a'), ingest('a')], stored: [], enrolled: ['a:100:101', 'a:200:201'], moves: ['a:100:10 0→3', 'a:200:10 0→3'] },
    {
      name: 'a stored participant already enrolled is not enrolled again; its stored conversions are where its move starts',
      admitted: [ingest('a'), ingest('a')],
      stored: [stored('a', { enrolments: [enrolment(checkout, 101), enrolment(pricing, 201)], conversions: new Map([['100:10', { count: 4, value: 0n }]]) })],
      enrolled: [],
      moves: ['a:100:10 4→6', 'a:200:10 0→2'],
    },
  ])('when $name', ({ admitted, stored: states, enrolled, moves }) => {
    const { change, outcomes } = plan(admitted, new Map(states));
    expect(change.enrolments.map((e) => `${e.state.row.key}:${e.experimentId}:${e.variantId}`)).toEqual(enrolled);
    expect([...change.conversions.values()].map((m) => `${m.state.row.key}:${m.experimentId}:${m.eventId} ${m.before.count}→${m.after.count}`)).toEqual(moves);
    expect(outcomes).toHaveLength(admitted.length);
    expect(change.withdrawals).toEqual([]);
  });

  it('when a participant is new, then the change creates it once with its notes and attributes, and its answer lists its assignments', () => {
    const { change, outcomes } = plan([ingest('a', { given: { key: 'a', notes: 'vip', attributes: { plan: 'pro' } } }), ingest('a')]);
    const [state] = [...change.participants.values()];
    expect(state).toMatchObject({ isNew: true, changed: false, row: { key: 'a', notes: 'vip', attributes: '{"plan":"pro"}' } });
    expect(outcomes[1]!.assignments.map((a) => a.experiment)).toEqual(['checkout', 'pricing']);
  });

  it('when a stored participant is given attributes, then the change updates its row', () => {
    const { change } = plan([ingest('a', { given: { key: 'a', attributes: { plan: 'pro' } } })], new Map([stored('a')]));
    expect(change.participants.get(participantKey(1, 'a'))).toMatchObject({ isNew: false, changed: true, row: { id: 7, attributes: '{"plan":"pro"}', updated_at: AT } });
  });

  it('when a value event is ingested, then its move carries the value in micro-units and the metric', () => {
    const revenue: EventRow = { ...purchase, id: 11, key: 'revenue', type: 'value', cap: 50 };
    const { change } = plan([ingest('a', { event: revenue, value: 12_500_000n, target: checkout, experiments: [checkout] })]);
    expect([...change.conversions.values()]).toMatchObject([{ variantId: 101, metric: { type: 'value', cap: 50 }, before: { count: 0, value: 0n }, after: { count: 1, value: 12_500_000n } }]);
  });
});

describe("ingest plan: each enrolment's covariates, frozen when it enrols (CUPED)", () => {
  const M = 1_000_000n;
  // `purchase` (10, count) on days before AT's day (2026-11-28), and `spend` (11, value capped at 50).
  const history = (days: Array<[number, string, number, bigint]>) => {
    const byEvent = new Map<number, EventHistory>();
    for (const [eventId, day, count, value] of days) {
      const metric = eventId === 10 ? { type: 'count' as const, cap: null } : { type: 'value' as const, cap: 50 };
      if (!byEvent.has(eventId)) byEvent.set(eventId, { metric, days: [] });
      byEvent.get(eventId)!.days.push({ day, count, value });
    }
    return byEvent;
  };
  const covariatesOf = (admitted: ResolvedIngest[], states: Array<[string, ParticipantState]>) =>
    plan(admitted, new Map(states)).change.enrolments.map((e) => `${e.experimentId}: ${e.covariates.map((c) => `${c.eventId}=${c.x / 1000n}k`).join(' ')}`);

  it.each([
    { name: 'a new participant has no history: no covariate', admitted: [ingest('a')], stored: [], covariates: ['100: ', '200: '] },
    {
      name: 'x sums the whole days of the window before the day of enrolment; today and days before the window are left out',
      admitted: [ingest('a')],
      stored: [stored('a', { history: history([[10, '2026-11-27', 2, 0n], [10, '2026-11-14', 1, 0n], [10, '2026-11-13', 5, 0n], [10, '2026-11-28', 7, 0n]]) })],
      covariates: ['100: 10=3000k', '200: 10=3000k'],
    },
    {
      name: 'the x of a value event is capped as its y is; each experiment reads its own window',
      admitted: [ingest('a', { running: [checkout, experiment(200, 'pricing', { pre_exposure_days: 1 })], experiments: [checkout, experiment(200, 'pricing', { pre_exposure_days: 1 })] })],
      stored: [stored('a', { history: history([[11, '2026-11-27', 1, 20n * M], [11, '2026-11-20', 2, 45n * M]]) })],
      covariates: ['100: 11=50000k', '200: 11=20000k'],
    },
    { name: 'a window of 0 turns the adjustment off', admitted: [ingest('a', { running: [experiment(100, 'checkout', { pre_exposure_days: 0 })], experiments: [experiment(100, 'checkout', { pre_exposure_days: 0 })] })], stored: [stored('a', { history: history([[10, '2026-11-27', 2, 0n]]) })], covariates: ['100: '] },
  ])('when $name', ({ admitted, stored: states, covariates }) => {
    expect(covariatesOf(admitted, states)).toEqual(covariates);
  });

  it("when an enrolled participant converts, then its move carries its frozen x for that event, and 0 where it has none", () => {
    const states = [stored('a', { enrolments: [enrolment(checkout, 101)], covariates: new Map([['100:10', 4n * M]]) })];
    const { change } = plan([ingest('a')], new Map(states));
    expect([...change.conversions.values()].map((m) => [m.experimentId, m.x])).toEqual([[100, 4n * M], [200, 0n]]);
  });

  it('when a participant enrols and converts in one plan, then the move uses the x frozen at that enrolment', () => {
    const { change } = plan([ingest('a'), ingest('a')], new Map([stored('a', { history: history([[10, '2026-11-20', 3, 0n]]) })]));
    expect([...change.conversions.values()].map((m) => [m.experimentId, m.x, m.after.count])).toEqual([[100, 3n * M, 2], [200, 3n * M, 2]]);
  });
});

describe('ingest admission: which resolved ingests are refused (server/ingest/plan.ts)', () => {
  const limited = { ...team, ingest_limit: 5 };
  it.each([
    { name: 'the quota has room', used: 4, fields: {}, refused: undefined, usedAfter: 5 },
    { name: 'the quota is used up (402, before any 409)', used: 5, fields: { target: experiment(100, 'checkout', { status: 'stopped' }) }, refused: QuotaExceeded, usedAfter: 5 },
    { name: 'the named experiment is not running (409)', used: 0, fields: { target: experiment(100, 'checkout', { status: 'draft' }) }, refused: Conflict, usedAfter: 0 },
    { name: 'the chosen variant has 0 % of the traffic (409)', used: 0, fields: { target: checkout, chosen: variant(102, 100, 'control', 0) }, refused: Conflict, usedAfter: 0 },
  ])('when $name', ({ used, fields, refused, usedAfter }) => {
    const quota = new Map([[1, used]]);
    const refusal = admission(quota, ingest('a', { team: limited, ...fields }), AT);
    if (refused) expect(refusal).toBeInstanceOf(refused);
    else expect(refusal).toBeUndefined();
    expect(quota.get(1)).toBe(usedAfter);
  });
});

describe("ingest plan: exposures to safe rollouts and their guardrails' counts", () => {
  const rollout = { id: 900, feature: 'checkout', number: 1, seed: '0'.repeat(32), share: 5, guardrails: new Set([purchase.id]) };
  const rollouts = new Map([[rollout.id, rollout]]);
  const exposed = (participant: string, arm: 'new' | 'current', fields: Partial<ResolvedIngest> = {}) =>
    ingest(participant, { exposure: { rollout, arm }, experiments: [], rollouts, event: undefined, ...fields });
  const moves = (change: ReturnType<typeof plan>['change']) => [...change.rolloutConversions.values()].map((m) => `${m.state.row.key}:${m.rolloutId}:${m.arm}:${m.eventId} ${m.before.count}→${m.after.count}`);

  it('when a participant is first exposed, then it enters the arm once, whatever later exposures say, and enrols in no experiment', () => {
    const { change } = plan([exposed('a', 'new'), exposed('a', 'current')]);
    expect(change.rolloutExposures.map((e) => `${e.state.row.key}:${e.rolloutId}:${e.arm}`)).toEqual(['a:900:new']);
    expect(change.enrolments).toEqual([]);
  });

  it('when an exposed participant reports a guardrail event, then it counts in its arm, from the exposure on', () => {
    const { change } = plan([ingest('a', { rollouts }), exposed('a', 'current'), ingest('a', { rollouts, input: { participant: 'a', enrol: false } }), exposed('a', 'current', { event: purchase })]);
    expect(moves(change)).toEqual(['a:900:current:10 0→2']);
  });

  it('when a stored participant was exposed before, then its stored arm and conversions are where its move starts, and it is not exposed again', () => {
    const { change } = plan([ingest('a', { rollouts, experiments: [] })], new Map([stored('a', { rollouts: new Map([[900, 'new']]), rolloutConversions: new Map([['900:10', { count: 3, value: 0n }]]) })]));
    expect(change.rolloutExposures).toEqual([]);
    expect(moves(change)).toEqual(['a:900:new:10 3→4']);
  });

  it('when the event is no guardrail, the rollout is no longer running or paused, or the ingest names an experiment, then no arm counts it', () => {
    const other: EventRow = { ...purchase, id: 12, key: 'signup' };
    const state = () => new Map([stored('a', { rollouts: new Map([[900, 'new']]) })]);
    expect(moves(plan([ingest('a', { rollouts, event: other, experiments: [] })], state()).change)).toEqual([]);
    expect(moves(plan([ingest('a', { rollouts: new Map(), experiments: [] })], state()).change)).toEqual([]);
    expect(moves(plan([ingest('a', { rollouts, target: checkout, experiments: [checkout] })], state()).change)).toEqual([]);
  });
});
