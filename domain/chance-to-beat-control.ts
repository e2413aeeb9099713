/**
 * Chance to beat control — pure functions: P(θ_V > θ_C) with Beta(1 + x, 1 + n − x) posteriors
 * on the unique conversion rate. Evan Miller's exact sum while it has at most EXACT_MAX_TERMS
 * terms, numerical integration on fixed grids above that (a cost independent of the counts).
 */
import betaln from '@stdlib/math-base-special-betaln';

export interface PosteriorCounts {
  participants: number;
  uniqueConversions: number;
}

/** Longest exact sum (terms) before chance to beat control switches to numerical integration. */
export const EXACT_MAX_TERMS = 1_000;

/** Intervals of the numerical integration grids (fixed cost, independent of the counts). */
const GRID_INTERVALS = 250;
/** Each grid spans the posterior mean ± this many standard deviations, clipped to [0, 1]. */
const GRID_HALF_WIDTH_SDS = 12;

export function isCount(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

export function assertPosteriorCounts(arm: PosteriorCounts): void {
  if (!isCount(arm.participants) || !isCount(arm.uniqueConversions)) {
    throw new RangeError('participants and unique conversions must be non-negative integers');
  }
  if (arm.uniqueConversions > arm.participants) {
    throw new RangeError('unique conversions cannot exceed participants');
  }
}

interface BetaParameters {
  alpha: number;
  beta: number;
}

function posterior(arm: PosteriorCounts): BetaParameters {
  return { alpha: 1 + arm.uniqueConversions, beta: 1 + arm.participants - arm.uniqueConversions };
}

/**
 * Evan Miller's sum: P(X > Y) for X ~ Beta(x.alpha, x.beta), Y ~ Beta(y), x.alpha an integer:
 * Σᵢ B(y.α + i, y.β + x.β) / ((x.β + i) · B(1 + i, x.β) · B(y.α, y.β)). Each term is the previous
 * one times (y.α + i)(x.β + i) / ((y.α + y.β + x.β + i)(1 + i)), kept in log space so that no
 * term underflows: one logarithm per term instead of three log-beta functions.
 */
function millerSum(x: BetaParameters, y: BetaParameters): number {
  const pooled = y.alpha + y.beta + x.beta;
  let logTerm = betaln(y.alpha, y.beta + x.beta) - Math.log(x.beta) - betaln(1, x.beta) - betaln(y.alpha, y.beta);
  let total = 0;
  for (let i = 0; i < x.alpha; i++) {
    total += Math.exp(logTerm);
    logTerm += Math.log(((y.alpha + i) * (x.beta + i)) / ((pooled + i) * (1 + i)));
  }
  return total;
}

const flip = (b: BetaParameters): BetaParameters => ({ alpha: b.beta, beta: b.alpha });

/**
 * The sum runs over the first argument's alpha, so pick the shortest of four equivalent forms:
 * P(V > C) = 1 − P(C > V), and with 1 − θ ~ Beta(β, α), P(V > C) = P(1 − θ_C > 1 − θ_V).
 */
function shortestExactForm(
  v: BetaParameters,
  c: BetaParameters,
): { terms: number; value: () => number } {
  const forms = [
    { terms: v.alpha, value: () => millerSum(v, c) },
    { terms: c.alpha, value: () => 1 - millerSum(c, v) },
    { terms: c.beta, value: () => millerSum(flip(c), flip(v)) },
    { terms: v.beta, value: () => 1 - millerSum(flip(v), flip(c)) },
  ];
  return forms.reduce((best, form) => (form.terms < best.terms ? form : best));
}

/** Exact P(θ_V > θ_C); cost grows with the smallest posterior parameter. */
export function chanceToBeatControlExact(arm: PosteriorCounts, control: PosteriorCounts): number {
  assertPosteriorCounts(arm);
  assertPosteriorCounts(control);
  return clamp01(shortestExactForm(posterior(arm), posterior(control)).value());
}

interface Grid {
  start: number;
  step: number;
  density: Float64Array;
  slope: Float64Array;
}

/** Beta density and its derivative on a uniform grid over mean ± GRID_HALF_WIDTH_SDS sd, within [0, 1]. */
function betaGrid({ alpha, beta }: BetaParameters): Grid {
  const sum = alpha + beta;
  const mean = alpha / sum;
  const sd = Math.sqrt((alpha * beta) / (sum * sum * (sum + 1)));
  const start = Math.max(0, mean - GRID_HALF_WIDTH_SDS * sd);
  const end = Math.min(1, mean + GRID_HALF_WIDTH_SDS * sd);
  const step = (end - start) / GRID_INTERVALS;
  const lnBeta = betaln(alpha, beta);
  const density = new Float64Array(GRID_INTERVALS + 1);
  const slope = new Float64Array(GRID_INTERVALS + 1);
  for (let i = 0; i <= GRID_INTERVALS; i++) {
    const t = start + i * step;
    // Guard 0 · log(0) at the edges when a parameter is 1.
    const logDensity =
      (alpha === 1 ? 0 : (alpha - 1) * Math.log(t)) +
      (beta === 1 ? 0 : (beta - 1) * Math.log1p(-t)) -
      lnBeta;
    density[i] = Math.exp(logDensity);
    // f′(t) = f(t) · ((α − 1)/t − (β − 1)/(1 − t)), guarded like the density at the edges.
    if (density[i]! > 0) {
      slope[i] = density[i]! * ((alpha === 1 ? 0 : (alpha - 1) / t) - (beta === 1 ? 0 : (beta - 1) / (1 - t)));
    }
  }
  return { start, step, density, slope };
}

/**
 * P(θ_V > θ_C) = ∫ f_V(t) F_C(t) dt by the trapezoidal rule on the variant's grid. F_C is built
 * on the control's grid from f_C and f_C′: each interval by the trapezoid with its end correction
 * h²/12 · (f′(a) − f′(b)), and between grid points by cubic Hermite interpolation — both accurate
 * to O(h⁴), so a coarse grid suffices. Each grid follows its own posterior, so a narrow posterior
 * is resolved next to a wide one.
 */
export function chanceToBeatControlIntegrated(
  arm: PosteriorCounts,
  control: PosteriorCounts,
): number {
  assertPosteriorCounts(arm);
  assertPosteriorCounts(control);
  const v = betaGrid(posterior(arm));
  const c = betaGrid(posterior(control));
  const h = c.step;

  const cdf = new Float64Array(GRID_INTERVALS + 1);
  for (let i = 1; i <= GRID_INTERVALS; i++) {
    cdf[i] = cdf[i - 1]! + (h / 2) * (c.density[i - 1]! + c.density[i]!) + ((h * h) / 12) * (c.slope[i - 1]! - c.slope[i]!);
  }
  // Normalising by the grid's own total cancels the truncated tails and quadrature bias.
  const cdfTotal = cdf[GRID_INTERVALS]!;
  const controlCdf = (t: number): number => {
    const position = (t - c.start) / h;
    if (position <= 0) return 0;
    if (position >= GRID_INTERVALS) return 1;
    const j = Math.floor(position);
    const s = position - j;
    const s2 = s * s;
    const s3 = s2 * s;
    const value =
      (2 * s3 - 3 * s2 + 1) * cdf[j]! +
      (s3 - 2 * s2 + s) * h * c.density[j]! +
      (3 * s2 - 2 * s3) * cdf[j + 1]! +
      (s3 - s2) * h * c.density[j + 1]!;
    return value / cdfTotal;
  };

  let mass = 0;
  let weighted = 0;
  for (let i = 0; i <= GRID_INTERVALS; i++) {
    const weight = i === 0 || i === GRID_INTERVALS ? 0.5 : 1;
    const f = weight * v.density[i]!;
    mass += f;
    weighted += f * controlCdf(v.start + i * v.step);
  }
  return clamp01(weighted / mass);
}

/** P(θ_V > θ_C) under Beta(1 + x, 1 + n − x) posteriors. */
export function chanceToBeatControl(arm: PosteriorCounts, control: PosteriorCounts): number {
  assertPosteriorCounts(arm);
  assertPosteriorCounts(control);
  const exact = shortestExactForm(posterior(arm), posterior(control));
  return exact.terms <= EXACT_MAX_TERMS
    ? clamp01(exact.value())
    : chanceToBeatControlIntegrated(arm, control);
}

function clamp01(value: number): number {
  return Math.min(1, Math.max(0, value));
}
