import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bucketOf, chooseVariant, type HashVersion } from '../../domain/assignment';
import { coveragePosition, isCovered, toHundredths } from '../../domain/coverage';
import { admits, placeParticipant } from '../../domain/eligibility';
import { groupPosition, isInRange, rangesOverlap } from '../../domain/exclusion-groups';
import vectors from '../vectors/targeting.json' with { type: 'json' };

const range = (key: string, start: number, end: number) => ({ key, start: toHundredths(start), end: toHundredths(end) });

describe('targeting vectors (test/vectors/targeting.json)', () => {
  it('when the Python reference runs, then it prints the vectors file unchanged', () => {
    const printed = execFileSync('python3', ['test/vectors/targeting.py'], { encoding: 'utf8' });
    expect(JSON.parse(printed)).toEqual(JSON.parse(readFileSync('test/vectors/targeting.json', 'utf8')));
  });

  it('when the file is loaded, then it holds the 10 000-bucket boundaries, 0.1 % coverage and an empty coverage', () => {
    expect(vectors.buckets.map((c) => c.bucket)).toEqual(expect.arrayContaining([0, 4999, 5000, 9999]));
    expect(vectors.coverage.map((c) => c.coverage)).toEqual(expect.arrayContaining([0.1, 0, 100]));
    expect(vectors.placements.some((c) => c.variant === null) && vectors.placements.some((c) => c.variant !== null)).toBe(true);
  });

  it.each(vectors.buckets)('buckets: $name', (c) => {
    const version = c.hash_version as HashVersion;
    expect(bucketOf(c.seed, c.participant, version)).toBe(c.bucket);
    expect(chooseVariant(c.variants, c.bucket, version)?.key ?? null).toBe(c.variant);
  });

  it.each(vectors.coverage)('coverage: $name', (c) => {
    expect(coveragePosition(c.seed, c.participant)).toBe(c.position);
    expect(isCovered(c.position, toHundredths(c.coverage))).toBe(c.covered);
  });

  it.each(vectors.groups)('groups: $name', (c) => {
    expect(groupPosition(c.group, c.participant)).toBe(c.position);
    expect(isInRange(c.position, range(c.group, c.start, c.end))).toBe(c.inside);
  });

  it.each(vectors.overlaps)('overlaps: $name', (c) => {
    expect(rangesOverlap(range('g', c.a.start, c.a.end), range('g', c.b.start, c.b.end))).toBe(c.overlap);
    expect(rangesOverlap(range('g', c.b.start, c.b.end), range('g', c.a.start, c.a.end))).toBe(c.overlap);
  });

  it.each(vectors.placements)('placements: $name', (c) => {
    const group = c.exclusion_group && range(c.exclusion_group.key, c.exclusion_group.start, c.exclusion_group.end);
    const targeting = { seed: c.seed, hashVersion: c.hash_version as HashVersion, coverage: toHundredths(c.coverage), group, conditions: {} };
    expect(placeParticipant(targeting, { key: c.participant, attributes: {} }, c.variants)?.key ?? null).toBe(c.variant);
  });
});

describe('coverage and groups over 10 000 participants', () => {
  const SEED = vectors.buckets[0]!.seed;
  const keys = Array.from({ length: 10_000 }, (_, i) => `user-${i}`);
  const HALVES = [{ key: 'control', traffic: 50 }, { key: 'treatment', traffic: 50 }];
  const targeting = (coverage: number) => ({ seed: SEED, hashVersion: 2 as const, coverage: toHundredths(coverage), group: null, conditions: {} });
  const anyone = (key: string) => ({ key, attributes: {} });

  it('when coverage is raised from 20 to 50 %, then everyone who entered at 20 % enters at 50 % with the same variant', () => {
    const at20 = keys.map((key) => placeParticipant(targeting(20), anyone(key), HALVES)?.key ?? null);
    const at50 = keys.map((key) => placeParticipant(targeting(50), anyone(key), HALVES)?.key ?? null);
    const entered = at20.filter((variant) => variant !== null).length;
    expect(entered).toBeGreaterThan(1800);
    expect(entered).toBeLessThan(2200);
    at20.forEach((variant, i) => {
      if (variant !== null) expect(at50[i]).toBe(variant);
    });
  });

  it('when two experiments hold disjoint ranges of one group, then no participant is in both', () => {
    const a = range('g', 0, 50);
    const b = range('g', 50, 100);
    const inA = keys.filter((key) => isInRange(groupPosition('g', key), a));
    const inB = keys.filter((key) => isInRange(groupPosition('g', key), b));
    expect(inA.length + inB.length).toBe(keys.length);
    expect(inA.filter((key) => inB.includes(key))).toEqual([]);
  });
});

describe('conditions before the hashes', () => {
  const targeting = { seed: vectors.buckets[0]!.seed, hashVersion: 2 as const, coverage: 10_000, group: null, conditions: { country: { $in: ['DE', 'AT'] } } };

  it('when the attributes match the conditions, then the participant is admitted', () => {
    expect(admits(targeting, { key: 'user-1', attributes: { country: 'DE' } })).toBe(true);
  });

  it('when the attributes do not match or are missing, then it is not', () => {
    expect(admits(targeting, { key: 'user-1', attributes: { country: 'FR' } })).toBe(false);
    expect(admits(targeting, { key: 'user-1', attributes: {} })).toBe(false);
  });

  it('when the conditions are {}, then the attributes are never read', () => {
    const unread = { key: 'user-1', get attributes(): Record<string, unknown> { throw new Error('read'); } };
    expect(admits({ ...targeting, conditions: {} }, unread)).toBe(true);
  });
});
