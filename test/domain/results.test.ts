import { describe, expect, it } from 'vitest';
import { compareSequentially, cumulativeDays, daysRunning } from '../../domain/results';
import { confidenceSequence } from '../../domain/sequential';

describe('cumulativeDays', () => {
  it('when changes fall on days with gaps and some are negative, then every day from the first to the last has the totals at its end', () => {
    const micros = (sum: number, sumOfSquares: number) => ({ sum: BigInt(sum * 1e6), sumOfSquares: BigInt(sumOfSquares * 1e12) });
    const days = cumulativeDays(
      [
        { variantId: 1, day: '2026-02-27', participants: 10, uniqueConversions: 0, micros: micros(0, 0) },
        { variantId: 2, day: '2026-02-27', participants: 8, uniqueConversions: 0, micros: micros(0, 0) },
        { variantId: 1, day: '2026-02-27', participants: 0, uniqueConversions: 3, micros: micros(4.5, 10.25) },
        { variantId: 2, day: '2026-03-02', participants: -1, uniqueConversions: -1, micros: micros(-2, -4) },
        { variantId: 1, day: '2026-03-02', participants: 5, uniqueConversions: 1, micros: micros(1, 1) },
      ],
      [1, 2],
    );

    // 2026 is not a leap year: February 28th, then March 1st
    const arm = (participants: number, uniqueConversions: number, sum = 0, sumOfSquares = 0) => ({ participants, uniqueConversions, sum, sumOfSquares, micros: micros(sum, sumOfSquares) });
    expect(days.map(({ day, totals }) => [day, totals.get(1), totals.get(2)])).toEqual([
      ['2026-02-27', arm(10, 3, 4.5, 10.25), arm(8, 0)],
      ['2026-02-28', arm(10, 3, 4.5, 10.25), arm(8, 0)],
      ['2026-03-01', arm(10, 3, 4.5, 10.25), arm(8, 0)],
      ['2026-03-02', arm(15, 4, 5.5, 11.25), arm(7, -1, -2, -4)],
    ]);
  });

  it('when nothing changed, then there are no days', () => {
    expect(cumulativeDays([], [1, 2])).toEqual([]);
  });
});

describe('compareSequentially', () => {
  it('when the variant is the control or there is none, then every figure is null', () => {
    const arm = { participants: 200, uniqueConversions: 20 };
    expect(compareSequentially(arm, arm, true)).toEqual({ difference: null, confidenceSequence: null, verdict: null });
    expect(compareSequentially(arm, undefined, false)).toEqual({ difference: null, confidenceSequence: null, verdict: null });
  });

  it('when either side is below 100 participants, then it is collecting whatever the sequence says', () => {
    const verdict = compareSequentially({ participants: 99, uniqueConversions: 90 }, { participants: 1000, uniqueConversions: 10 }, false);
    expect(verdict.confidenceSequence!.lower).toBeGreaterThan(0);
    expect(verdict.verdict).toBe('collecting');
  });

  it('when the sequence is above, below or around 0, then better, worse or no difference', () => {
    const control = { participants: 1000, uniqueConversions: 100 };
    const better = compareSequentially({ participants: 1000, uniqueConversions: 200 }, control, false);
    expect(better).toEqual({ difference: 0.1, confidenceSequence: confidenceSequence({ participants: 1000, uniqueConversions: 200 }, control), verdict: 'variant_better' });
    expect(compareSequentially({ participants: 1000, uniqueConversions: 20 }, control, false).verdict).toBe('variant_worse');
    expect(compareSequentially({ participants: 1000, uniqueConversions: 110 }, control, false).verdict).toBe('no_difference');
  });
});

describe('daysRunning', () => {
  it('when started, then days to the stop (or now) to two decimals; null before the start', () => {
    expect(daysRunning('2026-03-01T10:00:00.000Z', '2026-03-05T12:00:00.000Z', '2026-04-01T00:00:00.000Z')).toBe(4.08);
    expect(daysRunning('2026-03-01T00:00:00.000Z', null, '2026-03-01T12:00:00.000Z')).toBe(0.5);
    expect(daysRunning(null, null, '2026-03-01T12:00:00.000Z')).toBeNull();
  });
});
