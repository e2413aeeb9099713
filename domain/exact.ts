/**
 * Fisher's exact test of two proportions — pure functions — for the samples where the normal
 * approximation does not hold (see `needsExactTest`).
 */
import betaln from '@stdlib/math-base-special-betaln';

/** An arm of a rate: its participants and those who converted. */
type ArmRate = { participants: number; uniqueConversions: number };

/** Fewer expected converters or non-converters than this in an arm (under the pooled rate): the exact test. */
export const MIN_EXPECTED = 5;

/**
 * The normal approximation of the difference holds when, under the pooled rate, each arm expects
 * at least MIN_EXPECTED converters and MIN_EXPECTED non-converters (the rule of thumb of
 * Pearson's χ² test).
 */
export function needsExactTest(arm: ArmRate, control: ArmRate): boolean {
  const total = arm.participants + control.participants;
  const converters = arm.uniqueConversions + control.uniqueConversions;
  return [arm.participants, control.participants].some((n) => {
    const expected = (n * converters) / total;
    return expected < MIN_EXPECTED || n - expected < MIN_EXPECTED;
  });
}

/** ln C(n, k) through the beta function: C(n, k) = 1 / ((n + 1) · B(n − k + 1, k + 1)). */
const logChoose = (n: number, k: number): number => -Math.log(n + 1) - betaln(n - k + 1, k + 1);

/** Relative tolerance of "as or less likely than the observed table" (R's fisher.test uses 1 + 1e-7). */
const TIES = 1 + 1e-7;

/**
 * Two-sided p-value of Fisher's exact test: the probability, with both margins fixed (the
 * hypergeometric distribution of the variant's converters), of every table no more likely than
 * the observed one. 1 when nobody or everybody converted.
 */
export function fisherExactPValue(arm: ArmRate, control: ArmRate): number {
  const n1 = arm.participants;
  const n2 = control.participants;
  const k = arm.uniqueConversions + control.uniqueConversions;
  const low = Math.max(0, k - n2);
  const high = Math.min(n1, k);
  // One table only (nobody or everybody converted): p is 1, which the sum leaves a rounding short.
  if (low === high) return 1;
  const logTotal = logChoose(n1 + n2, k);
  const probability = (x: number) => Math.exp(logChoose(n1, x) + logChoose(n2, k - x) - logTotal);
  const observed = probability(arm.uniqueConversions);
  let p = 0;
  for (let x = low; x <= high; x++) {
    const px = probability(x);
    if (px <= observed * TIES) p += px;
  }
  return Math.min(1, p);
}
