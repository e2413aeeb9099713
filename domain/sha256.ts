import { sha256 as digest } from '@noble/hashes/sha2.js';

const encoder = new TextEncoder();

type NodeHash = (algorithm: 'sha256', text: string, encoding: 'buffer') => Uint8Array;
type NodeProcess = { getBuiltinModule?: (id: 'node:crypto') => { hash?: NodeHash } | undefined };

/** Node's one-shot hash where this bundle runs under Node 20.16+ (several times faster than the portable one), else none. */
const nodeHash: NodeHash | undefined = (globalThis as { process?: NodeProcess }).process?.getBuiltinModule?.('node:crypto')?.hash;

/**
 * SHA-256 of a string's UTF-8 bytes, synchronous in any JavaScript runtime (browsers included).
 * Imported as `#sha256`: under Node the package.json `imports` entry resolves it to
 * server/platform/sha256.ts (node:crypto), elsewhere to this file — which, bundled into the
 * package and then run by Node, still uses Node's hash; all give the same bytes.
 */
export function sha256(text: string): Uint8Array {
  return nodeHash ? nodeHash('sha256', text, 'buffer') : portableSha256(text);
}

/** The portable digest browsers use. */
export function portableSha256(text: string): Uint8Array {
  return digest(encoder.encode(text));
}
