import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { adjustedMixture, compareAdjusted, ratio, type AdjustedArm, type Scale } from '../../domain/cuped';
import { judgedMixture } from '../../domain/estimate';
import { compareMeansSequentially, compareSequentially } from '../../domain/results';
import { judgeByRole } from '../../domain/roles';
import { meansMixture, rateMixture } from '../../domain/sequential';
import type { Interval } from '../../domain/statistics';

/** An arm's sums as storage keeps them: micro-units (squares and products micro-units squared), as decimal text. */
type StoredArm = { participants: number; sumY: string; sumY2: string; sumX: string; sumX2: string; sumXY: string };
type Expected = Record<'theta' | 'difference' | 'standardError' | 'degreesOfFreedom' | 'pValue' | 'chanceToBeatControl' | 'varianceReduction', number> & {
  interval: Interval;
  relativeUplift: number | null;
  relativeStandardError: number | null;
  relativePValue: number | null;
  relativeInterval: Interval | null;
};
interface Vectors {
  cases: Array<{ name: string; scale: Scale; control: StoredArm; variant: StoredArm; expected: Expected | null }>;
  simulation: { rho: number; control: StoredArm; variant: StoredArm; expected: Expected };
}
// Computed by test/vectors/cuped.py, an independent pure-Python implementation on each participant's (x, y).
const vectors = JSON.parse(readFileSync(new URL('../vectors/cuped.json', import.meta.url), 'utf8')) as Vectors;

const stored = (arm: StoredArm): AdjustedArm => ({
  participants: arm.participants,
  sumY: BigInt(arm.sumY),
  sumY2: BigInt(arm.sumY2),
  sumX: BigInt(arm.sumX),
  sumX2: BigInt(arm.sumX2),
  sumXY: BigInt(arm.sumXY),
});

const M = 1_000_000n;
/** An arm from STATISTICS.md's sums in units. */
const fromUnits = (n: number, y: number, yy: number, x: number, xx: number, xy: number): AdjustedArm => ({
  participants: n,
  sumY: BigInt(y) * M,
  sumY2: BigInt(yy) * M * M,
  sumX: BigInt(x) * M,
  sumX2: BigInt(xx) * M * M,
  sumXY: BigInt(xy) * M * M,
});

/** |actual − expected| within `relative` of the expected size (or of 1 below it). */
function expectNear(actual: number | null | undefined, expected: number | null, relative = 1e-9): void {
  if (expected === null) return expect(actual).toBeNull();
  expect(Math.abs(actual! - expected)).toBeLessThanOrEqual(relative * Math.max(1, Math.abs(expected)));
}

describe('compareAdjusted — STATISTICS.md, "Regression adjustment" (gbstats RegressionAdjustedStatistic, TwoSidedTTest)', () => {
  it.each([
    ['1 000 / 2 000 against 1 000 / 2 150', fromUnits(1000, 2000, 6500, 1900, 6000, 5200), fromUnits(1000, 2150, 7100, 1920, 6100, 5600), [0.5982, 0.138, 0.0158, 0.026, 0.2501, 0.069, 0.0202, 0.0108, 0.1273]],
    ['500 / 900 against 520 / 1 010', fromUnits(500, 900, 2600, 850, 2400, 2000), fromUnits(520, 1010, 3000, 880, 2500, 2250), [0.514, 0.1463, 0.0546, -0.0029, 0.2954, 0.0813, 0.0651, -0.0051, 0.1676]],
  ] as const)('when %s, then θ, the difference, p, the interval and the relative figures equal the reference within 1e-4', (_, control, variant, reference) => {
    const result = compareAdjusted(variant, control, 'mean')!;
    const served = [result.theta, result.difference, result.pValue, result.interval.lower, result.interval.upper, result.relativeUplift!, result.relativePValue!, result.relativeInterval!.lower, result.relativeInterval!.upper];
    served.forEach((value, i) => expect(Math.abs(value - reference[i]!)).toBeLessThanOrEqual(1e-4 + 5e-5));
    // The table rounds to 4 decimals: to 1e-4 of the rounding, every figure.
    served.forEach((value, i) => expect(Number(value.toFixed(4))).toBeCloseTo(reference[i]!, 4));
  });
});

