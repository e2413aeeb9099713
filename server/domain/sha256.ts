import { sha256 as digest } from '@noble/hashes/sha2.js';

const encoder = new TextEncoder();

/**
 * SHA-256 of a string's UTF-8 bytes, synchronous in any JavaScript runtime (browsers included).
 * Imported as `#sha256`: under Node the package.json `imports` entry resolves it to
 * server/platform/sha256.ts (node:crypto), elsewhere to this file; both give the same bytes.
 */
export function sha256(text: string): Uint8Array {
  return digest(encoder.encode(text));
}
