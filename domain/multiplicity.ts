/**
 * Corrections for looking at many comparisons at once — pure functions on p-values.
 *
 * - Holm's step-down (Holm, "A simple sequentially rejective multiple test procedure",
 *   Scandinavian Journal of Statistics 6(2), 1979) keeps the family-wise error rate — the chance
 *   of any false positive — at α: used across the variants of an experiment on its goal and on
 *   each guardrail, where one false "better" ships a change.
 * - Benjamini–Hochberg (Benjamini & Hochberg, "Controlling the false discovery rate", JRSS B
 *   57(1), 1995) keeps the expected share of false positives among those declared at α: used
 *   across the secondary events × variants, which inform and do not decide.
 *
 * Both answer adjusted p-values (compare them with α as they are), in the input's order; a null
 * p-value (not computable) stays null and does not count as a test.
 */

function ranked(pValues: Array<number | null>): Array<{ index: number; p: number }> {
  return pValues.flatMap((p, index) => (p === null ? [] : [{ index, p }])).sort((a, b) => a.p - b.p || a.index - b.index);
}

/** Holm-adjusted p-values: p₍ᵢ₎ · (m − i + 1), made monotone non-decreasing, at most 1. */
export function holm(pValues: Array<number | null>): Array<number | null> {
  const order = ranked(pValues);
  const adjusted: Array<number | null> = pValues.map(() => null);
  let running = 0;
  order.forEach(({ index, p }, i) => {
    running = Math.max(running, Math.min(1, p * (order.length - i)));
    adjusted[index] = running;
  });
  return adjusted;
}

/** Benjamini–Hochberg-adjusted p-values (q-values): p₍ᵢ₎ · m / i, made monotone from the largest down, at most 1. */
export function benjaminiHochberg(pValues: Array<number | null>): Array<number | null> {
  const order = ranked(pValues);
  const adjusted: Array<number | null> = pValues.map(() => null);
  let running = 1;
  for (let i = order.length - 1; i >= 0; i--) {
    running = Math.min(running, (order[i]!.p * order.length) / (i + 1));
    adjusted[order[i]!.index] = running;
  }
  return adjusted;
}
