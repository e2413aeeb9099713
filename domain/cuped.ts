/**
 * Regression adjustment on a pre-exposure covariate (CUPED: Deng, Xu, Kohavi & Walker, "Improving
 * the sensitivity of online controlled experiments by utilizing pre-experiment data", WSDM 2013)
 * — pure functions of each arm's sums, as GrowthBook gbstats' `RegressionAdjustedStatistic`,
 * `compute_theta` and `TwoSidedTTest` define the estimate.
 *
 * Each participant has x, the metric over a window before it was enrolled, and y, the metric
 * since. With θ = cov(x, y) / var(x) pooled over the two arms compared, an arm's adjusted mean is
 * ȳ − θx̄ and its variance var(y) + θ²var(x) − 2θ·cov(x, y); the difference, its Welch test and
 * interval follow as for unadjusted means (means.ts). x is the same in expectation in every arm
 * (it was measured before assignment), so the adjusted difference estimates the same effect with
 * a variance smaller by about ρ², ρ the correlation of x and y.
 *
 * Every figure is computed from the exact sums (micro-units, BigInt): the centred sums
 * S_ab = nΣab − ΣaΣb, θ = P/Q as a fraction of two of them and each adjusted variance as one
 * exact fraction, rounded once — ρ near 1 or values near 10⁹ leave nothing of a variance that
 * doubles subtract.
 */
import { relativeFigures, welchTest, type MeanComparison } from './means';
import { MIXING_EFFECT_SIZE, type Mixture } from './sequential';

/**
 * One arm's sums over its participants, exactly: y after exposure and x before it in micro-units,
 * their squares and products in micro-units squared.
 */
export interface AdjustedArm {
  participants: number;
  sumY: bigint;
  sumY2: bigint;
  sumX: bigint;
  sumX2: bigint;
  sumXY: bigint;
}

/**
 * How an arm's variance is estimated, as gbstats does: `mean` (count and value events) the sample
 * variance S/(n(n − 1)); `proportion` (yes/no events, y and x each 0 or 1) p(1 − p) = S/n², and
 * the covariance Σxy/n − x̄ȳ = S_xy/n².
 */
export type Scale = 'mean' | 'proportion';

/** The figures of means.ts's MeanComparison on the adjusted difference, and what the adjustment did. */
export interface AdjustedComparison extends MeanComparison {
  /** cov(x, y) / var(x) on both arms' sums together. */
  theta: number;
  /** The unadjusted difference's variance, s_V²/n_V + s_C²/n_C. */
  unadjustedVariance: number;
  /** The adjusted difference's variance (standardError²). */
  variance: number;
  /** 1 − variance ÷ unadjustedVariance: the share of the variance the covariate explained. */
  varianceReduction: number;
}

const MICROS = 1e6;

/** a / b for BigInts of any size, rounded once to the nearest double (b ≠ 0). */
export function ratio(a: bigint, b: bigint): number {
  if (a === 0n) return 0;
  const negative = a < 0n !== b < 0n;
  const num = a < 0n ? -a : a;
  const den = b < 0n ? -b : b;
  // Scale the quotient to ~70 significant bits, divide exactly, and undo the scale in the exponent.
  const shift = den.toString(2).length - num.toString(2).length + 70;
  const quotient = shift >= 0 ? (num << BigInt(shift)) / den : num / (den << BigInt(-shift));
  const value = Number(quotient) * 2 ** -shift;
  return negative ? -value : value;
}

/** nΣab − ΣaΣb: n(n − 1) times the sample covariance of a and b. */
const centred = (n: bigint, sumAB: bigint, sumA: bigint, sumB: bigint): bigint => n * sumAB - sumA * sumB;

interface Centred {
  n: bigint;
  yy: bigint;
  xx: bigint;
  xy: bigint;
}

function centredSums(arm: AdjustedArm): Centred {
  const n = BigInt(arm.participants);
  return { n, yy: centred(n, arm.sumY2, arm.sumY, arm.sumY), xx: centred(n, arm.sumX2, arm.sumX, arm.sumX), xy: centred(n, arm.sumXY, arm.sumX, arm.sumY) };
}

/** The two arms' sums as one. */
function pooled(a: AdjustedArm, b: AdjustedArm): AdjustedArm {
  return { participants: a.participants + b.participants, sumY: a.sumY + b.sumY, sumY2: a.sumY2 + b.sumY2, sumX: a.sumX + b.sumX, sumX2: a.sumX2 + b.sumX2, sumXY: a.sumXY + b.sumXY };
}

/** What the scale divides a centred sum by to give a variance (in micro-units squared). */
const divisor = (n: bigint, scale: Scale): bigint => (scale === 'mean' ? n * (n - 1n) : n * n);

/**
 * θ as the fraction P/Q of the pooled centred sums S_xy and S_xx; null when x or y has no variance
 * over both arms (gbstats' θ = 0: then there is nothing to adjust with, and the unadjusted figures stand).
 */
export function thetaOf(arm: AdjustedArm, control: AdjustedArm): { p: bigint; q: bigint } | null {
  const joint = centredSums(pooled(arm, control));
  if (joint.xx <= 0n || joint.yy <= 0n) return null;
  return { p: joint.xy, q: joint.xx };
}

/** An arm's variances in units²: of y, and of y − θx (S_yy + θ²S_xx − 2θS_xy over the divisor, as one fraction). */
function armVariances(c: Centred, theta: { p: bigint; q: bigint }, scale: Scale): { y: number; adjusted: number } {
  const d = divisor(c.n, scale) * BigInt(MICROS * MICROS);
  const { p, q } = theta;
  const adjusted = c.yy * q * q - 2n * p * q * c.xy + p * p * c.xx;
  return { y: ratio(c.yy, d), adjusted: ratio(adjusted, d * q * q) };
}

