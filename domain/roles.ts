/**
 * Verdicts by the role an event plays in an experiment, corrected for looking at many
 * comparisons at once — pure functions.
 *
 * Every comparison is a variant against the control on the event's metric — the unique
 * conversion rate of a unique event, the mean per participant of a count or value event — with
 * the always-valid p-value of sequential.ts (valid at any stopping time), on the
 * regression-adjusted difference when the arms carry their pre-exposure sums (estimate.ts). Then:
 *
 * - goal: Holm over the variants' always-valid p-values keeps the family-wise error — any false
 *   "better" or "worse" among the variants, at any look — at α: a false rejection needs the
 *   smallest true-null p below α / m₀ at some moment, which Ville's inequality and the union
 *   bound cap at α whatever the dependence between the variants.
 * - secondary: Benjamini–Hochberg over variants × secondary events keeps the false discovery
 *   rate at α under independence or positive dependence (variants sharing a control correlate
 *   positively); test/domain/roles.test.ts checks it by simulation.
 * - guardrail: one-sided at its own α, not corrected — a false alarm costs a look, a missed
 *   harm ships it: `guardrail_violated` when the one-sided always-valid p toward harm (below 0
 *   for an `increase` event, above 0 for a `decrease` one; sequential.ts harmPValue) is at most
 *   α. Its error under no harm is at most α, at any look.
 *
 * "Better" and "worse" follow the event's direction. Below MINIMUM_PARTICIPANTS in the variant
 * or the control the verdict is `collecting` and the comparison still counts in its family
 * (the family's size does not depend on the data).
 */

import { benjaminiHochberg, holm } from './multiplicity';
import { MINIMUM_PARTICIPANTS } from './results';
import { judgedMixture, type ComparedArm, type Metric } from './estimate';
import { alwaysValid, harmPValue, type Harm, type Mixture } from './sequential';

export type Role = 'goal' | 'guardrail' | 'secondary';
export type Direction = 'increase' | 'decrease';
export type CorrectedVerdict = 'collecting' | 'no_difference' | 'variant_better' | 'variant_worse' | 'guardrail_violated';
/** An arm as a comparison reads it: its rate's counts, for a mean its sums, and with CUPED on its covariate (then the adjusted difference is judged). */
export type RoleArm = ComparedArm;

/** The α every family is kept at and every guardrail is tested at. */
export const ROLE_ALPHA = 0.05;

export interface RoleEvent {
  role: Role;
  direction: Direction;
  /** What is compared: the unique rate (the default) or the mean per participant (count and value events). */
  metric?: Metric;
  control: RoleArm;
  /** The variants other than the control, in a fixed order. */
  variants: RoleArm[];
}

export interface Judgement {
  /** The always-valid p-value against the control; null when not computable. */
  pValue: number | null;
  /** Holm (goal), Benjamini–Hochberg (secondary) or the p-value itself (guardrail). */
  adjustedPValue: number | null;
  verdict: CorrectedVerdict;
}

interface Comparison {
  difference: number | null;
  pValue: number | null;
  enough: boolean;
}

/**
 * The difference of the metric between the arms with its variance and mixing SD (sequential.ts):
 * regression-adjusted when both arms carry a covariate (estimate.ts); null where that is.
 */
export function metricMixture(arm: RoleArm, control: RoleArm, metric: RoleEvent['metric']): Mixture | null {
  return judgedMixture(arm, control, metric ?? 'rate');
}

/** Which side of 0 harms an event of this direction: below for an `increase` event, above for a `decrease` one. */
export const harmOf = (direction: Direction): Harm => (direction === 'increase' ? 'below' : 'above');

/** The variant against the control: two-sided, or for a guardrail one-sided toward harm. */
function compare(arm: RoleArm, control: RoleArm, event: RoleEvent): Comparison {
  const enough = arm.participants >= MINIMUM_PARTICIPANTS && control.participants >= MINIMUM_PARTICIPANTS;
  const mixture = metricMixture(arm, control, event.metric);
  if (!mixture) return { difference: null, pValue: null, enough };
  const pValue = event.role === 'guardrail' ? harmPValue(mixture, harmOf(event.direction)) : alwaysValid(mixture.difference, mixture.variance, ROLE_ALPHA, mixture.mixingSd)!.pValue;
  return { difference: mixture.difference, pValue, enough };
}

/** The judgement of every variant of every event, in the input's order. */
export function judgeByRole(events: RoleEvent[], alpha = ROLE_ALPHA): Judgement[][] {
  const comparisons = events.map((event) => event.variants.map((arm) => compare(arm, event.control, event)));
  const adjusted = comparisons.map((row) => row.map((c) => c.pValue));
  const goals = events.flatMap((event, i) => (event.role === 'goal' ? [i] : []));
  for (const i of goals) adjusted[i] = holm(comparisons[i]!.map((c) => c.pValue));
  const secondary = events.flatMap((event, i) => (event.role === 'secondary' ? comparisons[i]!.map((_, j) => [i, j] as const) : []));
  const q = benjaminiHochberg(secondary.map(([i, j]) => comparisons[i]![j]!.pValue));
  secondary.forEach(([i, j], k) => (adjusted[i]![j] = q[k]!));
  return events.map((event, i) =>
    comparisons[i]!.map((c, j) => ({ pValue: c.pValue, adjustedPValue: adjusted[i]![j]!, verdict: verdictOf(event, c, adjusted[i]![j]!, alpha) })),
  );
}

function verdictOf(event: RoleEvent, c: Comparison, adjusted: number | null, alpha: number): CorrectedVerdict {
  if (!c.enough || adjusted === null || c.difference === null) return 'collecting';
  if (adjusted > alpha) return 'no_difference';
  const better = (c.difference > 0) === (event.direction === 'increase');
  if (event.role === 'guardrail') return better ? 'no_difference' : 'guardrail_violated';
  return better ? 'variant_better' : 'variant_worse';
}
