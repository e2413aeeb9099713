/**
 * Means of a per-participant metric (count or value) — pure functions. Each arm is summarised by
 * n, Σy and Σy² over its participants (y = 0 for a participant without the event), which is
 * enough for Welch's test on the difference and for the delta method on the relative uplift
 * (GrowthBook gbstats' `frequentist_variance`; Welch, Biometrika 34, 1947).
 */
import normalCdf from '@stdlib/stats-base-dists-normal-cdf';
import tCdf from '@stdlib/stats-base-dists-t-cdf';
import tQuantile from '@stdlib/stats-base-dists-t-quantile';
import type { Interval } from './statistics';

export interface MeanArm {
  participants: number;
  /** Σy over the arm's participants. */
  sum: number;
  /** Σy² over the arm's participants. */
  sumOfSquares: number;
  /**
   * The same sums exactly, as storage keeps them: Σy in micro-units, Σy² in micro-units squared.
   * When given, the variance is computed from them without rounding — in doubles, Σy² − (Σy)²/n
   * loses every digit of a variance of 2.5·10⁻⁵ next to a Σy² of 2·10²⁰.
   */
  micros?: { sum: bigint; sumOfSquares: bigint };
}

export interface MeanSummary {
  mean: number;
  /** Sample variance s² = (Σy² − n·m²) / (n − 1); null below 2 participants. */
  variance: number | null;
}

export interface MeanComparison {
  difference: number;
  standardError: number;
  degreesOfFreedom: number;
  pValue: number;
  interval: Interval;
  relativeUplift: number | null;
  relativeStandardError: number | null;
  relativePValue: number | null;
  relativeInterval: Interval | null;
  /** P(m_V > m_C) under a flat prior: Φ(difference / SE). */
  chanceToBeatControl: number;
  /** P(m_V/m_C − 1 > 0) under a flat prior on the relative uplift: Φ(uplift / SE); null when the uplift is. */
  relativeChanceToBeatControl: number | null;
}

/** The arm's mean and sample variance; null without participants. */
export function summarise(arm: MeanArm): MeanSummary | null {
  const n = arm.participants;
  if (!(Number.isSafeInteger(n) && n >= 0) || !Number.isFinite(arm.sum) || !(arm.sumOfSquares >= 0)) {
    throw new RangeError('participants must be a non-negative integer, Σy finite and Σy² non-negative');
  }
  if (n === 0) return null;
  const mean = arm.sum / n;
  return { mean, variance: n < 2 ? null : squaredDeviations(arm) / (n - 1) };
}

const MICROS_SQUARED = 1e12;

/**
 * m_V − m_C of two arms with participants: from the exact sums when both have them,
 * (Σy_V·n_C − Σy_C·n_V) / (n_V·n_C) rounded once — two means near 10⁹ keep only some 10⁻⁷ of
 * their difference as doubles.
 */
export function meanDifference(arm: MeanArm, control: MeanArm): number {
  if (!arm.micros || !control.micros) return arm.sum / arm.participants - control.sum / control.participants;
  const nV = BigInt(arm.participants);
  const nC = BigInt(control.participants);
  return Number(arm.micros.sum * nC - control.micros.sum * nV) / (arm.participants * control.participants) / 1e6;
}

/**
 * Σ(y − m)² = (nΣy² − (Σy)²) / n: from the exact sums when the arm has them (one rounding, at the
 * end), else in doubles floored at 0, where rounding may leave a tiny negative when all y are equal.
 */
function squaredDeviations(arm: MeanArm): number {
  const n = arm.participants;
  if (arm.micros) {
    const { sum, sumOfSquares } = arm.micros;
    return Math.max(0, Number(BigInt(n) * sumOfSquares - sum * sum)) / n / MICROS_SQUARED;
  }
  return Math.max(0, arm.sumOfSquares - (arm.sum * arm.sum) / n);
}

