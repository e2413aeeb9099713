import { webcrypto } from 'node:crypto';
import gammainc from '@stdlib/math-base-special-gammainc';
import { describe, expect, it } from 'vitest';
import {
  assignVariant,
  bucketOf,
  chooseVariant,
  resolveTraffic,
} from '../../domain/assignment';
import vectorFile from '../vectors/assignment.json' with { type: 'json' };

interface VectorVariant {
  key: string;
  traffic: number;
}
interface AssignmentVector {
  name: string;
  seed: string;
  participant: string;
  variants: VectorVariant[];
  bucket: number;
  variant: string | null;
}
interface ResolveVector {
  name: string;
  traffic: Array<number | null>;
  resolved: number[];
}
interface VectorFile {
  description: string;
  cases: AssignmentVector[];
  resolveTraffic: ResolveVector[];
}

const vectors: VectorFile = vectorFile;
const cases = vectors.cases;
const resolveCases = vectors.resolveTraffic;

// ---------------------------------------------------------------------------
// Independent reference implementation, written from the published rule text
// alone (does not use domain/assignment.ts): Web Crypto SHA-256 over the
// concatenated byte parts, BigInt for the bucket, half-open ranges for choice.
// ---------------------------------------------------------------------------
const encoder = new TextEncoder();

async function referenceBucket(seed: string, participant: string): Promise<number> {
  const seedBytes = encoder.encode(seed);
  const keyBytes = encoder.encode(participant);
  const message = new Uint8Array(seedBytes.length + 1 + keyBytes.length);
  message.set(seedBytes, 0);
  message[seedBytes.length] = 0x3a;
  message.set(keyBytes, seedBytes.length + 1);
  const digest = new Uint8Array(await webcrypto.subtle.digest('SHA-256', message));
  let h = 0n;
  for (let i = 0; i < 4; i++) h = (h << 8n) | BigInt(digest[i]!);
  return Number((h * 100n) / 2n ** 32n);
}

function referenceChoose(variants: readonly VectorVariant[], bucket: number): string | null {
  let lower = 0;
  for (const v of variants) {
    const upper = lower + v.traffic;
    if (lower <= bucket && bucket < upper) return v.key;
    lower = upper;
  }
  return null;
}

function referenceResolve(traffic: ReadonlyArray<number | null>): number[] {
  const setTotal = traffic.reduce<number>((sum, t) => sum + (t ?? 0), 0);
  const unsetCount = traffic.filter((t) => t === null).length;
  const remaining = Math.max(0, 100 - setTotal);
  let unsetIndex = 0;
  return traffic.map((t) => {
    if (t !== null) return t;
    const share = Math.floor(remaining / unsetCount) + (unsetIndex < remaining % unsetCount ? 1 : 0);
    unsetIndex++;
    return share;
  });
}

// ---------------------------------------------------------------------------

function chiSquarePValue(observed: readonly number[], weights: readonly number[]): number {
  const n = observed.reduce((a, b) => a + b, 0);
  const totalWeight = weights.reduce((a, b) => a + b, 0);
  let chi2 = 0;
  for (let i = 0; i < observed.length; i++) {
    const expected = (n * weights[i]!) / totalWeight;
    chi2 += (observed[i]! - expected) ** 2 / expected;
  }
  const df = observed.length - 1;
  return gammainc(chi2 / 2, df / 2, true, true);
}

function countAssignments(seed: string, variants: readonly VectorVariant[], participants: number): number[] {
  const counts = variants.map(() => 0);
  for (let i = 0; i < participants; i++) {
    const chosen = assignVariant(seed, `user-${i}`, variants);
    if (chosen !== null) counts[variants.indexOf(chosen)]!++;
  }
  return counts;
}

const SEED = cases[0]!.seed;

describe('assignment vectors file', () => {
  it('when the vectors are loaded, then they cover every required shape', () => {
    expect(cases.length).toBeGreaterThan(0);
    for (const c of cases) expect(c.seed).toMatch(/^[0-9a-f]{32}$/);
    const boundaryBuckets = new Set(cases.map((c) => c.bucket));
    for (const b of [0, 9, 10, 49, 50, 99]) expect(boundaryBuckets).toContain(b);
    const participants = cases.map((c) => c.participant);
    expect(participants).toContain('José');
    expect(participants).toContain('用户-42');
    expect(participants.some((p) => /\p{Extended_Pictographic}/u.test(p))).toBe(true);
    expect(participants.some((p) => p.length === 255)).toBe(true);
    expect(cases.some((c) => c.variants.some((v) => v.traffic === 0))).toBe(true);
    expect(cases.some((c) => c.variant === null)).toBe(true);
  });
});

