import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fisherExactPValue, needsExactTest } from '../../domain/exact';
import { compareMeans, summarise, type MeanArm } from '../../domain/means';
import { benjaminiHochberg, holm } from '../../domain/multiplicity';
import { minimumDetectableEffect, participantsStillNeeded } from '../../domain/power';
import { meansAlwaysValid } from '../../domain/sequential';
import { compareWithControl, type Interval } from '../../domain/statistics';
import { eventStatistics } from '../../server/variants/statistics';

interface RateCase {
  control: { participants: number; uniqueConversions: number };
  variant: { participants: number; uniqueConversions: number };
  expected: { test: 'normal' | 'exact'; zScore: number | null; pValue: number; differenceInterval: Interval | null; minimumDetectableEffect: number | null };
}
interface MeanCase {
  control: MeanArm;
  variant: MeanArm;
  expected: Record<string, number | null> & { interval: Interval; relativeInterval: Interval | null };
}
interface Vectors {
  rates: RateCase[];
  means: MeanCase[];
  meanSequences: Array<{ control: MeanArm; variant: MeanArm; alpha: number; effectSize: number; lower: number; upper: number; pValue: number }>;
  participantsNeeded: Array<{ variant: { participants: number; variance: number }; control: { participants: number; variance: number }; effect: number; stillNeeded: number }>;
  planning: Array<{ metric: 'rate' | 'mean'; minimumEffect: number; control: Record<string, number> & { participants: number }; variant: Record<string, number> & { participants: number }; participantsNeeded: number | null }>;
  multiplicity: Array<{ pValues: number[]; holm: number[]; benjaminiHochberg: number[] }>;
  largeValues: Array<{ control: StoredSums; variant: StoredSums; expected: Record<'controlVariance' | 'variantVariance' | 'difference' | 'standardError' | 'degreesOfFreedom' | 'pValue', number> }>;
}
/** An arm's sums as storage keeps them: micro-units, as decimal text. */
type StoredSums = { participants: number; sum: string; sumOfSquares: string };
// Computed by test/vectors/means.py, an independent pure-Python implementation.
const vectors = JSON.parse(readFileSync(new URL('../vectors/means.json', import.meta.url), 'utf8')) as Vectors;
const DECIMALS = 6;

function expectInterval(actual: Interval | null | undefined, expected: Interval | null): void {
  if (expected === null) return expect(actual).toBeNull();
  expect(actual!.lower).toBeCloseTo(expected.lower, DECIMALS);
  expect(actual!.upper).toBeCloseTo(expected.upper, DECIMALS);
}
const label = (c: { control: { participants: number }; variant: { participants: number } }, a: string, b: string) =>
  `${(c.control as Record<string, number>)[a]}/${c.control.participants} vs ${(c.variant as Record<string, number>)[a]}/${c.variant.participants} (${b})`;

