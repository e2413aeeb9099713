/**
 * Planning figures — pure functions: the smallest effect the current sample can detect and the
 * participants still needed for a stated one, at α = 0.05 two-sided and 80 % power.
 *
 * For a difference whose standard error is √(σ_V²/n_V + σ_C²/n_C), a true difference δ is
 * detected with power 1 − β when |δ| = (z_{1−α/2} + z_{1−β}) · SE (the approximation of
 * GrowthBook gbstats' `MidExperimentPower`, which also leaves out the far tail).
 */
import normalQuantile from '@stdlib/stats-base-dists-normal-quantile';

/** Power the planning figures aim for. */
export const TARGET_POWER = 0.8;
const MULTIPLIER = normalQuantile(0.975, 0, 1) + normalQuantile(TARGET_POWER, 0, 1);

/** Smallest |difference| detected with TARGET_POWER at the current standard error; null without one. */
export function minimumDetectableEffect(standardError: number | null): number | null {
  return standardError !== null && standardError > 0 ? MULTIPLIER * standardError : null;
}

/**
 * Participants still needed in the variant and the control together, split between them as now
 * (equally while either is empty), for a difference of `effect` (absolute) to be detected with
 * TARGET_POWER, from the per-participant variances σ_V² and σ_C² estimated so far; 0 once
 * reached, null when the effect is not positive or the variances are unknown or both 0.
 */
export function participantsStillNeeded(
  arm: { participants: number; variance: number | null },
  control: { participants: number; variance: number | null },
  effect: number,
): number | null {
  if (!(effect > 0) || arm.variance === null || control.variance === null) return null;
  if (arm.variance + control.variance === 0) return null;
  // With a share s of the pair in the variant: SE² = (σ_V²/s + σ_C²/(1 − s)) / N; equal split when both are empty.
  const share = arm.participants > 0 && control.participants > 0 ? arm.participants / (arm.participants + control.participants) : 0.5;
  const total = Math.ceil(((MULTIPLIER / effect) ** 2) * (arm.variance / share + control.variance / (1 - share)));
  return Math.max(0, total - (arm.participants + control.participants));
}

/**
 * participantsStillNeeded for an effect relative to the control's value (its rate or its mean):
 * the absolute effect is `minimumEffect · controlValue`; null without a minimum effect or unless
 * the control's value is above 0 (a share of nothing is no effect).
 */
export function participantsNeededForRelative(
  arm: { participants: number; variance: number | null },
  control: { participants: number; variance: number | null },
  controlValue: number | null,
  minimumEffect: number | null,
): number | null {
  if (minimumEffect === null || controlValue === null || !(controlValue > 0)) return null;
  return participantsStillNeeded(arm, control, minimumEffect * controlValue);
}

/** An arm of a rate as planning reads it: its participants and the Bernoulli variance p(1 − p); unknown without participants. */
export function rateArm(arm: { participants: number; uniqueConversions: number }): { participants: number; variance: number | null; rate: number | null } {
  if (arm.participants === 0) return { participants: 0, variance: null, rate: null };
  const rate = arm.uniqueConversions / arm.participants;
  return { participants: arm.participants, variance: rate * (1 - rate), rate };
}