/** Welch–Satterthwaite degrees of freedom of a / n_a + b / n_b, with a and b the two variance terms. */
export function welchDegreesOfFreedom(termV: number, nV: number, termC: number, nC: number): number {
  return (termV + termC) ** 2 / (termV ** 2 / (nV - 1) + termC ** 2 / (nC - 1));
}

export const chanceAbove0 = (estimate: number, standardError: number): number => normalCdf(estimate / standardError, 0, 1);

export const twoSided = (t: number, dof: number): number => 2 * tCdf(-Math.abs(t), dof);

/**
 * The variant against the control: difference m_V − m_C with Welch's SE √(s_V²/n_V + s_C²/n_C),
 * its t on the Welch–Satterthwaite degrees of freedom, the two-sided p and the 95 % interval; the
 * relative uplift m_V/m_C − 1 with the delta-method SE √(s_V²/(m_C² n_V) + s_C² m_V²/(m_C⁴ n_C)),
 * tested and bounded with the same degrees of freedom. Null when an arm has fewer than 2
 * participants or both variances are 0; the relative figures are null unless m_C > 0 (a ratio to a
 * mean that is 0 or negative has no meaning as an uplift). The chances to beat the control are
 * gbstats' effect Bayesian test with a flat prior: the posterior of the effect is normal around
 * the estimate with its SE, and the chance is its mass above 0.
 */
export function compareMeans(arm: MeanArm, control: MeanArm, confidence = 0.95): MeanComparison | null {
  const v = summarise(arm);
  const c = summarise(control);
  if (!v || !c || v.variance === null || c.variance === null) return null;
  const termV = v.variance / arm.participants;
  const termC = c.variance / control.participants;
  if (!(termV + termC > 0)) return null;
  const { result, quantile } = welchTest(meanDifference(arm, control), termV, arm.participants, termC, control.participants, confidence);
  if (c.mean > 0) {
    const relative = result.difference / c.mean;
    const relativeSe = Math.sqrt(termV / c.mean ** 2 + (termC * v.mean ** 2) / c.mean ** 4);
    Object.assign(result, relativeFigures(relative, relativeSe, result.degreesOfFreedom, quantile));
  }
  return result;
}

/**
 * Welch's test of a difference whose variance is termV + termC (each an arm's variance over its
 * participants): SE, degrees of freedom, two-sided p, the interval at `confidence` and the chance
 * above 0; the relative figures null. With the t quantile of the interval.
 */
export function welchTest(difference: number, termV: number, nV: number, termC: number, nC: number, confidence: number): { result: MeanComparison; quantile: number } {
  const standardError = Math.sqrt(termV + termC);
  const degreesOfFreedom = welchDegreesOfFreedom(termV, nV, termC, nC);
  const quantile = tQuantile(1 - (1 - confidence) / 2, degreesOfFreedom);
  const result: MeanComparison = {
    difference,
    standardError,
    degreesOfFreedom,
    pValue: twoSided(difference / standardError, degreesOfFreedom),
    interval: { lower: difference - quantile * standardError, upper: difference + quantile * standardError },
    relativeUplift: null,
    relativeStandardError: null,
    relativePValue: null,
    relativeInterval: null,
    chanceToBeatControl: chanceAbove0(difference, standardError),
    relativeChanceToBeatControl: null,
  };
  return { result, quantile };
}

type RelativeFigures = Pick<MeanComparison, 'relativeUplift' | 'relativeStandardError' | 'relativePValue' | 'relativeInterval' | 'relativeChanceToBeatControl'>;

/** The relative uplift's test, interval (± quantile · SE) and chance above 0; p and chance null when its SE is 0. */
export function relativeFigures(relative: number, relativeSe: number, degreesOfFreedom: number, quantile: number): RelativeFigures {
  return {
    relativeUplift: relative,
    relativeStandardError: relativeSe,
    relativePValue: relativeSe > 0 ? twoSided(relative / relativeSe, degreesOfFreedom) : null,
    relativeInterval: { lower: relative - quantile * relativeSe, upper: relative + quantile * relativeSe },
    relativeChanceToBeatControl: relativeSe > 0 ? chanceAbove0(relative, relativeSe) : null,
  };
}