describe('compareAdjusted — test/vectors/cuped.json, seeded datasets', () => {
  it('when the Python reference runs, then it prints the vectors file unchanged', () => {
    const printed = execFileSync('python3', ['test/vectors/cuped.py'], { encoding: 'utf8' });
    expect(JSON.parse(printed)).toEqual(vectors);
  });

  it.each(vectors.cases.map((c) => [c.name, c] as const))('when %s, then every figure equals the per-participant reference', (_, c) => {
    const result = compareAdjusted(stored(c.variant), stored(c.control), c.scale);
    if (c.expected === null) return expect(result).toBeNull();
    const e = c.expected;
    expect(result).not.toBeNull();
    expectNear(result!.theta, e.theta);
    expectNear(result!.difference, e.difference);
    expectNear(result!.standardError, e.standardError);
    expectNear(result!.degreesOfFreedom, e.degreesOfFreedom, 1e-8);
    expectNear(result!.pValue, e.pValue, 1e-8);
    expectNear(result!.interval.lower, e.interval.lower, 1e-8);
    expectNear(result!.interval.upper, e.interval.upper, 1e-8);
    expectNear(result!.chanceToBeatControl, e.chanceToBeatControl);
    expectNear(result!.varianceReduction, e.varianceReduction);
    expectNear(result!.relativeUplift, e.relativeUplift);
    expectNear(result!.relativeStandardError, e.relativeStandardError);
    expectNear(result!.relativePValue, e.relativePValue, 1e-8);
    if (e.relativeInterval === null) expect(result!.relativeInterval).toBeNull();
    else {
      expectNear(result!.relativeInterval!.lower, e.relativeInterval.lower, 1e-8);
      expectNear(result!.relativeInterval!.upper, e.relativeInterval.upper, 1e-8);
    }
  });

  it('when values lie within cents of 10⁹, then the exact sums keep the adjusted variance that doubles lose', () => {
    const c = vectors.cases.find((candidate) => candidate.name.includes('10⁹'))!;
    const variant = stored(c.variant);
    const control = stored(c.control);
    expectNear(compareAdjusted(variant, control, 'mean')!.standardError, c.expected!.standardError, 1e-9);
    // The same formula in doubles: S_yy = nΣy² − (Σy)² on sums of 10²⁰ micro-units squared is rounding noise.
    const inDoubles = (arm: AdjustedArm) => arm.participants * Number(arm.sumY2) - Number(arm.sumY) ** 2;
    const exact = (arm: AdjustedArm) => Number(BigInt(arm.participants) * arm.sumY2 - arm.sumY * arm.sumY);
    expect(Math.abs(inDoubles(variant) - exact(variant)) / exact(variant)).toBeGreaterThan(0.01);
  });

  it('when x has no variance over both arms, then there is no adjusted comparison and the judged estimate is the unadjusted one', () => {
    const c = vectors.cases.find((candidate) => candidate.expected === null)!;
    const variant = stored(c.variant);
    const control = stored(c.control);
    expect(compareAdjusted(variant, control, 'mean')).toBeNull();
    expect(adjustedMixture(variant, control, 'mean')).toBeNull();
    const arm = (a: AdjustedArm) => ({ participants: a.participants, uniqueConversions: 0, sum: Number(a.sumY) / 1e6, sumOfSquares: Number(a.sumY2) / 1e12, micros: { sum: a.sumY, sumOfSquares: a.sumY2 }, covariate: { sumX: a.sumX, sumX2: a.sumX2, sumXY: a.sumXY } });
    expect(judgedMixture(arm(variant), arm(control), 'mean')).toEqual(meansMixture(arm(variant), arm(control)));
  });

  it('when an arm has fewer than 2 participants, then null', () => {
    const one = { participants: 1, sumY: M, sumY2: M * M, sumX: M, sumX2: M * M, sumXY: M * M };
    expect(compareAdjusted(one, fromUnits(100, 50, 80, 40, 60, 50), 'mean')).toBeNull();
  });

  it('ratio divides BigInts of any size with one rounding', () => {
    expect(ratio(1n, 3n)).toBe(1 / 3);
    expect(ratio(-(10n ** 400n), 3n * 10n ** 399n)).toBe(-10 / 3);
    expect(ratio(0n, 7n)).toBe(0);
    expect(ratio(2n ** 1100n + 1n, 2n ** 1100n)).toBe(1);
  });
});