describe('server assignment module reproduces the vectors', () => {
  it.each(cases)('$name (bucket $bucket → $variant)', (c) => {
    expect(bucketOf(c.seed, c.participant)).toBe(c.bucket);
    expect(chooseVariant(c.variants, c.bucket)?.key ?? null).toBe(c.variant);
    const assigned = assignVariant(c.seed, c.participant, c.variants);
    expect(assigned?.key ?? null).toBe(c.variant);
    if (assigned !== null) expect(c.variants).toContain(assigned);
  });

  it.each(resolveCases)('resolveTraffic: $name', (c) => {
    expect(resolveTraffic(c.traffic)).toEqual(c.resolved);
  });
});

describe('independent reference implementation reproduces the vectors', () => {
  it.each(cases)('$name (bucket $bucket → $variant)', async (c) => {
    const bucket = await referenceBucket(c.seed, c.participant);
    expect(bucket).toBe(c.bucket);
    expect(referenceChoose(c.variants, bucket)).toBe(c.variant);
  });

  it.each(resolveCases)('resolveTraffic: $name', (c) => {
    expect(referenceResolve(c.traffic)).toEqual(c.resolved);
  });

  it('when 2 000 generated keys are bucketed by both implementations, then they agree on every key', async () => {
    for (let i = 0; i < 2000; i++) {
      const key = `agree-${i}-ü-${String.fromCodePoint(0x1f600 + (i % 64))}`;
      expect(bucketOf(SEED, key)).toBe(await referenceBucket(SEED, key));
    }
  });
});

describe('distribution', () => {
  const N = 10_000;

  it('when 10 000 participants are assigned over a 20/30/50 split, then the counts pass a χ² test (p > 0.001)', () => {
    const variants = [
      { key: 'a', traffic: 20 },
      { key: 'b', traffic: 30 },
      { key: 'c', traffic: 50 },
    ];
    const counts = countAssignments(SEED, variants, N);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(N);
    const p = chiSquarePValue(counts, [20, 30, 50]);
    expect(p).toBeGreaterThan(0.001);
  });

  it('when 10 000 participants are assigned over an equal 3-way split, then the counts pass a χ² test (p > 0.001)', () => {
    const traffic = resolveTraffic([null, null, null]);
    const variants = traffic.map((t, i) => ({ key: `v${i}`, traffic: t }));
    const counts = countAssignments(SEED, variants, N);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(N);
    const p = chiSquarePValue(counts, traffic);
    expect(p).toBeGreaterThan(0.001);
  });

  it('when a variant has 0 %, then none of 10 000 participants is assigned to it', () => {
    const variants = [
      { key: 'control', traffic: 50 },
      { key: 'retired', traffic: 0 },
      { key: 'treatment', traffic: 50 },
    ];
    const counts = countAssignments(SEED, variants, N);
    expect(counts[1]).toBe(0);
    expect(counts[0]! + counts[2]!).toBe(N);
    expect(chiSquarePValue([counts[0]!, counts[2]!], [50, 50])).toBeGreaterThan(0.001);
  });

  it('when the χ² helper sees a grossly skewed split, then its p-value is far below 0.001', () => {
    expect(chiSquarePValue([4000, 3000, 3000], [34, 33, 33])).toBeLessThan(1e-6);
    expect(chiSquarePValue([3334, 3333, 3333], [1, 1, 1])).toBeGreaterThan(0.99);
  });
});

describe('resolveTraffic', () => {
  it('when all shares are set and sum to 100, then they are returned unchanged', () => {
    expect(resolveTraffic([25, 25, 50])).toEqual([25, 25, 50]);
  });

  it('when set shares sum above 100, then the unset variants get 0', () => {
    expect(resolveTraffic([60, null, 60, null])).toEqual([60, 0, 60, 0]);
  });

  it('when there is a single unset variant, then it gets 100', () => {
    expect(resolveTraffic([null])).toEqual([100]);
  });

  it('when there is a single set variant, then it keeps its share', () => {
    expect(resolveTraffic([100])).toEqual([100]);
  });

  it('when all variants are unset, then the shares are an equal split summing to 100 with the extra going first', () => {
    for (let n = 1; n <= 12; n++) {
      const shares = resolveTraffic(new Array<number | null>(n).fill(null));
      expect(shares.reduce((a, b) => a + b, 0)).toBe(100);
      expect(Math.max(...shares) - Math.min(...shares)).toBeLessThanOrEqual(1);
      expect([...shares].sort((a, b) => b - a)).toEqual(shares);
      expect(shares).toEqual(referenceResolve(new Array<number | null>(n).fill(null)));
    }
  });

  it('when there are no variants, then the result is empty', () => {
    expect(resolveTraffic([])).toEqual([]);
  });

  it('when resolving, then the input array is not modified', () => {
    const input: Array<number | null> = [null, 20, null];
    resolveTraffic(input);
    expect(input).toEqual([null, 20, null]);
  });
});
