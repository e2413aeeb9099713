/**
 * Variant assignment — pure, deterministic functions.
 *
 * Published rule (openapi/components/schemas/Config.yaml states it for SDKs):
 * - Each experiment has an immutable `seed`: 32 lowercase hex characters (128 random bits), and
 *   an immutable `hash_version`: 1 (100 buckets) for experiments created before 2026-11-24,
 *   2 (10 000 buckets) for every later one.
 * - Variants are ordered by creation. Each has a resolved integer `traffic` share (0–100 %).
 * - Unset shares (null) split equally what the set ones leave:
 *   remaining = max(0, 100 − Σ set); each unset variant gets floor(remaining / k) and the first
 *   (remaining mod k) unset variants, in variant order, get one more.
 * - Digest: D = SHA-256(UTF-8(seed) ‖ 0x3A ‖ UTF-8(participant key)); h = D[0..3] read as an
 *   unsigned 32-bit big-endian integer.
 * - Bucket: b = floor(h × N / 2^32) with N = 100 (version 1) or 10 000 (version 2).
 * - The participant gets the first variant i whose cumulative share, scaled to buckets
 *   (C_i × N / 100), exceeds b; if none does (shares sum below 100) there is no assignment (null).
 */
import { sha256 } from '#sha256';

export type HashVersion = 1 | 2;

/** The hash rule every experiment created from now on uses. */
export const CURRENT_HASH_VERSION: HashVersion = 2;

const BUCKETS: Record<HashVersion, number> = { 1: 100, 2: 10_000 };
const TWO_POW_32 = 4294967296;

/** Resolves unset (null) traffic shares into integer percents, following the published rule. */
export function resolveTraffic(traffic: Array<number | null>): number[] {
  let setSum = 0;
  let unset = 0;
  for (let i = 0; i < traffic.length; i++) {
    const t = traffic[i];
    if (t === null || t === undefined) unset++;
    else setSum += t;
  }
  const remaining = Math.max(0, 100 - setSum);
  const base = unset > 0 ? Math.floor(remaining / unset) : 0;
  let extra = unset > 0 ? remaining % unset : 0;
  const out = new Array<number>(traffic.length);
  for (let i = 0; i < traffic.length; i++) {
    const t = traffic[i];
    if (t === null || t === undefined) {
      if (extra > 0) {
        out[i] = base + 1;
        extra--;
      } else {
        out[i] = base;
      }
    } else {
      out[i] = t;
    }
  }
  return out;
}

/** The digest a participant's variant bucket (bytes 0–3) and coverage position (bytes 4–7) are read from. */
export function assignmentDigest(seed: string, participantKey: string): Uint8Array {
  return sha256(seed + ':' + participantKey);
}

/** The unsigned 32-bit big-endian integer at `offset` of a digest, scaled to 0 … units − 1. */
export function scaled(digest: Uint8Array, offset: number, units: number): number {
  const h = ((digest[offset]! << 24) >>> 0) + (digest[offset + 1]! << 16) + (digest[offset + 2]! << 8) + digest[offset + 3]!;
  // h × 10 000 < 2^46 is an exact double, and dividing by 2^32 is exact, so floor is exact.
  return Math.floor((h * units) / TWO_POW_32);
}

/** Bucket of a digest under a hash version: 0–99 (version 1) or 0–9 999 (version 2). */
export function bucketOfDigest(digest: Uint8Array, version: HashVersion): number {
  return scaled(digest, 0, BUCKETS[version]);
}

/** Bucket 0–99 of a participant key under an experiment seed (hash version 1). */
export function bucketOf(seed: string, participantKey: string, version: HashVersion = 1): number {
  return bucketOfDigest(assignmentDigest(seed, participantKey), version);
}

/** First variant whose cumulative share, scaled to the version's buckets, exceeds the bucket, or null. */
export function chooseVariant<V extends { traffic: number }>(
  variants: readonly V[],
  bucket: number,
  version: HashVersion = 1,
): V | null {
  const perPercent = BUCKETS[version] / 100;
  let cumulative = 0;
  for (let i = 0; i < variants.length; i++) {
    const v = variants[i]!;
    cumulative += v.traffic * perPercent;
    if (bucket < cumulative) return v;
  }
  return null;
}

/** Assigns a participant to a variant (resolved traffic shares), or null when none qualifies. */
export function assignVariant<V extends { traffic: number }>(
  seed: string,
  participantKey: string,
  variants: readonly V[],
  version: HashVersion = 1,
): V | null {
  return chooseVariant(variants, bucketOf(seed, participantKey, version), version);
}
