/**
 * Always-valid inference on the difference of two conversion rates — pure functions.
 *
 * The mixture sequential probability ratio test with a normal mixture (Johari, Pekelis & Walsh,
 * "Always Valid Inference: Continuous Monitoring of A/B Tests", Operations Research 70(3), 2022;
 * the confidence sequence is the one of Howard, Ramdas, McAuliffe & Sekhon, "Time-uniform,
 * nonparametric, nonasymptotic confidence sequences", Annals of Statistics 49(2), 2021, eq. (14),
 * with the normal approximation of the difference). With θ̂ = p̂_V − p̂_C, its variance
 * V = p̂_V(1 − p̂_V)/n_V + p̂_C(1 − p̂_C)/n_C and the mixing variance τ², the 1 − α sequence is
 *
 *   θ̂ ± √( V (V + τ²) / τ² · ( ln((V + τ²) / V) − 2 ln α ) )
 *
 * and it covers the true difference at every sample size at once with probability ≥ 1 − α, so
 * looking at it after every participant and stopping whenever it excludes 0 keeps the error
 * rate at α — which the fixed-horizon interval does not.
 */

import type { ArmCounts, Interval } from './statistics';

type ArmRate = Pick<ArmCounts, 'participants' | 'uniqueConversions'>;

/**
 * τ, the standard deviation of the normal mixture over the true difference (absolute, in
 * conversion rate): the size of effect the sequence is most efficient for. 0.02 — two percentage
 * points — is the scale of the effects the experiments of this service look for.
 */
export const MIXING_SD = 0.02;

/** The 1 − α always-valid interval on p_V − p_C, or null while either arm has no participants or V is 0. */
export function confidenceSequence(arm: ArmRate, control: ArmRate, alpha = 0.05, mixingSd = MIXING_SD): Interval | null {
  if (!(alpha > 0 && alpha < 1) || !(mixingSd > 0)) throw new RangeError('alpha must be in (0, 1) and the mixing SD positive');
  if (arm.participants === 0 || control.participants === 0) return null;
  const pV = arm.uniqueConversions / arm.participants;
  const pC = control.uniqueConversions / control.participants;
  const variance = (pV * (1 - pV)) / arm.participants + (pC * (1 - pC)) / control.participants;
  if (variance === 0) return null;
  const tau2 = mixingSd * mixingSd;
  const halfWidth = Math.sqrt(((variance * (variance + tau2)) / tau2) * (Math.log((variance + tau2) / variance) - 2 * Math.log(alpha)));
  const difference = pV - pC;
  return { lower: difference - halfWidth, upper: difference + halfWidth };
}
