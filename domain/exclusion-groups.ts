/**
 * Exclusion groups — experiments that must not share participants.
 *
 * Published rule: a group has its own hash space, the same for all its experiments. A
 * participant's position in group G is g = floor(h × 10 000 / 2^32), h = bytes 0–3 (unsigned
 * 32-bit big-endian) of SHA-256(UTF-8(G) ‖ 0x2F ‖ UTF-8(participant key)) — `/` cannot occur in
 * a key, so this input never equals a variant digest's. An experiment of the group holds the
 * half-open range [start, end) of that space, in hundredths of a percent; a participant can
 * enter it only when start ≤ g < end. Two ranges overlap when each starts before the other ends.
 */
import { sha256 } from '#sha256';
import { scaled } from './assignment';
import { HUNDREDTHS } from './coverage';

/** A range of a group's hash space in hundredths of a percent: [start, end). */
export interface GroupRange {
  key: string;
  start: number;
  end: number;
}

export function groupPosition(groupKey: string, participantKey: string): number {
  return scaled(sha256(groupKey + '/' + participantKey), 0, HUNDREDTHS);
}

export function isInRange(position: number, range: GroupRange): boolean {
  return range.start <= position && position < range.end;
}

/** Whether two ranges of the same group share any position. */
export function rangesOverlap(a: GroupRange, b: GroupRange): boolean {
  return a.key === b.key && a.start < b.end && b.start < a.end;
}
