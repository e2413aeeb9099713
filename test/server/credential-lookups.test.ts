// Credential lookups of one turn of the event loop go in one query on PostgreSQL (auth/lookups.ts).
import { afterEach, describe, expect, it } from 'vitest';
import { createTeam } from '../../server/admin/service';
import { identifyIn } from '../../server/auth/identify';
import { batchedLookup } from '../../server/auth/lookups';
import { engines } from '../support/engines';
import { freshStorage, openStorageAt } from '../support/storage';

describe('credential lookups in batches', () => {
  it('when lookups are asked in one turn, then one call looks up their distinct hashes and each gets its own row; a later turn makes a batch of its own', async () => {
    // Arrange
    const calls: string[][] = [];
    const lookup = batchedLookup(async (hashes) => {
      calls.push(hashes);
      return new Map(hashes.filter((hash) => hash !== 'unknown').map((hash) => [hash, `row of ${hash}`]));
    });
    // Act
    const first = await Promise.all([lookup('a'), lookup('b'), lookup('a'), lookup('unknown')]);
    const later = await lookup('b');
    // Assert
    expect(first).toEqual(['row of a', 'row of b', 'row of a', undefined]);
    expect(later).toBe('row of b');
    expect(calls).toEqual([['a', 'b', 'unknown'], ['b']]);
  });

  it('when a batch fails, then every lookup of it fails with its error, and the next batch is asked anew', async () => {
    // Arrange
    let fail = true;
    const lookup = batchedLookup(async (hashes) => {
      if (fail) throw new Error('storage failed');
      return new Map(hashes.map((hash) => [hash, hash]));
    });
    // Act
    const failed = await Promise.allSettled([lookup('a'), lookup('b')]);
    fail = false;
    // Assert
    expect(failed.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    expect(await lookup('a')).toBe('a');
  });

  describe.runIf(engines.includes('postgres'))('on postgres', () => {
    const cleanups: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    it('when ten requests of two teams ask at once, then one query finds both keys; a key rotated before the next turn is not found there', async () => {
      // Arrange
      const { storageEnv, cleanup } = await freshStorage('postgres');
      const queries: string[] = [];
      const storage = await openStorageAt(storageEnv, { log: (event) => void queries.push(event.query.sql) });
      cleanups.push(cleanup, () => storage.close());
      const one = await createTeam(storage.db, { name: 'One', email: `one-${Date.now()}@example.com` });
      const two = await createTeam(storage.db, { name: 'Two', email: `two-${Date.now()}@example.com` });
      const identify = identifyIn(storage.db, 'postgres');
      const from = queries.length;
      // Act
      const found = await Promise.all(Array.from({ length: 10 }, (_, i) => identify(i % 2 === 0 ? one.ingest_key : two.ingest_key)));
      const lookups = queries.slice(from).length;
      await storage.db.updateTable('teams').set({ ingest_key_hash: 'rotated' }).where('id', '=', one.team.id).execute();
      const afterRotation = await Promise.all([identify(one.ingest_key), identify(two.ingest_key)]);
      // Assert
      expect(found.map((principal) => principal?.kind === 'ingest-key' && principal.team.id)).toEqual(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? one.team.id : two.team.id)));
      expect(lookups).toBe(1);
      expect(afterRotation.map((principal) => principal?.kind === 'ingest-key' && principal.team.id)).toEqual([false, two.team.id]);
    });
  });
});
