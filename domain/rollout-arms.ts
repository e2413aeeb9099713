/**
 * The two arms of a safe rollout and its ramp — pure functions.
 *
 * A rollout has an immutable seed (32 lowercase hex characters). A participant that matches the
 * rollout's conditions has the bucket b = floor(h × 10 000 / 2^32) with h the first four bytes of
 * SHA-256(UTF-8(seed) ‖ 0x3A ‖ UTF-8(participant key)) read big-endian — the experiments' digest
 * (assignment.ts). At a share of s % (w = round(s × 100) buckets):
 *
 * - b < w: the `new` arm, served the rollout's new value;
 * - b ≥ 10 000 − w: the `current` arm, served the flag's current value and compared with `new`;
 * - otherwise no arm: served the current value and not tracked.
 *
 * Both arms hold w buckets, so they are balanced at every step. Raising the share only adds
 * buckets at each end: nobody leaves an arm, nobody moves from the new value back to the current
 * one, and the arms never overlap while s ≤ 50. At 100 % every participant gets the new value.
 */
import { assignmentDigest, scaled } from './assignment';

export const RAMP_BUCKETS = 10_000;

export type RolloutArm = 'new' | 'current';

/** The participant's arm at a share (0–100 %), or null when the participant is in neither. */
export function rolloutArm(seed: string, participant: string, share: number): RolloutArm | null {
  const bucket = scaled(assignmentDigest(seed, participant), 0, RAMP_BUCKETS);
  const width = Math.round(share * 100);
  if (bucket < width) return 'new';
  return bucket >= RAMP_BUCKETS - width ? 'current' : null;
}

/** One step of the ramp: its share, the least time it is held and the least new exposures per arm it needs. */
export interface RolloutStep {
  percentage: number;
  holdSeconds: number;
  minimumExposures: number;
}

export const DEFAULT_PERCENTAGES = [1, 5, 10, 25, 50, 100] as const;
/** An hour at each step: long enough to see the change in more than one minute of traffic. */
export const DEFAULT_HOLD_SECONDS = 3_600;
/** New exposures each arm needs at each step (bench/rollouts.ts tunes it: see bench/README.md). */
export const DEFAULT_MINIMUM_EXPOSURES = 2_000;
/** The largest share compared with an equal share of the current value: above it no equal share is left. */
export const LARGEST_COMPARED_SHARE = 50;

export function defaultSteps(): RolloutStep[] {
  return DEFAULT_PERCENTAGES.map((percentage) => ({ percentage, holdSeconds: DEFAULT_HOLD_SECONDS, minimumExposures: DEFAULT_MINIMUM_EXPOSURES }));
}

/**
 * What is wrong with a ramp, or null: at least one compared step, shares strictly increasing,
 * each compared one in (0, 50] with at most two decimals, the last exactly 100 (the release), hold
 * times and minimum exposures non-negative integers.
 */
export function rampProblem(steps: readonly RolloutStep[]): { index: number; field: keyof RolloutStep; message: string } | null {
  if (steps.length < 2) return { index: 0, field: 'percentage', message: 'a ramp needs at least one compared step and the final 100 %' };
  for (let index = 0; index < steps.length; index++) {
    const { percentage, holdSeconds, minimumExposures } = steps[index]!;
    const last = index === steps.length - 1;
    if (last && percentage !== 100) return { index, field: 'percentage', message: 'the last step must be 100 (the release)' };
    if (!last && !(percentage > 0 && percentage <= LARGEST_COMPARED_SHARE)) return { index, field: 'percentage', message: `a compared step must be above 0 and at most ${LARGEST_COMPARED_SHARE}` };
    if (Math.round(percentage * 100) !== percentage * 100) return { index, field: 'percentage', message: 'a step has at most two decimals' };
    if (index > 0 && percentage <= steps[index - 1]!.percentage) return { index, field: 'percentage', message: 'steps must increase' };
    if (!Number.isInteger(holdSeconds) || holdSeconds < 0) return { index, field: 'holdSeconds', message: 'a hold time is a non-negative integer of seconds' };
    if (!Number.isInteger(minimumExposures) || minimumExposures < 0) return { index, field: 'minimumExposures', message: 'minimum exposures are a non-negative integer' };
  }
  return null;
}