/** The adjusted difference with each arm's variances (units²), before any test. */
interface Moments {
  theta: { p: bigint; q: bigint };
  difference: number;
  variant: { y: number; adjusted: number };
  control: { y: number; adjusted: number };
  /** The adjusted difference's variance var_adj,V/n_V + var_adj,C/n_C. */
  variance: number;
}

/** Null when an arm has fewer than 2 participants, x or y has no variance over both arms, or the adjusted variance is 0. */
function momentsOf(arm: AdjustedArm, control: AdjustedArm, scale: Scale): Moments | null {
  if (arm.participants < 2 || control.participants < 2) return null;
  const theta = thetaOf(arm, control);
  if (!theta) return null;
  const variant = armVariances(centredSums(arm), theta, scale);
  const controlVariances = armVariances(centredSums(control), theta, scale);
  const variance = variant.adjusted / arm.participants + controlVariances.adjusted / control.participants;
  if (!(variance > 0)) return null;
  return { theta, difference: adjustedDifference(arm, control, theta), variant, control: controlVariances, variance };
}

/**
 * The regression-adjusted comparison of the variant with the control (see the module's comment):
 * Welch's t on the adjusted difference with the degrees of freedom of the adjusted variances, the
 * two-sided p and the interval at `confidence`; the relative uplift (adjusted difference ÷ the
 * control's unadjusted mean, only when that mean is positive) with gbstats' delta-method variance
 *
 *   var_adj,V / (n_V ȳ_C²) + (g² var(y_C) − 2gθ·cov_C + θ² var(x_C)) / (n_C ȳ_C²),  g = ȳ_V / ȳ_C,
 *
 * the gradient of the ratio taken where x̄_V = x̄_C, as randomisation makes them in expectation;
 * and the chances to beat the control under a flat prior, Φ(estimate / SE). Null — serve the
 * unadjusted figures — when an arm has fewer than 2 participants, when x or y has no variance
 * over both arms, or when the adjusted variance is 0.
 */
export function compareAdjusted(arm: AdjustedArm, control: AdjustedArm, scale: Scale, confidence = 0.95): AdjustedComparison | null {
  const moments = momentsOf(arm, control, scale);
  if (!moments) return null;
  const { theta, difference, variance } = moments;
  const { result: welch, quantile } = welchTest(difference, moments.variant.adjusted / arm.participants, arm.participants, moments.control.adjusted / control.participants, control.participants, confidence);
  const unadjustedVariance = moments.variant.y / arm.participants + moments.control.y / control.participants;
  const result: AdjustedComparison = { ...welch, theta: ratio(theta.p, theta.q), unadjustedVariance, variance, varianceReduction: 1 - variance / unadjustedVariance };
  if (control.sumY > 0n) {
    const relativeSe = Math.sqrt(relativeVariance(arm, control, theta, scale, moments.variant.adjusted));
    const uplift = difference / ratio(control.sumY, BigInt(control.participants) * BigInt(MICROS));
    Object.assign(result, relativeFigures(uplift, relativeSe, result.degreesOfFreedom, quantile));
  }
  return result;
}

/**
 * The adjusted difference, its variance V and the mixing SD τ of its always-valid inference
 * (sequential.ts): τ = effectSize · √((s_V² + s_C²)/2) on the unadjusted variances of y, the same
 * prior on the effect as without adjustment — the adjustment changes the estimator, not the effect
 * it estimates. Null where compareAdjusted is: the unadjusted mixture stands.
 */
export function adjustedMixture(arm: AdjustedArm, control: AdjustedArm, scale: Scale, effectSize = MIXING_EFFECT_SIZE): Mixture | null {
  const moments = momentsOf(arm, control, scale);
  if (!moments) return null;
  const sd = Math.sqrt((moments.variant.y + moments.control.y) / 2);
  return { difference: moments.difference, variance: moments.variance, mixingSd: effectSize * sd };
}

/** [(Σy_V n_C − Σy_C n_V)·Q − P·(Σx_V n_C − Σx_C n_V)] / (Q n_V n_C), in units. */
function adjustedDifference(arm: AdjustedArm, control: AdjustedArm, theta: { p: bigint; q: bigint }): number {
  const nV = BigInt(arm.participants);
  const nC = BigInt(control.participants);
  const dy = arm.sumY * nC - control.sumY * nV;
  const dx = arm.sumX * nC - control.sumX * nV;
  return ratio(dy * theta.q - theta.p * dx, theta.q * nV * nC * BigInt(MICROS));
}

/**
 * The delta-method variance of the relative uplift (see compareAdjusted), the control's term as
 * one exact fraction: with g = G₁/G₂ = (Σy_V n_C)/(Σy_C n_V) and θ = P/Q, its numerator is
 * (G₁²Q²S_yy − 2G₁G₂PQ·S_xy + G₂²P²S_xx) / (G₂²Q²) over the scale's divisor.
 */
function relativeVariance(arm: AdjustedArm, control: AdjustedArm, theta: { p: bigint; q: bigint }, scale: Scale, adjustedVarianceV: number): number {
  const c = centredSums(control);
  const meanC = ratio(control.sumY, BigInt(control.participants) * BigInt(MICROS));
  const g1 = arm.sumY * BigInt(control.participants);
  const g2 = control.sumY * BigInt(arm.participants);
  const { p, q } = theta;
  const numerator = g1 * g1 * q * q * c.yy - 2n * g1 * g2 * p * q * c.xy + g2 * g2 * p * p * c.xx;
  const controlVariance = ratio(numerator, g2 * g2 * q * q * divisor(c.n, scale) * BigInt(MICROS * MICROS));
  return adjustedVarianceV / (arm.participants * meanC ** 2) + controlVariance / (control.participants * meanC ** 2);
}