describe('a seeded simulation with a pre/post correlation of 0.5 (test/vectors/cuped.py, 2 × 5 000 participants)', () => {
  it('when the adjustment is applied, then the variance falls by about ρ² = 0.25 and the interval narrows by about 1 − √(1 − ρ²) = 13.4 %', () => {
    const { rho, control, variant, expected } = vectors.simulation;
    const result = compareAdjusted(stored(variant), stored(control), 'mean')!;
    const narrower = 1 - Math.sqrt(1 - result.varianceReduction);
    console.info(
      `[CUPED, ρ ${rho}] variance reduction ${(100 * result.varianceReduction).toFixed(1)} % (theory ρ² ${(100 * rho ** 2).toFixed(1)} %), ` +
        `interval ${(100 * narrower).toFixed(1)} % narrower (theory ${(100 * (1 - Math.sqrt(1 - rho ** 2))).toFixed(1)} %), θ ${result.theta.toFixed(3)}`,
    );
    expectNear(result.varianceReduction, expected.varianceReduction);
    expect(result.varianceReduction).toBeGreaterThanOrEqual(0.2);
    expect(Math.abs(result.varianceReduction - rho ** 2)).toBeLessThan(0.03);
    expect(Math.abs(narrower - (1 - Math.sqrt(1 - rho ** 2)))).toBeLessThan(0.02);
  });
});

/** Seeded normal draws (Box–Muller on a linear congruential generator). */
function normals(seed: number): () => number {
  let state = seed >>> 0;
  const uniform = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) + 0.5) / 2 ** 32;
  return () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
}

describe('the always-valid sequence and the verdicts on the adjusted estimate', () => {
  const withCovariate = (a: AdjustedArm, uniqueConversions = 0) => ({
    participants: a.participants,
    uniqueConversions,
    sum: Number(a.sumY) / 1e6,
    sumOfSquares: Number(a.sumY2) / 1e12,
    micros: { sum: a.sumY, sumOfSquares: a.sumY2 },
    covariate: { sumX: a.sumX, sumX2: a.sumX2, sumXY: a.sumXY },
  });

  it('when both arms carry a covariate, then the means sequence is on the adjusted difference, narrower, with the same mixing SD as unadjusted', () => {
    const variant = withCovariate(stored(vectors.simulation.variant));
    const control = withCovariate(stored(vectors.simulation.control));
    const adjusted = compareMeansSequentially(variant, control, false)!;
    const unadjusted = compareMeansSequentially({ ...variant, covariate: undefined }, { ...control, covariate: undefined }, false)!;
    const fixed = compareAdjusted(stored(vectors.simulation.variant), stored(vectors.simulation.control), 'mean')!;
    expect(adjusted.difference).toBeCloseTo(fixed.difference, 12);
    const width = (s: Interval) => s.upper - s.lower;
    expect(width(adjusted.confidenceSequence)).toBeLessThan(0.9 * width(unadjusted.confidenceSequence));
    const mixture = judgedMixture(variant, control, 'mean')!;
    expect(mixture.variance).toBeCloseTo(fixed.variance, 15);
    expect(mixture.mixingSd).toBeCloseTo(meansMixture(variant, control)!.mixingSd, 12);
    expect(judgeByRole([{ role: 'goal', direction: 'increase', metric: 'mean', control, variants: [variant] }])[0]![0]!.pValue).toBeCloseTo(adjusted.pValue, 12);
  });

  it('when a yes/no event carries a covariate, then the rate sequence is on the adjusted proportion difference', () => {
    const c = vectors.cases.find((candidate) => candidate.scale === 'proportion')!;
    const converters = (a: AdjustedArm) => Number(a.sumY / M);
    const variant = withCovariate(stored(c.variant), converters(stored(c.variant)));
    const control = withCovariate(stored(c.control), converters(stored(c.control)));
    const adjusted = compareSequentially(variant, control, false);
    expectNear(adjusted.difference, c.expected!.difference);
    const unadjusted = rateMixture(variant, control)!;
    expect(judgedMixture(variant, control, 'rate')!.variance).toBeLessThan(unadjusted.variance * (1 - c.expected!.varianceReduction) * 1.000001);
  });

  it('when 300 A/A experiments with ρ = 0.7 are looked at every 100 participants per arm, then the adjusted sequence declares a difference in at most 5 %', () => {
    const draw = normals(20261128);
    let falsePositives = 0;
    let narrower = 0;
    for (let experiment = 0; experiment < 300; experiment++) {
      const arms = [0, 1].map(() => ({ participants: 0, sumY: 0n, sumY2: 0n, sumX: 0n, sumX2: 0n, sumXY: 0n }));
      let fired = false;
      for (let look = 0; look < 20 && !fired; look++) {
        for (const arm of arms) {
          for (let i = 0; i < 100; i++) {
            const z = draw();
            const x = BigInt(Math.round((50 + 10 * z) * 100)) * 10_000n;
            const y = BigInt(Math.round((50 + 10 * (0.7 * z + Math.sqrt(1 - 0.49) * draw())) * 100)) * 10_000n;
            Object.assign(arm, { participants: arm.participants + 1, sumY: arm.sumY + y, sumY2: arm.sumY2 + y * y, sumX: arm.sumX + x, sumX2: arm.sumX2 + x * x, sumXY: arm.sumXY + x * y });
          }
        }
        const sequence = compareMeansSequentially(withCovariate(arms[0]!), withCovariate(arms[1]!), false)!;
        if (sequence.pValue < 0.05) fired = true;
      }
      if (fired) falsePositives++;
      const last = compareAdjusted(arms[0]!, arms[1]!, 'mean');
      if (last && last.varianceReduction > 0.4) narrower++;
    }
    console.info(`[CUPED A/A peeking, ρ 0.7] 300 experiments, 20 looks of 100 per arm: false positives ${((100 * falsePositives) / 300).toFixed(1)} %; variance reduced > 40 % in ${narrower} of 300`);
    expect(falsePositives / 300).toBeLessThanOrEqual(0.05);
    expect(narrower).toBeGreaterThan(250);
  });
});

