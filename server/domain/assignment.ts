/**
 * Variant assignment — pure, deterministic functions.
 *
 * Published rule:
 * - Each experiment has an immutable `seed`: 32 lowercase hex characters (128 random bits).
 * - Variants are ordered by creation. Each has a resolved integer `traffic` share (0–100 %).
 * - Unset shares (null) split equally what the set ones leave:
 *   remaining = max(0, 100 − Σ set); each unset variant gets floor(remaining / k) and the first
 *   (remaining mod k) unset variants, in variant order, get one more.
 * - Hash: h = first 4 bytes (unsigned 32-bit big-endian) of
 *   SHA-256(UTF-8(seed) ‖ 0x3A ‖ UTF-8(participant key)).
 * - Bucket: b = floor(h × 100 / 2^32), an integer 0–99.
 * - The participant gets the first variant i whose cumulative share C_i satisfies b < C_i;
 *   if none qualifies (shares sum below 100) there is no assignment (null).
 */
import { hash } from 'node:crypto';

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

/** Bucket 0–99 of a participant key under an experiment seed. */
export function bucketOf(seed: string, participantKey: string): number {
  // The one-shot hash (UTF-8 for a string) costs about two thirds of createHash's for a key this short.
  const h = hash('sha256', seed + ':' + participantKey, 'buffer').readUInt32BE(0);
  // h × 100 < 2^39 is an exact double, and dividing by 2^32 is exact, so floor is exact.
  return Math.floor((h * 100) / TWO_POW_32);
}

/** First variant whose cumulative share exceeds the bucket (b < C_i), or null. */
export function chooseVariant<V extends { traffic: number }>(
  variants: readonly V[],
  bucket: number,
): V | null {
  let cumulative = 0;
  for (let i = 0; i < variants.length; i++) {
    const v = variants[i]!;
    cumulative += v.traffic;
    if (bucket < cumulative) return v;
  }
  return null;
}

/** Assigns a participant to a variant (resolved traffic shares), or null when none qualifies. */
export function assignVariant<V extends { traffic: number }>(
  seed: string,
  participantKey: string,
  variants: readonly V[],
): V | null {
  return chooseVariant(variants, bucketOf(seed, participantKey));
}
