/**
 * Always-valid inference on a difference between two arms — pure functions.
 *
 * The mixture sequential probability ratio test with a normal mixture (Johari, Pekelis & Walsh,
 * "Always Valid Inference: Continuous Monitoring of A/B Tests", Operations Research 70(3), 2022;
 * the confidence sequence is the one of Howard, Ramdas, McAuliffe & Sekhon, "Time-uniform,
 * nonparametric, nonasymptotic confidence sequences", Annals of Statistics 49(2), 2021, eq. (14),
 * with the normal approximation of the difference). With θ̂ the estimated difference, V its
 * variance and τ² the mixing variance, the 1 − α sequence is
 *
 *   θ̂ ± √( V (V + τ²) / τ² · ( ln((V + τ²) / V) − 2 ln α ) )
 *
 * and it covers the true difference at every sample size at once with probability ≥ 1 − α, so
 * looking at it after every participant and stopping whenever it excludes 0 keeps the error
 * rate at α — which the fixed-horizon interval does not. The always-valid p-value is
 * min(1, 1/Λ(0)) with Λ(0) = √(V/(V + τ²)) · exp(τ² θ̂² / (2V(V + τ²))), the mixture likelihood
 * ratio at no difference: it is below α exactly when the sequence excludes 0.
 */

import type { MeanArm } from './means';
import normalCdf from '@stdlib/stats-base-dists-normal-cdf';
import { meanDifference, summarise } from './means';
import type { ArmCounts, Interval } from './statistics';

type ArmRate = Pick<ArmCounts, 'participants' | 'uniqueConversions'>;

/**
 * τ, the standard deviation of the normal mixture over the true difference, on a standardised
 * scale: τ = MIXING_EFFECT_SIZE · σ̂ with σ̂² = (s_V² + s_C²) / 2, the arms' average
 * per-participant variance — p(1 − p) for a conversion rate — so the rule holds whatever the
 * metric's unit (cents or euros) and whatever the base rate (1 % or 50 %): a fixed τ in rate
 * points would be a huge effect at 1 % and a tiny one at 50 %. 0.1 standard deviations is a
 * small effect (Cohen's d = 0.2 is "small").
 */
export const MIXING_EFFECT_SIZE = 0.1;

export interface AlwaysValid {
  difference: number;
  confidenceSequence: Interval;
  pValue: number;
}

function assertParameters(alpha: number, mixingSd: number): void {
  if (!(alpha > 0 && alpha < 1) || !(mixingSd > 0)) throw new RangeError('alpha must be in (0, 1) and the mixing SD positive');
}

/** The sequence and p of a difference θ̂ with variance V under mixing SD τ; null when V is 0. */
export function alwaysValid(difference: number, variance: number, alpha: number, mixingSd: number): AlwaysValid | null {
  assertParameters(alpha, mixingSd);
  if (!(variance > 0)) return null;
  const tau2 = mixingSd * mixingSd;
  const halfWidth = Math.sqrt(((variance * (variance + tau2)) / tau2) * (Math.log((variance + tau2) / variance) - 2 * Math.log(alpha)));
  const logRatio = 0.5 * Math.log(variance / (variance + tau2)) + (tau2 * difference * difference) / (2 * variance * (variance + tau2));
  return {
    difference,
    confidenceSequence: { lower: difference - halfWidth, upper: difference + halfWidth },
    pValue: Math.min(1, Math.exp(-logRatio)),
  };
}

/** A difference θ̂, its variance V and the mixing SD τ its always-valid inference is tuned with. */
export interface Mixture {
  difference: number;
  variance: number;
  mixingSd: number;
}

/** Which way of the difference is harm: `below` 0 (an `increase` event falling) or `above` (a `decrease` one rising). */
export type Harm = 'below' | 'above';