describe('yes/no events: the adjusted sequence and a guardrail on it, under no difference', () => {
  /** Seeded A/A arms of a yes/no event: bought before with probability 0.3, then again 0.5 of those and 0.1 of the others. */
  function experiment(random: () => number, looks: number, perLook: number, judge: (arms: ReturnType<typeof armsOf>) => boolean): boolean {
    const arms = armsOf();
    for (let look = 0; look < looks; look++) {
      for (const arm of arms) {
        for (let i = 0; i < perLook; i++) {
          const before = random() < 0.3;
          const after = random() < (before ? 0.5 : 0.1);
          arm.participants += 1;
          if (after) arm.uniqueConversions += 1;
          if (before) arm.covariate.sumX += M;
          if (before) arm.covariate.sumX2 += M * M;
          if (before && after) arm.covariate.sumXY += M * M;
        }
      }
      if (judge(arms)) return true;
    }
    return false;
  }
  const armsOf = () => [0, 1].map(() => ({ participants: 0, uniqueConversions: 0, covariate: { sumX: 0n, sumX2: 0n, sumXY: 0n } }));
  const uniform = (seed: number) => {
    let state = seed >>> 0;
    return () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) + 0.5) / 2 ** 32;
  };

  it('when 300 A/A experiments are looked at every 100 participants per arm, then the adjusted rate sequence and a guardrail on it each fire in at most 5 %', () => {
    const random = uniform(20261129);
    let twoSided = 0;
    let guardrail = 0;
    for (let e = 0; e < 300; e++) {
      if (experiment(random, 20, 100, ([control, variant]) => compareSequentially(variant!, control!, false).verdict === 'variant_better' || compareSequentially(variant!, control!, false).verdict === 'variant_worse')) twoSided++;
    }
    for (let e = 0; e < 300; e++) {
      if (experiment(random, 20, 100, ([control, variant]) => judgeByRole([{ role: 'guardrail', direction: 'increase', metric: 'rate', control: control!, variants: [variant!] }])[0]![0]!.verdict === 'guardrail_violated')) guardrail++;
    }
    console.info(`[CUPED A/A peeking, yes/no] 300 experiments × 20 looks of 100 per arm: two-sided ${((100 * twoSided) / 300).toFixed(1)} %, guardrail ${((100 * guardrail) / 300).toFixed(1)} %`);
    expect(twoSided / 300).toBeLessThanOrEqual(0.05);
    expect(guardrail / 300).toBeLessThanOrEqual(0.05);
  });

  it('when nobody converted before enrolment, then the rate sequence is the unadjusted one', () => {
    const control = { participants: 400, uniqueConversions: 40, covariate: { sumX: 0n, sumX2: 0n, sumXY: 0n } };
    const variant = { participants: 400, uniqueConversions: 60, covariate: { sumX: 0n, sumX2: 0n, sumXY: 0n } };
    expect(judgedMixture(variant, control, 'rate')).toEqual(rateMixture(variant, control));
    expect(compareSequentially(variant, control, false)).toEqual(compareSequentially({ participants: 400, uniqueConversions: 60 }, { participants: 400, uniqueConversions: 40 }, false));
  });
});
