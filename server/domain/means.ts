/**
 * Means of a per-participant metric (count or value) — pure functions. Each arm is summarised by
 * n, Σy and Σy² over its participants (y = 0 for a participant without the event), which is
 * enough for Welch's test on the difference and for the delta method on the relative uplift
 * (GrowthBook gbstats' `frequentist_variance`; Welch, Biometrika 34, 1947).
 */
import tCdf from '@stdlib/stats-base-dists-t-cdf';
import tQuantile from '@stdlib/stats-base-dists-t-quantile';
import type { Interval } from './statistics';

export interface MeanArm {
  participants: number;
  /** Σy over the arm's participants. */
  sum: number;
  /** Σy² over the arm's participants. */
  sumOfSquares: number;
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
}

/** The arm's mean and sample variance; null without participants. */
export function summarise(arm: MeanArm): MeanSummary | null {
  const n = arm.participants;
  if (!(Number.isSafeInteger(n) && n >= 0) || !Number.isFinite(arm.sum) || !(arm.sumOfSquares >= 0)) {
    throw new RangeError('participants must be a non-negative integer, Σy finite and Σy² non-negative');
  }
  if (n === 0) return null;
  const mean = arm.sum / n;
  // Σy² − (Σy)²/n, floored at 0: rounding may leave a tiny negative where all y are equal.
  const variance = n < 2 ? null : Math.max(0, (arm.sumOfSquares - (arm.sum * arm.sum) / n) / (n - 1));
  return { mean, variance };
}

/** Welch–Satterthwaite degrees of freedom of a / n_a + b / n_b, with a and b the two variance terms. */
function welchDegreesOfFreedom(termV: number, nV: number, termC: number, nC: number): number {
  return (termV + termC) ** 2 / (termV ** 2 / (nV - 1) + termC ** 2 / (nC - 1));
}

const twoSided = (t: number, dof: number): number => 2 * tCdf(-Math.abs(t), dof);

/**
 * The variant against the control: difference m_V − m_C with Welch's SE √(s_V²/n_V + s_C²/n_C),
 * its t on the Welch–Satterthwaite degrees of freedom, the two-sided p and the 95 % interval; the
 * relative uplift m_V/m_C − 1 with the delta-method SE √(s_V²/(m_C² n_V) + s_C² m_V²/(m_C⁴ n_C)),
 * tested and bounded with the same degrees of freedom. Null when an arm has fewer than 2
 * participants or both variances are 0; the relative figures are null unless m_C > 0 (a ratio to a
 * mean that is 0 or negative has no meaning as an uplift).
 */
export function compareMeans(arm: MeanArm, control: MeanArm, confidence = 0.95): MeanComparison | null {
  const v = summarise(arm);
  const c = summarise(control);
  if (!v || !c || v.variance === null || c.variance === null) return null;
  const termV = v.variance / arm.participants;
  const termC = c.variance / control.participants;
  const standardError = Math.sqrt(termV + termC);
  if (!(standardError > 0)) return null;
  const degreesOfFreedom = welchDegreesOfFreedom(termV, arm.participants, termC, control.participants);
  const quantile = tQuantile(1 - (1 - confidence) / 2, degreesOfFreedom);
  const difference = v.mean - c.mean;
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
  };
  if (c.mean > 0) {
    const relative = v.mean / c.mean - 1;
    const relativeSe = Math.sqrt(termV / c.mean ** 2 + (termC * v.mean ** 2) / c.mean ** 4);
    Object.assign(result, {
      relativeUplift: relative,
      relativeStandardError: relativeSe,
      relativePValue: relativeSe > 0 ? twoSided(relative / relativeSe, degreesOfFreedom) : null,
      relativeInterval: { lower: relative - quantile * relativeSe, upper: relative + quantile * relativeSe },
    });
  }
  return result;
}
