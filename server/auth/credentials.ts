import { createHash, randomBytes } from 'node:crypto';

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

/** Credentials are stored only as this hash; a leaked table does not leak credentials. */
export function hashCredential(credential: string): string {
  return createHash('sha256').update(credential, 'utf8').digest('hex');
}
