/**
 * Coverage — the share of an experiment's eligible participants that enter it.
 *
 * Published rule: coverage is a percentage with two decimals, held as an integer number of
 * hundredths of a percent (0–10 000). A participant's coverage position is
 * p = floor(h × 10 000 / 2^32), h = bytes 4–7 (unsigned 32-bit big-endian) of the same digest
 * as its variant bucket (assignment.ts): independent of the variant bucket, so a participant
 * keeps its position when coverage changes, raising coverage only adds participants and the
 * variant split among those who enter stays the shares. It is covered when p < coverage.
 */
import { assignmentDigest, scaled } from './assignment';

/** Coverage and exclusion-group bounds are stored and compared in hundredths of a percent. */
export const HUNDREDTHS = 10_000;

/** A percentage with at most two decimals (20, 0.1, 33.33) as hundredths of a percent. */
export function toHundredths(percent: number): number {
  return Math.round(percent * 100);
}

/** Hundredths of a percent back to the percentage answered (2 000 → 20, 10 → 0.1). */
export function toPercent(hundredths: number): number {
  return hundredths / 100;
}

/** Whether a percentage is a multiple of 0.01 (within binary floating point's error). */
export function isInHundredths(percent: number): boolean {
  return Math.abs(percent * 100 - Math.round(percent * 100)) < 1e-6;
}

/** Coverage position 0–9 999 of a digest (bytes 4–7). */
export function coveragePositionOfDigest(digest: Uint8Array): number {
  return scaled(digest, 4, HUNDREDTHS);
}

export function coveragePosition(seed: string, participantKey: string): number {
  return coveragePositionOfDigest(assignmentDigest(seed, participantKey));
}

/** Whether a coverage position lies inside a coverage given in hundredths of a percent. */
export function isCovered(position: number, coverage: number): boolean {
  return position < coverage;
}
