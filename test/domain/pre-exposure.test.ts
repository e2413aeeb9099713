import { describe, expect, it } from 'vitest';
import type { Covariate } from '../../domain/estimate';
import { DEFAULT_WINDOW_DAYS, enrolmentChange, oldestKeptDay, outcomeChange, preExposureValue, windowOf } from '../../domain/pre-exposure';
import { cumulativeDays } from '../../domain/results';

const M = 1_000_000n;
const activity = [
  { day: '2026-02-10', count: 5, value: 500n * M },
  { day: '2026-02-14', count: 1, value: 20n * M },
  { day: '2026-02-27', count: 2, value: 35n * M + 500_000n },
  { day: '2026-02-28', count: 1, value: 10n * M },
  { day: '2026-03-01', count: 3, value: 90n * M },
];

describe('the pre-exposure window', () => {
  it('when a participant enrols on March 1st with the default 14 days, then x covers February 15th to 28th: not the day of enrolment, not before the window', () => {
    expect(DEFAULT_WINDOW_DAYS).toBe(14);
    expect(windowOf('2026-03-01T09:30:00.000Z', 14)).toEqual({ first: '2026-02-15', last: '2026-02-28' });
    expect(preExposureValue({ type: 'count', cap: null }, activity, '2026-03-01T09:30:00.000Z', 14)).toBe(3n * M);
    expect(preExposureValue({ type: 'value', cap: null }, activity, '2026-03-01T09:30:00.000Z', 14)).toBe(45n * M + 500_000n);
    expect(preExposureValue({ type: 'value', cap: null }, activity, '2026-03-01T09:30:00.000Z', 17)).toBe(65n * M + 500_000n);
  });

  it('when the event is yes/no, then x is 1 for a participant who did it in the window and 0 otherwise', () => {
    expect(preExposureValue({ type: 'unique', cap: null }, activity, '2026-03-01T00:00:00.000Z', 1)).toBe(M);
    // Three events in the window: still 1.
    expect(preExposureValue({ type: 'unique', cap: null }, activity, '2026-03-01T00:00:00.000Z', 14)).toBe(M);
    expect(preExposureValue({ type: 'unique', cap: null }, activity, '2026-02-27T00:00:00.000Z', 7)).toBe(0n);
  });

  it('when the event has a cap, then x is capped as y is', () => {
    expect(preExposureValue({ type: 'value', cap: 40 }, activity, '2026-03-01T09:30:00.000Z', 14)).toBe(40n * M);
  });

  it('when the window is 0, then there is no window and x is 0; outside 0 to 60 days it is refused', () => {
    expect(windowOf('2026-03-01T09:30:00.000Z', 0)).toBeNull();
    expect(preExposureValue({ type: 'count', cap: null }, activity, '2026-03-01T09:30:00.000Z', 0)).toBe(0n);
    expect(() => windowOf('2026-03-01T09:30:00.000Z', 61)).toThrow(RangeError);
    expect(() => windowOf('2026-03-01T09:30:00.000Z', 1.5)).toThrow(RangeError);
  });

  it('when the longest window is 14 days, then a sweep on March 15th keeps March 1st on: the window of an enrolment that day starts there', () => {
    expect(oldestKeptDay('2026-03-15T23:59:00.000Z', 14)).toBe('2026-03-01');
    expect(windowOf('2026-03-15T00:00:00.000Z', 14)!.first).toBe('2026-03-01');
  });
});

/** A seeded uniform generator. */
function uniforms(seed: number): () => number {
  let state = seed >>> 0;
  return () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) + 0.5) / 2 ** 32;
}

const add = (a: Covariate, b: Covariate): Covariate => ({ sumX: a.sumX + b.sumX, sumX2: a.sumX2 + b.sumX2, sumXY: a.sumXY + b.sumXY });
const ZERO: Covariate = { sumX: 0n, sumX2: 0n, sumXY: 0n };

describe('the counters Σx, Σx², Σxy', () => {
  it('when 2 000 seeded participants enrol, convert, leave and come back in turn, then the counters kept by changes equal the sums over those enrolled', () => {
    const random = uniforms(20261128);
    const enrolled = new Map<number, { x: bigint; y: bigint }>();
    let counters = ZERO;
    for (let step = 0; step < 2_000; step++) {
      const id = Math.floor(random() * 300);
      const participant = enrolled.get(id);
      const roll = random();
      if (!participant) {
        const x = BigInt(Math.floor(random() * 1e9)) * 1_000n;
        const y = roll < 0.2 ? BigInt(Math.floor(random() * 1e6)) : 0n;
        enrolled.set(id, { x, y });
        counters = add(counters, enrolmentChange(x, y));
      } else if (roll < 0.7) {
        const after = participant.y + BigInt(Math.floor(random() * 1e12)) - 400_000_000_000n;
        counters = add(counters, outcomeChange(participant.x, participant.y, after));
        participant.y = after;
      } else {
        counters = add(counters, enrolmentChange(participant.x, participant.y, true));
        enrolled.delete(id);
      }
    }
    const recomputed = [...enrolled.values()].reduce((sums, { x, y }) => add(sums, { sumX: x, sumX2: x * x, sumXY: x * y }), ZERO);
    expect(enrolled.size).toBeGreaterThan(50);
    expect(counters).toEqual(recomputed);
  });

  it('when daily changes carry covariate sums, then the history sums them into each day\'s totals', () => {
    const micros = { sum: 0n, sumOfSquares: 0n };
    const days = cumulativeDays(
      [
        { variantId: 1, day: '2026-02-27', participants: 2, uniqueConversions: 0, micros, covariate: enrolmentChange(3n * M, 0n) },
        { variantId: 1, day: '2026-02-28', participants: 0, uniqueConversions: 1, micros: { sum: 2n * M, sumOfSquares: 4n * M * M }, covariate: outcomeChange(3n * M, 0n, 2n * M) },
        { variantId: 2, day: '2026-02-28', participants: 1, uniqueConversions: 0, micros },
      ],
      [1, 2],
    );
    expect(days.map(({ totals }) => totals.get(1)!.covariate)).toEqual([
      { sumX: 3n * M, sumX2: 9n * M * M, sumXY: 0n },
      { sumX: 3n * M, sumX2: 9n * M * M, sumXY: 6n * M * M },
    ]);
    expect(days[1]!.totals.get(2)!.covariate).toBeUndefined();
  });
});
