import { describe, expect, it } from 'vitest';
import { emptyChange, type ConversionMove, type LedgerChange, type ParticipantState } from '../../server/ledger/change';
import { countersOf, eventDelta, takesBack } from '../../server/ledger/counters';
import { removal, withdrawal } from '../../server/ledger/removals';

// The counters a change moves, computed once from the change (server/ledger/counters.ts); micro-units.
const AT = '2026-11-28T12:00:00.000Z';
const M = 1_000_000n;
const state = { row: { id: 7, team_id: 1, key: 'a' } } as ParticipantState;
const count = { type: 'count' as const, cap: null };
// The CUPED sums of a change that moves no covariate.
const NO_X = { sum_x: 0n, sum_x2: 0n, sum_xy: 0n };

function move(metric: ConversionMove['metric'], before: [number, bigint], after: [number, bigint], variantId = 101): ConversionMove {
  return { state, teamId: 1, experimentId: 100, eventId: 10, variantId, metric, before: { count: before[0], value: before[1] }, after: { count: after[0], value: after[1] }, x: 0n };
}

describe('counter deltas of a change (server/ledger/counters.ts)', () => {
  it.each([
    { name: 'a first count conversion', move: move(count, [0, 0n], [1, 0n]), delta: { conversions: 1n, unique_conversions: 1n, sum_y: M, sum_y2: M * M } },
    { name: 'a count going 2 → 5', move: move(count, [2, 0n], [5, 0n]), delta: { conversions: 3n, unique_conversions: 0n, sum_y: 3n * M, sum_y2: 21n * M * M } },
    { name: 'a unique event converting again', move: move({ type: 'unique', cap: null }, [1, 0n], [2, 0n]), delta: { conversions: 1n, unique_conversions: 0n, sum_y: M, sum_y2: 3n * M * M } },
    { name: 'a value 30 → 70 capped at 50', move: move({ type: 'value', cap: 50 }, [1, 30n * M], [2, 70n * M]), delta: { conversions: 1n, unique_conversions: 0n, sum_y: 20n * M, sum_y2: (2500n - 900n) * M * M } },
    { name: 'a value going negative', move: move({ type: 'value', cap: null }, [0, 0n], [1, -5n * M]), delta: { conversions: 1n, unique_conversions: 1n, sum_y: -5n * M, sum_y2: 25n * M * M } },
    { name: 'a removed participant’s 3 counts (back to none)', move: move(count, [3, 0n], [0, 0n]), delta: { conversions: -3n, unique_conversions: -1n, sum_y: -3n * M, sum_y2: -9n * M * M } },
  ])('when $name, then each counter moves by its part', ({ move: moved, delta }) => {
    expect(eventDelta(moved)).toEqual({ ...delta, ...NO_X });
  });

  it('when moves share a variant × event, then their deltas add up into one; enrolments count their variants', () => {
    const change: LedgerChange = emptyChange(AT, '2026-11', AT);
    change.enrolments.push({ state, teamId: 1, experimentId: 100, variantId: 101, covariates: [] }, { state, teamId: 1, experimentId: 200, variantId: 201, covariates: [] }, { state, teamId: 1, experimentId: 100, variantId: 101, covariates: [] });
    change.conversions.set('a', move(count, [0, 0n], [1, 0n]));
    change.conversions.set('b', move(count, [1, 0n], [3, 0n]));
    change.conversions.set('c', move(count, [0, 0n], [2, 0n], 102));
    const { variants, events } = countersOf(change);
    expect(variants).toEqual([{ teamId: 1, variantId: 101, participants: 2 }, { teamId: 1, variantId: 201, participants: 1 }]);
    expect(events).toEqual([
      { teamId: 1, variantId: 101, eventId: 10, counters: { conversions: 3n, unique_conversions: 1n, sum_y: 3n * M, sum_y2: 9n * M * M, ...NO_X } },
      { teamId: 1, variantId: 102, eventId: 10, counters: { conversions: 2n, unique_conversions: 1n, sum_y: 2n * M, sum_y2: 4n * M * M, ...NO_X } },
    ]);
    expect(events.some(takesBack)).toBe(false);
  });

  it("when a participant is erased, then its variants lose it and its conversions' y leaves Σy and Σy² (a change that takes back)", () => {
    const change = removal(AT, { id: 7, team_id: 1 }, [{ experiment_id: 100, variant_id: 101 }], [
      { experiment_id: 100, event_id: 10, count: '2', value: '0', type: 'count', cap: null },
      { experiment_id: 100, event_id: 11, count: 1, value: '-4500000', type: 'value', cap: null },
      // Not in a removed experiment: it stays.
      { experiment_id: 300, event_id: 10, count: 1, value: '0', type: 'count', cap: null },
    ]);
    const { variants, events } = countersOf(change);
    expect(variants).toEqual([{ teamId: 1, variantId: 101, participants: -1 }]);
    expect(events.map((e) => [e.eventId, e.counters])).toEqual([
      [10, { conversions: -2n, unique_conversions: -1n, sum_y: -2n * M, sum_y2: -4n * M * M, ...NO_X }],
      [11, { conversions: -1n, unique_conversions: -1n, sum_y: 4_500_000n, sum_y2: -20_250_000_000_000n, ...NO_X }],
    ]);
    expect(events.every(takesBack)).toBe(true);
    expect(change.withdrawals).toEqual([{ teamId: 1, participantId: 7, experimentId: 100, variantId: 101, takenBack: true, covariates: [] }]);
  });

  it('when an enrolment is withdrawn by intention to treat, then its rows go and no counter moves; the participant is excluded', () => {
    const change = withdrawal(AT, { id: 7, team_id: 1 }, { experiment_id: 100, variant_id: 101 }, true);
    expect(countersOf(change)).toEqual({ variants: [], events: [] });
    expect(change.withdrawals).toEqual([{ teamId: 1, participantId: 7, experimentId: 100, variantId: 101, takenBack: false, covariates: [] }]);
    expect(change.exclusions).toEqual([{ teamId: 1, participantId: 7, experimentId: 100 }]);
  });

  it('when participants with covariates enrol and convert, then Σx, Σx² gain each x at enrolment and Σxy gains x times each change of y', () => {
    const change: LedgerChange = emptyChange(AT, '2026-11', AT);
    change.enrolments.push({ state, teamId: 1, experimentId: 100, variantId: 101, covariates: [{ eventId: 10, x: 3n * M }, { eventId: 11, x: -2n * M }] });
    change.enrolments.push({ state, teamId: 1, experimentId: 100, variantId: 101, covariates: [{ eventId: 10, x: 1n * M }] });
    change.conversions.set('a', { ...move(count, [0, 0n], [2, 0n]), x: 3n * M });
    change.conversions.set('b', { ...move(count, [4, 0n], [5, 0n]), x: 1n * M });
    const { events } = countersOf(change);
    expect(events).toEqual([
      { teamId: 1, variantId: 101, eventId: 10, counters: { conversions: 3n, unique_conversions: 1n, sum_y: 3n * M, sum_y2: (4n + 25n - 16n) * M * M, sum_x: 4n * M, sum_x2: 10n * M * M, sum_xy: (6n + 1n) * M * M } },
      { teamId: 1, variantId: 101, eventId: 11, counters: { conversions: 0n, unique_conversions: 0n, sum_y: 0n, sum_y2: 0n, sum_x: -2n * M, sum_x2: 4n * M * M, sum_xy: 0n } },
    ]);
  });

  it('when a participant with covariates is erased, then Σx, Σx² and Σxy lose exactly what its enrolment and conversions added', () => {
    const entered: LedgerChange = emptyChange(AT, '2026-11', AT);
    entered.enrolments.push({ state, teamId: 1, experimentId: 100, variantId: 101, covariates: [{ eventId: 10, x: 3n * M }, { eventId: 11, x: 7n * M }] });
    entered.conversions.set('a', { ...move(count, [0, 0n], [2, 0n]), x: 3n * M });
    const erased = removal(AT, { id: 7, team_id: 1 }, [{ experiment_id: 100, variant_id: 101 }], [{ experiment_id: 100, event_id: 10, count: 2, value: '0', type: 'count', cap: null }], [
      { experiment_id: 100, event_id: 10, x: '3000000' },
      { experiment_id: 100, event_id: 11, x: 7_000_000 },
    ]);
    const sums = (change: LedgerChange) => new Map(countersOf(change).events.map((e) => [e.eventId, [e.counters.sum_x, e.counters.sum_x2, e.counters.sum_xy]]));
    const [added, takenBack] = [sums(entered), sums(erased)];
    for (const [eventId, values] of added) expect(takenBack.get(eventId)).toEqual(values.map((v) => -v));
    expect(erased.withdrawals[0]!.covariates).toEqual([{ eventId: 10, x: 3n * M }, { eventId: 11, x: 7n * M }]);
  });
});