describe('compareWithControl — unpooled z and the exact test below 5 expected', () => {
  it.each(vectors.rates.map((c) => [label(c, 'uniqueConversions', c.expected.test), c] as const))('when %s, then z, p, the interval and the MDE equal the reference', (_, c) => {
    const result = compareWithControl({ ...c.variant, conversions: c.variant.uniqueConversions }, { ...c.control, conversions: c.control.uniqueConversions }, false);
    expect(result.test).toBe(c.expected.test);
    expect(result.pValue).toBeCloseTo(c.expected.pValue, DECIMALS);
    if (c.expected.zScore === null) expect(result.zScore).toBeNull();
    else expect(result.zScore).toBeCloseTo(c.expected.zScore, DECIMALS);
    expectInterval(result.differenceInterval, c.expected.differenceInterval);
    if (c.expected.minimumDetectableEffect === null) expect(result.minimumDetectableEffect).toBeNull();
    else expect(result.minimumDetectableEffect).toBeCloseTo(c.expected.minimumDetectableEffect, DECIMALS);
  });

  it('when p is below 0.05 on the normal test, then the difference interval excludes 0, and the other way round', () => {
    for (const c of vectors.rates.filter((r) => r.expected.test === 'normal')) {
      const result = compareWithControl({ ...c.variant, conversions: 0 }, { ...c.control, conversions: 0 }, false);
      const excludesZero = result.differenceInterval!.lower > 0 || result.differenceInterval!.upper < 0;
      expect(result.pValue! < 0.05).toBe(excludesZero);
    }
  });

  it.each([
    ['1 000/100 against 100/17 (pooled p 0.030 with an interval containing 0)', 17, false],
    ['1 000/100 against 100/5 (pooled p 0.105 with an interval excluding 0)', 5, true],
  ] as const)('when %s, then p and the difference interval agree', (_, converted, significant) => {
    const result = compareWithControl({ participants: 100, conversions: converted, uniqueConversions: converted }, { participants: 1000, conversions: 100, uniqueConversions: 100 }, false);
    const excludesZero = result.differenceInterval!.lower > 0 || result.differenceInterval!.upper < 0;
    expect(result.test).toBe('normal');
    expect(result.pValue! < 0.05).toBe(significant);
    expect(excludesZero).toBe(significant);
  });

  it('when 50/0 is compared with 50/3, then the test is exact: Fisher 0.2424, not the normal 0.079', () => {
    const variant = { participants: 50, uniqueConversions: 0 };
    const control = { participants: 50, uniqueConversions: 3 };
    expect(needsExactTest(variant, control)).toBe(true);
    expect(fisherExactPValue(variant, control)).toBeCloseTo(0.2424, 4);
    const read = compareWithControl({ ...variant, conversions: 0 }, { ...control, conversions: 3 }, false);
    expect([read.test, read.zScore, read.differenceInterval]).toEqual(['exact', null, null]);
    expect(read.pValue).toBeCloseTo(0.2424, 4);
  });

  it('when counts per participant are n 500, Σc 900, Σc² 2 600 against n 500, Σc 1 000, Σc² 3 100, then Welch gives p 0.029 (gbstats), not "no difference"', () => {
    const result = compareMeans({ participants: 500, sum: 1000, sumOfSquares: 3100 }, { participants: 500, sum: 900, sumOfSquares: 2600 })!;
    expect(result.pValue).toBeCloseTo(0.0287, 4);
    expect(result.interval.lower).toBeGreaterThan(0);
  });

  it.each([
    ['nobody', 0, 0],
    ['everybody', 50, 40],
  ] as const)('audit, p of 1: when %s converted in both arms, then p is exactly 1 and confidence exactly 0, as documented (0.9999999999999991 was served)', (_, converted, ofForty) => {
    const all = ofForty === 40;
    const result = compareWithControl({ participants: 40, conversions: ofForty, uniqueConversions: ofForty }, { participants: 50, conversions: converted, uniqueConversions: converted }, false);
    expect(result.test).toBe('exact');
    expect(result.pValue).toBe(1);
    expect(result.confidence).toBe(0);
    expect(fisherExactPValue({ participants: 7, uniqueConversions: all ? 7 : 0 }, { participants: 1_000, uniqueConversions: all ? 1_000 : 0 })).toBe(1);
  });

  it('when each arm expects exactly 5 converters, then the normal test applies; at 4.5 the exact one', () => {
    expect(needsExactTest({ participants: 100, uniqueConversions: 5 }, { participants: 100, uniqueConversions: 5 })).toBe(false);
    expect(needsExactTest({ participants: 100, uniqueConversions: 4 }, { participants: 100, uniqueConversions: 5 })).toBe(true);
    expect(needsExactTest({ participants: 100, uniqueConversions: 95 }, { participants: 100, uniqueConversions: 96 })).toBe(true);
  });
});

