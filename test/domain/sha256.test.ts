import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { portableSha256, sha256 } from '../../domain/sha256';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const nodeDigest = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('the SHA-256 the evaluator bundles (domain/sha256.ts)', () => {
  it('when the portable digest (browsers) hashes any string, then it gives the bytes node:crypto gives', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (text) => hex(portableSha256(text)) === nodeDigest(text)), { numRuns: 2_000 });
    expect(hex(portableSha256(''))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('when it runs under Node, then the digest it picks gives the same bytes', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (text) => hex(sha256(text)) === nodeDigest(text)), { numRuns: 2_000 });
  });
});
