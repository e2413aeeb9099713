/**
 * Per-variant statistics — pure functions, as the contract defines them (EventStatistics).
 *
 * - Uplift, z, p, power and both intervals are on the unique conversion rate p = x / n; z, p,
 *   power and the difference interval share one unpooled standard error, so p < 0.05 exactly
 *   when the interval excludes 0.
 * - Where the normal approximation does not hold (exact.ts: fewer than 5 expected converters or
 *   non-converters in an arm), p is Fisher's exact test and z, power, the difference interval
 *   and the minimum detectable effect are null — never a normal figure that contradicts it.
 * - The control arm reports uplift 0, z 0, p 1, confidence 0 and no power, difference interval
 *   or chance to beat control (null); all its comparisons are null when it has no participants.
 * - Chance to beat control is P(θ_V > θ_C) with Beta(1 + x, 1 + n − x) posteriors
 *   (chance-to-beat-control.ts).
 */
import gammainc from '@stdlib/math-base-special-gammainc';
import normalCdf from '@stdlib/stats-base-dists-normal-cdf';
import { assertPosteriorCounts, chanceToBeatControl, isCount } from './chance-to-beat-control';
import { fisherExactPValue, needsExactTest } from './exact';
import { minimumDetectableEffect } from './power';

export interface ArmCounts {
  participants: number;
  uniqueConversions: number;
  conversions: number;
}

export interface Interval {
  lower: number;
  upper: number;
}

export interface EventComparison {
  countConversionRate: number | null;
  uniqueConversionRate: number | null;
  uplift: number | null;
  zScore: number | null;
  pValue: number | null;
  confidence: number | null;
  power: number | null;
  conversionRateInterval: Interval | null;
  differenceInterval: Interval | null;
  chanceToBeatControl: number | null;
  /** `normal` (z test) or `exact` (Fisher's); null when there is no test. */
  test: 'normal' | 'exact' | null;
  minimumDetectableEffect: number | null;
}

/** Two-sided 95 % standard normal quantile. */
export const Z95 = 1.959964;

const Phi = (z: number): number => normalCdf(z, 0, 1);


function assertArmCounts(arm: ArmCounts): void {
  assertPosteriorCounts(arm);
  if (!isCount(arm.conversions)) throw new RangeError('conversions must be a non-negative integer');
}

/** Wilson score 95 % interval of x successes out of n > 0 trials. */
export function wilsonInterval(x: number, n: number): Interval {
  const p = x / n;
  const z2 = Z95 * Z95;
  const denominator = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denominator;
  const halfWidth = (Z95 / denominator) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  // At x = 0 and x = n the bound is exactly 0 or 1; computed, it leaves rounding residue.
  return {
    lower: x === 0 ? 0 : Math.max(0, centre - halfWidth),
    upper: x === n ? 1 : Math.min(1, centre + halfWidth),
  };
}

/** Statistics of `arm` for one event, compared with the experiment's control. */
export function compareWithControl(
  arm: ArmCounts,
  control: ArmCounts,
  isControl: boolean,
): EventComparison {
  assertArmCounts(arm);
  assertArmCounts(control);
  const nV = arm.participants;
  const nC = control.participants;
  const result: EventComparison = {
    countConversionRate: nV > 0 ? arm.conversions / nV : null,
    uniqueConversionRate: nV > 0 ? arm.uniqueConversions / nV : null,
    uplift: null,
    zScore: null,
    pValue: null,
    confidence: null,
    power: null,
    conversionRateInterval: nV > 0 ? wilsonInterval(arm.uniqueConversions, nV) : null,
    differenceInterval: null,
    chanceToBeatControl: null,
    test: null,
    minimumDetectableEffect: null,
  };

  if (isControl) {
    if (nC > 0) Object.assign(result, { uplift: 0, zScore: 0, pValue: 1, confidence: 0 });
    return result;
  }
  if (nV === 0 || nC === 0) return result;

  const pV = arm.uniqueConversions / nV;
  const pC = control.uniqueConversions / nC;
  const difference = pV - pC;

  if (pC > 0) result.uplift = difference / pC;

  result.chanceToBeatControl = chanceToBeatControl(arm, control);
  if (needsExactTest(arm, control)) {
    const p = fisherExactPValue(arm, control);
    return Object.assign(result, { pValue: p, confidence: 1 - p, test: 'exact' });
  }
  const se = Math.sqrt((pC * (1 - pC)) / nC + (pV * (1 - pV)) / nV);
  if (se > 0) {
    const z = difference / se;
    // 2Φ(−|z|) equals 2(1 − Φ(|z|)) without cancellation for large |z|.
    const p = 2 * Phi(-Math.abs(z));
    const standardised = Math.abs(z);
    Object.assign(result, {
      zScore: z,
      pValue: p,
      confidence: 1 - p,
      power: Phi(standardised - Z95) + Phi(-standardised - Z95),
      differenceInterval: { lower: difference - Z95 * se, upper: difference + Z95 * se },
      test: 'normal',
      minimumDetectableEffect: minimumDetectableEffect(se),
    });
  }
  return result;
}

/**
 * Sample-ratio mismatch: Pearson χ² of observed participants against the traffic weights,
 * df = k − 1. An arm with weight 0 expects nobody: empty, it is left out; with participants, the
 * split is certainly broken — χ² infinite (null: JSON has no infinity) and p 0. Otherwise null when
 * fewer than two arms remain or none of them has participants.
 */
export function sampleRatioMismatch(
  observed: number[],
  weights: number[],
): { chiSquare: number | null; pValue: number } | null {
  if (observed.length !== weights.length) {
    throw new RangeError('observed and weights must have the same length');
  }
  if (observed.some((o) => !isCount(o))) {
    throw new RangeError('observed counts must be non-negative integers');
  }
  if (weights.some((w) => !Number.isFinite(w) || w < 0)) {
    throw new RangeError('weights must be finite and non-negative');
  }
  if (observed.some((o, i) => o > 0 && weights[i] === 0)) return { chiSquare: null, pValue: 0 };
  const arms = observed.map((o, i) => ({ o, w: weights[i]! })).filter((a) => a.w > 0);
  const total = arms.reduce((sum, a) => sum + a.o, 0);
  const totalWeight = arms.reduce((sum, a) => sum + a.w, 0);
  if (arms.length < 2 || total === 0) return null;

  let chiSquare = 0;
  for (const { o, w } of arms) {
    const expected = (total * w) / totalWeight;
    chiSquare += ((o - expected) * (o - expected)) / expected;
  }
  const df = arms.length - 1;
  return { chiSquare, pValue: gammainc(chiSquare / 2, df / 2, true, true) };
}