describe('compareMeans — Welch and the delta method', () => {
  it.each(vectors.means.map((c) => [label(c, 'sum', `dof ${c.expected.degreesOfFreedom}`), c] as const))('when %s, then every figure equals the reference', (_, c) => {
    const result = compareMeans(c.variant, c.control)!;
    const e = c.expected;
    expect(summarise(c.control)!.mean).toBeCloseTo(e.controlMean!, DECIMALS);
    expect(summarise(c.control)!.variance).toBeCloseTo(e.controlVariance!, DECIMALS);
    expect(summarise(c.variant)!.variance).toBeCloseTo(e.variantVariance!, DECIMALS);
    expect(result.difference).toBeCloseTo(e.difference!, DECIMALS);
    expect(result.standardError).toBeCloseTo(e.standardError!, DECIMALS);
    expect(result.degreesOfFreedom).toBeCloseTo(e.degreesOfFreedom!, 3);
    expect(result.pValue).toBeCloseTo(e.pValue!, DECIMALS);
    expectInterval(result.interval, e.interval);
    expect(result.chanceToBeatControl).toBeCloseTo(e.chanceToBeatControl!, DECIMALS);
    if (e.relativeUplift === null) {
      expect([result.relativeUplift, result.relativeStandardError, result.relativePValue, result.relativeInterval, result.relativeChanceToBeatControl]).toEqual([null, null, null, null, null]);
    } else {
      expect(result.relativeUplift).toBeCloseTo(e.relativeUplift!, DECIMALS);
      expect(result.relativeStandardError).toBeCloseTo(e.relativeStandardError!, DECIMALS);
      expect(result.relativePValue).toBeCloseTo(e.relativePValue!, DECIMALS);
      expectInterval(result.relativeInterval, e.relativeInterval);
      expect(result.relativeChanceToBeatControl).toBeCloseTo(e.relativeChanceToBeatControl!, DECIMALS);
    }
    expect(minimumDetectableEffect(result.standardError)).toBeCloseTo(e.minimumDetectableEffect!, DECIMALS);
  });

  it('when an arm has fewer than 2 participants or no variance at all, then there is no comparison', () => {
    expect(compareMeans({ participants: 1, sum: 3, sumOfSquares: 9 }, { participants: 100, sum: 50, sumOfSquares: 80 })).toBeNull();
    expect(compareMeans({ participants: 10, sum: 10, sumOfSquares: 10 }, { participants: 10, sum: 10, sumOfSquares: 10 })).toBeNull();
    expect(summarise({ participants: 0, sum: 0, sumOfSquares: 0 })).toBeNull();
    expect(() => summarise({ participants: 3, sum: Number.NaN, sumOfSquares: 1 })).toThrow(RangeError);
  });
});

describe('audit, variance lost to rounding: values of 999 999 999.97 to 10⁹', () => {
  const stored = (arm: StoredSums): MeanArm => {
    const micros = { sum: BigInt(arm.sum), sumOfSquares: BigInt(arm.sumOfSquares) };
    return { participants: arm.participants, sum: Number(micros.sum) / 1e6, sumOfSquares: Number(micros.sumOfSquares) / 1e12, micros };
  };

  it.each(vectors.largeValues.map((c, i) => [i + 1, c] as const))('when case %s is summarised from the exact sums, then the variances and Welch\'s test equal the reference from the values themselves (Python fractions)', (_, c) => {
    const control = stored(c.control);
    const variant = stored(c.variant);
    // In doubles, Σy² − (Σy)²/n of these arms is rounding noise: the variance that was served.
    expect(summarise({ ...control, micros: undefined })!.variance).not.toBeCloseTo(c.expected.controlVariance, 6);

    expect(summarise(control)!.variance! / c.expected.controlVariance).toBeCloseTo(1, 12);
    expect(summarise(variant)!.variance! / c.expected.variantVariance).toBeCloseTo(1, 12);
    const comparison = compareMeans(variant, control)!;
    expect(comparison.difference).toBeCloseTo(c.expected.difference, 6);
    expect(comparison.standardError / c.expected.standardError).toBeCloseTo(1, 9);
    expect(comparison.degreesOfFreedom).toBeCloseTo(c.expected.degreesOfFreedom, 4);
    expect(comparison.pValue).toBeCloseTo(c.expected.pValue, 6);
    expect(meansAlwaysValid(variant, control)).not.toBeNull();
  });
});