/**
 * The one-sided always-valid p-value against "no harm" (the difference is 0 or on the good side):
 * min(1, 1/Λ) with Λ the likelihood ratio mixed over a half-normal on the harmful side, density
 * 2φ(θ; 0, τ²) there, and 0 on the good side:
 *
 *   Λ = 2 √(V/(V + τ²)) · exp(x²/2) · Φ(±x),  x = θ̂ τ / √(V (V + τ²)),
 *
 * with −x for harm below 0 and +x for harm above (the full mixture's Λ times twice the mixing
 * posterior's mass on the harmful side). Each likelihood ratio exp(θS − θ²t/2) with θ harmful is a
 * nonnegative supermartingale under any true difference on the good side, so their mixture is
 * too, and Ville's inequality keeps P(ever Λ ≥ 1/α) ≤ α at any stopping time. Evidence on the
 * good side never rejects: Λ falls as θ̂ moves that way.
 */
export function harmPValue({ difference, variance, mixingSd }: Mixture, harm: Harm): number {
  const tau2 = mixingSd * mixingSd;
  const x = (difference * mixingSd) / Math.sqrt(variance * (variance + tau2));
  const towardHarm = harm === 'below' ? -x : x;
  const logRatio = Math.LN2 + 0.5 * Math.log(variance / (variance + tau2)) + (x * x) / 2 + Math.log(normalCdf(towardHarm, 0, 1));
  return Math.min(1, Math.exp(-logRatio));
}

/** The 1 − α always-valid interval on p_V − p_C, or null while either arm has no participants or V is 0. */
export function confidenceSequence(arm: ArmRate, control: ArmRate, alpha = 0.05, effectSize = MIXING_EFFECT_SIZE): Interval | null {
  return rateAlwaysValid(arm, control, alpha, effectSize)?.confidenceSequence ?? null;
}

/**
 * Always-valid inference on p_V − p_C: V = p_V(1 − p_V)/n_V + p_C(1 − p_C)/n_C and τ = effectSize ·
 * √((p_V(1 − p_V) + p_C(1 − p_C))/2). Null while either arm has no participants, and when both
 * rates are 0 or 1 — then V and τ are 0 together and the data say nothing yet.
 */
export function rateAlwaysValid(arm: ArmRate, control: ArmRate, alpha = 0.05, effectSize = MIXING_EFFECT_SIZE): AlwaysValid | null {
  assertParameters(alpha, effectSize);
  const mixture = rateMixture(arm, control, effectSize);
  return mixture && alwaysValid(mixture.difference, mixture.variance, alpha, mixture.mixingSd);
}

/** p_V − p_C with its V and τ (see rateAlwaysValid); null where that is. */
export function rateMixture(arm: ArmRate, control: ArmRate, effectSize = MIXING_EFFECT_SIZE): Mixture | null {
  if (arm.participants === 0 || control.participants === 0) return null;
  const pV = arm.uniqueConversions / arm.participants;
  const pC = control.uniqueConversions / control.participants;
  const varianceV = pV * (1 - pV);
  const varianceC = pC * (1 - pC);
  const sd = Math.sqrt((varianceV + varianceC) / 2);
  const variance = varianceV / arm.participants + varianceC / control.participants;
  if (!(sd > 0) || !(variance > 0)) return null;
  return { difference: pV - pC, variance, mixingSd: effectSize * sd };
}

/**
 * Always-valid inference on m_V − m_C: V = s_V²/n_V + s_C²/n_C and τ = effectSize · σ̂ (see
 * MIXING_EFFECT_SIZE); null below 2 participants in an arm or when both variances are 0.
 */
export function meansAlwaysValid(arm: MeanArm, control: MeanArm, alpha = 0.05, effectSize = MIXING_EFFECT_SIZE): AlwaysValid | null {
  assertParameters(alpha, effectSize);
  const mixture = meansMixture(arm, control, effectSize);
  return mixture && alwaysValid(mixture.difference, mixture.variance, alpha, mixture.mixingSd);
}

/** m_V − m_C with its V and τ (see meansAlwaysValid); null where that is. */
export function meansMixture(arm: MeanArm, control: MeanArm, effectSize = MIXING_EFFECT_SIZE): Mixture | null {
  const v = summarise(arm);
  const c = summarise(control);
  if (!v || !c || v.variance === null || c.variance === null) return null;
  const variance = v.variance / arm.participants + c.variance / control.participants;
  const sd = Math.sqrt((v.variance + c.variance) / 2);
  if (!(sd > 0) || !(variance > 0)) return null;
  return { difference: meanDifference(arm, control), variance, mixingSd: effectSize * sd };
}
