/**
 * The credential of an OFREP event stream's URL. A browser's `EventSource` cannot send
 * `Authorization`, so the URL carries it: a token scoped to one team's change notices, that
 * expires, and that the team's ingest key vouches for — an HMAC-SHA256 keyed with the key's
 * stored hash over the team and the expiry. Rotating the key voids every token of it; no secret
 * of the server's own is needed, so every process of the same storage checks every token.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { TeamRow } from '../teams/store';

/** Tokens are made per whole hour: every answer of an hour carries the same URL (and ETag). */
const WINDOW_SECONDS = 3600;
/** `<expiry, Unix seconds>.<HMAC, base64url>`, as the contract's `token` parameter states it. */
const SHAPE = /^([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/;

type Keyed = Pick<TeamRow, 'id' | 'ingest_key_hash'>;

/** The team's token at `nowMs`: it expires at the end of the next whole hour (1 to 2 hours on). */
export function streamToken(team: Keyed, nowMs: number): string {
  const expires = (Math.floor(nowMs / 1000 / WINDOW_SECONDS) + 2) * WINDOW_SECONDS;
  return `${expires}.${macOf(team, expires)}`;
}

/**
 * Whether `token` is one the team's current ingest key made. `nowMs` given: and not expired
 * (a stream is opened only with a live token; an open one lasts while the key does).
 */
export function vouches(team: Keyed, token: string, nowMs?: number): boolean {
  const match = SHAPE.exec(token);
  if (!match) return false;
  const expires = Number(match[1]);
  if (nowMs !== undefined && expires * 1000 <= nowMs) return false;
  const expected = Buffer.from(macOf(team, expires));
  const presented = Buffer.from(match[2]!);
  return expected.length === presented.length && timingSafeEqual(expected, presented);
}

function macOf(team: Keyed, expires: number): string {
  return createHmac('sha256', team.ingest_key_hash).update(`ofrep-event-stream\n${team.id}\n${expires}`).digest('base64url');
}
