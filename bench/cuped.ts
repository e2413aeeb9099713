// `npx tsx bench/cuped.ts [--rounds 7]`: what the regression adjustment costs a results read, in process. The
// adjusted comparison (exact BigInt sums: θ, the adjusted variances and the delta method as fractions) against
// the unadjusted Welch comparison on the same arms, at 1 000 and at 100 000 participants per arm (values in
// cents up to 10 000, and values within cents of 10⁹), rounds alternating. A read stays O(variants) if the
// adjusted figures at 100 000 cost about what they cost at 1 000: the sums' digits grow with log n only.
// Prints a table and writes bench/results/<day>-cuped.json.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { compareAdjusted, type AdjustedArm } from '../domain/cuped';
import { compareMeans, type MeanArm } from '../domain/means';
import { spread } from './lib/stats';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' } } });
const rounds = Number(values.rounds);
const CALLS = 2_000;

/** Seeded arms of n participants with x and y correlated, values `base` + up to `spread` cents. */
function arms(n: number, base: number, cents: number, seed: number): { adjusted: AdjustedArm; means: MeanArm } {
  let state = seed >>> 0;
  const uniform = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) + 0.5) / 2 ** 32;
  const arm = { participants: n, sumY: 0n, sumY2: 0n, sumX: 0n, sumX2: 0n, sumXY: 0n };
  for (let i = 0; i < n; i++) {
    const level = uniform();
    const x = BigInt(base) * 1_000_000n + BigInt(Math.round(level * cents)) * 10_000n;
    const y = BigInt(base) * 1_000_000n + BigInt(Math.round((0.6 * level + 0.4 * uniform()) * cents)) * 10_000n;
    Object.assign(arm, { sumY: arm.sumY + y, sumY2: arm.sumY2 + y * y, sumX: arm.sumX + x, sumX2: arm.sumX2 + x * x, sumXY: arm.sumXY + x * y });
  }
  const micros = { sum: arm.sumY, sumOfSquares: arm.sumY2 };
  return { adjusted: arm, means: { participants: n, sum: Number(arm.sumY) / 1e6, sumOfSquares: Number(arm.sumY2) / 1e12, micros } };
}

/** Microseconds a call, over CALLS calls. */
function timed(call: () => unknown): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) call();
  return Number(process.hrtime.bigint() - start) / 1e3 / CALLS;
}

const cases = [
  { name: '1 000, cents', n: 1_000, base: 0, cents: 1_000_000 },
  { name: '100 000, cents', n: 100_000, base: 0, cents: 1_000_000 },
  { name: '100 000, near 10⁹', n: 100_000, base: 999_999_999, cents: 100 },
].map((c) => ({ ...c, variant: arms(c.n, c.base, c.cents, 1), control: arms(c.n, c.base, c.cents, 2) }));

const samples = new Map(cases.map((c) => [c.name, { adjusted: [] as number[], unadjusted: [] as number[] }]));
for (let round = 0; round < rounds; round++) {
  for (const c of cases) {
    const s = samples.get(c.name)!;
    s.adjusted.push(timed(() => compareAdjusted(c.variant.adjusted, c.control.adjusted, 'mean')));
    s.unadjusted.push(timed(() => compareMeans(c.variant.means, c.control.means)));
  }
}

const base = spread(samples.get('1 000, cents')!.adjusted).median;
const results = cases.map((c) => {
  const s = samples.get(c.name)!;
  const adjusted = spread(s.adjusted).median;
  const unadjusted = spread(s.unadjusted).median;
  return { case: c.name, adjustedMicroseconds: adjusted, unadjustedMicroseconds: unadjusted, adjustedOverUnadjusted: adjusted / unadjusted, adjustedOverAdjustedAt1000: adjusted / base };
});
console.table(results.map((r) => ({ ...r, adjustedMicroseconds: r.adjustedMicroseconds.toFixed(1), unadjustedMicroseconds: r.unadjustedMicroseconds.toFixed(1), adjustedOverUnadjusted: r.adjustedOverUnadjusted.toFixed(2), adjustedOverAdjustedAt1000: r.adjustedOverAdjustedAt1000.toFixed(2) })));
writeFileSync(`bench/results/${new Date().toISOString().slice(0, 10)}-cuped.json`, JSON.stringify({ rounds, calls: CALLS, results }, null, 2) + '\n');
