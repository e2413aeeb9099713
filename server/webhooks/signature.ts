import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signing (standardwebhooks.com): a secret is `whsec_` and the base64 of its
 * key; a message is signed with HMAC-SHA256 under that key over `<webhook-id>.<webhook-timestamp>.<body>`,
 * and the signature header is `v1,` and the base64 of the digest.
 */
export const SECRET_PREFIX = 'whsec_';

/** A new secret: 24 random bytes (192 bits), within the convention's 24–64. */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * The three headers of a delivery of `body` (the exact bytes sent) with id `id` at `timestamp`
 * (seconds since the epoch), signed with each of `secrets`: the signatures separated by spaces, as
 * the convention has it while a secret is being rotated (a receiver accepts any one it can verify).
 */
export function signedHeaders(secrets: string[], id: string, timestamp: number, body: string): SignedHeaders {
  const signatures = secrets.map((secret) => {
    if (!secret.startsWith(SECRET_PREFIX)) throw new Error('A webhook secret starts with whsec_.');
    const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
    return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`, 'utf8').digest('base64')}`;
  });
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatures.join(' ') };
}
