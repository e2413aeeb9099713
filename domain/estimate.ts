/**
 * The estimate the always-valid sequences and the verdicts judge — pure functions: the
 * regression-adjusted difference (cuped.ts) when both arms carry their pre-exposure sums, else,
 * and whenever the adjustment does not apply (x or y without variance), the unadjusted one.
 */
import { adjustedMixture, type AdjustedArm } from './cuped';
import type { MeanArm } from './means';
import { meansMixture, rateMixture, type Mixture } from './sequential';
import type { ArmCounts } from './statistics';

/** What is compared: the unique rate (yes/no) or the mean per participant (count and value events). */
export type Metric = 'rate' | 'mean';

/**
 * An arm's pre-exposure sums for one event, exactly: Σx in micro-units, Σx² and Σxy in micro-units
 * squared, x being the participant's metric over the window before its enrolment (for a yes/no
 * event, 1 when it converted then) and y its metric since (for a yes/no event, 1 when it converted).
 */
export interface Covariate {
  sumX: bigint;
  sumX2: bigint;
  sumXY: bigint;
}

/** An arm as a comparison reads it: its rate's counts, for a mean its sums, and with CUPED on its covariate. */
export type ComparedArm = Pick<ArmCounts, 'participants' | 'uniqueConversions'> & Partial<Pick<MeanArm, 'sum' | 'sumOfSquares' | 'micros'>> & { covariate?: Covariate };

const UNIT = 1_000_000n;

/** The arm's sums for the adjustment; null without a covariate. For a rate, y is 1 per converter, so Σy = Σy² = converters. */
export function adjustedArmOf(arm: ComparedArm, metric: Metric): AdjustedArm | null {
  if (!arm.covariate) return null;
  const converters = BigInt(arm.uniqueConversions);
  const y = metric === 'rate' ? { sumY: converters * UNIT, sumY2: converters * UNIT * UNIT } : { sumY: arm.micros?.sum ?? 0n, sumY2: arm.micros?.sumOfSquares ?? 0n };
  return { participants: arm.participants, ...y, ...arm.covariate };
}

const meanArm = (arm: ComparedArm): MeanArm => ({ participants: arm.participants, sum: arm.sum ?? 0, sumOfSquares: arm.sumOfSquares ?? 0, micros: arm.micros });

/** The judged difference with its variance and mixing SD: adjusted where it applies, else unadjusted; null when neither is computable. */
export function judgedMixture(arm: ComparedArm, control: ComparedArm, metric: Metric): Mixture | null {
  const adjusted = adjustedArmOf(arm, metric);
  const adjustedControl = adjustedArmOf(control, metric);
  const mixture = adjusted && adjustedControl && adjustedMixture(adjusted, adjustedControl, metric === 'rate' ? 'proportion' : 'mean');
  if (mixture) return mixture;
  return metric === 'mean' ? meansMixture(meanArm(arm), meanArm(control)) : rateMixture(arm, control);
}