describe('meansAlwaysValid — τ on the standardised scale', () => {
  it.each(vectors.meanSequences.map((c) => [label(c, 'sum', `α ${c.alpha}`), c] as const))('when %s, then the sequence and its p equal the bisection reference', (_, c) => {
    const result = meansAlwaysValid(c.variant, c.control, c.alpha, c.effectSize)!;
    expect(result.confidenceSequence.lower).toBeCloseTo(c.lower, DECIMALS);
    expect(result.confidenceSequence.upper).toBeCloseTo(c.upper, DECIMALS);
    expect(result.pValue).toBeCloseTo(c.pValue, DECIMALS);
    const excludesZero = result.confidenceSequence.lower > 0 || result.confidenceSequence.upper < 0;
    expect(result.pValue < c.alpha).toBe(excludesZero);
  });

  it('when the metric is measured in another unit (× 100), then the sequence scales with it and its p stays', () => {
    const arm = { participants: 800, sum: 1900, sumOfSquares: 6000 };
    const control = { participants: 800, sum: 1700, sumOfSquares: 5200 };
    const scaled = (a: MeanArm) => ({ participants: a.participants, sum: a.sum * 100, sumOfSquares: a.sumOfSquares * 10_000 });
    const once = meansAlwaysValid(arm, control)!;
    const inCents = meansAlwaysValid(scaled(arm), scaled(control))!;
    expect(inCents.confidenceSequence.lower).toBeCloseTo(once.confidenceSequence.lower * 100, 6);
    expect(inCents.pValue).toBeCloseTo(once.pValue, 10);
  });
});

describe('participantsStillNeeded', () => {
  it.each(vectors.participantsNeeded.map((c) => [`${c.variant.participants}/${c.control.participants} for ${c.effect}`, c] as const))('when %s, then it equals the reference', (_, c) => {
    expect(participantsStillNeeded(c.variant, c.control, c.effect)).toBe(c.stillNeeded);
  });

  it('when the effect is not positive or a variance is unknown, then null', () => {
    expect(participantsStillNeeded({ participants: 10, variance: 1 }, { participants: 10, variance: 1 }, 0)).toBeNull();
    expect(participantsStillNeeded({ participants: 1, variance: null }, { participants: 10, variance: 1 }, 0.1)).toBeNull();
  });
});

describe('participants needed for the experiment\'s minimum effect, as the statistics read gives them', () => {
  const totals = (arm: Record<string, number>) => ({ participants: arm.participants!, conversions: 0, uniqueConversions: arm.uniqueConversions ?? 0, sum: arm.sum ?? 0, sumOfSquares: arm.sumOfSquares ?? 0 });
  it.each(vectors.planning.map((c) => [`${c.metric} ${label(c, c.metric === 'rate' ? 'uniqueConversions' : 'sum', `minimum effect ${c.minimumEffect}`)}`, c] as const))(
    'when %s, then participants_needed equals the reference',
    (_, c) => {
      const type = c.metric === 'rate' ? 'unique' : 'value';
      const statistics = eventStatistics({ key: 'e', type }, totals(c.variant), totals(c.control), false, { minimum_effect: c.minimumEffect, pre_exposure_days: 0 });
      expect(c.metric === 'rate' ? statistics.participants_needed : statistics.means!.participants_needed).toBe(c.participantsNeeded);
    },
  );

  it('when the experiment states no minimum effect, or for the control, then there is no planning figure', () => {
    const arm = { participants: 1000, conversions: 130, uniqueConversions: 130, sum: 1000, sumOfSquares: 3100 };
    expect(eventStatistics({ key: 'e', type: 'value' }, arm, arm, false, { minimum_effect: null, pre_exposure_days: 14 })).toMatchObject({ participants_needed: null, means: { participants_needed: null } });
    expect(eventStatistics({ key: 'e', type: 'value' }, arm, arm, true, { minimum_effect: 0.1, pre_exposure_days: 14 })).toMatchObject({ participants_needed: null, means: { participants_needed: null } });
  });
});

describe('holm and benjaminiHochberg', () => {
  it.each(vectors.multiplicity.map((c) => [c.pValues.join(', '), c] as const))('when the p-values are %s, then the adjusted ones equal the reference', (_, c) => {
    holm(c.pValues).forEach((p, i) => expect(p).toBeCloseTo(c.holm[i]!, 10));
    benjaminiHochberg(c.pValues).forEach((p, i) => expect(p).toBeCloseTo(c.benjaminiHochberg[i]!, 10));
  });

  it('when a p-value is null, then it stays null and does not count as a test', () => {
    expect(holm([0.02, null, 0.04])).toEqual([0.04, null, 0.04]);
    expect(benjaminiHochberg([0.02, null, 0.04])).toEqual([0.04, null, 0.04]);
  });
});
