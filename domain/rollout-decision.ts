/**
 * What a safe rollout does next — a pure function of its ramp, where it stands and its arms'
 * live counters (O(guardrails), whatever the exposures).
 *
 * The counters are cumulative since the rollout started: both arms grow by equal shares of the
 * same population at the same times (rollout-arms.ts), so under no harm their difference stays
 * centred on 0 across steps, and one always-valid test covers the whole ramp. A check:
 *
 * 1. Sample ratio: Pearson χ² of the arms' exposures against 1 : 1 (statistics.ts). Below
 *    p = 0.001 the split or the exposure recording is broken and the comparison cannot be
 *    trusted: **hold** — neither roll back nor advance.
 * 2. Guardrails: for each, the one-sided always-valid p-value toward harm (sequential.ts
 *    harmPValue: below 0 for an `increase` event, above 0 for a `decrease` one) of the `new` arm
 *    against the `current` arm on the event's metric; 1 while either arm has fewer than
 *    MINIMUM_PARTICIPANTS or the difference has no variance. Holm over the rollout's guardrails;
 *    an adjusted p ≤ α **rolls back**, naming the guardrail with the smallest. Ville's inequality
 *    and Holm keep the chance of any false rollback at α, however many checks are made and
 *    however long the ramp runs.
 * 3. A paused rollout stops there: it keeps its share and is still rolled back on harm.
 * 4. The step's hold time and, in each arm, its minimum exposures since the step began must be
 *    met; then the rollout **advances** to the next step, or **releases** when that step is
 *    the last (100 %).
 */
import { holm } from './multiplicity';
import { MINIMUM_PARTICIPANTS, SRM_WARNING_BELOW } from './results';
import { harmOf, metricMixture, type Direction, type RoleArm } from './roles';
import type { RolloutArm, RolloutStep } from './rollout-arms';
import { alwaysValid, harmPValue } from './sequential';
import { sampleRatioMismatch, type Interval } from './statistics';

/** The level every rollout's guardrails are tested at, unless it states its own. */
export const ROLLOUT_ALPHA = 0.05;

export interface RolloutGuardrail {
  direction: Direction;
  /** The unique rate (default) or the mean per participant (count and value events). */
  metric?: 'rate' | 'mean';
}

export type ArmCounts = Record<RolloutArm, number>;

export interface RolloutCheck {
  steps: readonly RolloutStep[];
  guardrails: readonly RolloutGuardrail[];
  alpha?: number;
  /** Index of the current step in `steps`. */
  step: number;
  /** Milliseconds since the epoch. */
  stepStartedAt: number;
  now: number;
  paused: boolean;
  /** Exposed participants per arm, now and when the step began. */
  exposures: ArmCounts;
  exposuresAtStepStart: ArmCounts;
  /** Per guardrail, in the same order, the arms as the metric reads them (participants = exposures). */
  arms: ReadonlyArray<Record<RolloutArm, RoleArm>>;
}

export interface GuardrailReading {
  /** new − current on the metric; null while not computable. */
  difference: number | null;
  /** The always-valid two-sided 1 − α interval of the difference. */
  interval: Interval | null;
  /** One-sided always-valid p toward harm, and Holm-adjusted across the guardrails. */
  pValue: number | null;
  adjustedPValue: number;
  harmed: boolean;
}

export type RolloutAction =
  | { action: 'roll_back'; guardrail: number }
  | { action: 'hold'; sampleRatioPValue: number }
  | { action: 'advance'; step: number }
  | { action: 'release' }
  | { action: 'wait'; until: 'resumed' | 'hold_time' | 'exposures' };

export type RolloutDecision = RolloutAction & { guardrails: GuardrailReading[] };

export function decideRollout(check: RolloutCheck): RolloutDecision {
  const alpha = check.alpha ?? ROLLOUT_ALPHA;
  const guardrails = readGuardrails(check, alpha);
  const decide = (action: RolloutAction): RolloutDecision => ({ ...action, guardrails });
  const ratio = sampleRatioMismatch([check.exposures.new, check.exposures.current], [1, 1]);
  if (ratio && ratio.pValue < SRM_WARNING_BELOW) return decide({ action: 'hold', sampleRatioPValue: ratio.pValue });
  const harmed = guardrails.reduce<number | null>((worst, g, i) => (g.harmed && (worst === null || g.adjustedPValue < guardrails[worst]!.adjustedPValue) ? i : worst), null);
  if (harmed !== null) return decide({ action: 'roll_back', guardrail: harmed });
  if (check.paused) return decide({ action: 'wait', until: 'resumed' });
  const step = check.steps[check.step]!;
  if (check.now - check.stepStartedAt < step.holdSeconds * 1000) return decide({ action: 'wait', until: 'hold_time' });
  const fewest = Math.min(check.exposures.new - check.exposuresAtStepStart.new, check.exposures.current - check.exposuresAtStepStart.current);
  if (fewest < step.minimumExposures) return decide({ action: 'wait', until: 'exposures' });
  const next = check.step + 1;
  return decide(next === check.steps.length - 1 ? { action: 'release' } : { action: 'advance', step: next });
}

function readGuardrails(check: RolloutCheck, alpha: number): GuardrailReading[] {
  const readings = check.guardrails.map((guardrail, i) => {
    const { new: treated, current } = check.arms[i]!;
    const mixture = metricMixture(treated, current, guardrail.metric);
    if (!mixture) return { difference: null, interval: null, pValue: null, judged: 1 };
    const enough = treated.participants >= MINIMUM_PARTICIPANTS && current.participants >= MINIMUM_PARTICIPANTS;
    const pValue = harmPValue(mixture, harmOf(guardrail.direction));
    const interval = alwaysValid(mixture.difference, mixture.variance, alpha, mixture.mixingSd)!.confidenceSequence;
    return { difference: mixture.difference, interval, pValue, judged: enough ? pValue : 1 };
  });
  // Every guardrail counts in the family, judged or not: its size does not depend on the data.
  const adjusted = holm(readings.map((r) => r.judged));
  return readings.map(({ judged: _, ...reading }, i) => ({ ...reading, adjustedPValue: adjusted[i]!, harmed: adjusted[i]! <= alpha }));
}
