import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { startChild, stopChild, type ChildServer } from '../support/process';
import { freshStorage } from '../support/storage';

/**
 * Several servers started at once on fresh storage (a deployment's replicas, or a restart of
 * all of them after an upgrade) each run the migrations: one migrates, the others wait for it and
 * find nothing left to do. Without a lock, of three SQLite processes one crashed in half the
 * starts (a duplicate kysely_migration row, a duplicate column); six trials catch that all but
 * once in 64 runs — each trial a test of its own, so that a slow machine times none of them out.
 */
const TRIALS = [1, 2, 3, 4, 5, 6];
const SERVERS = 3;

describe.each(engines)('servers started together on fresh %s storage', (engine) => {
  it.each(TRIALS)(`when ${SERVERS} servers start at once on fresh storage (trial %i), then every one of them starts and answers`, async () => {
    // Arrange
    const { storageEnv, cleanup } = await freshStorage(engine);
    const starts: Array<PromiseSettledResult<ChildServer>> = [];
    try {
      // Act
      starts.push(...(await Promise.allSettled(Array.from({ length: SERVERS }, () => startChild(storageEnv)))));

      // Assert
      expect(starts.flatMap((start) => (start.status === 'rejected' ? [String(start.reason)] : []))).toEqual([]);
      for (const start of starts) {
        const response = await fetch(`${(start as PromiseFulfilledResult<ChildServer>).value.baseUrl}/api/health`);
        expect(response.status).toBe(200);
        await response.arrayBuffer();
      }
    } finally {
      await Promise.all(starts.flatMap((start) => (start.status === 'fulfilled' ? [stopChild(start.value)] : [])));
      await cleanup();
    }
  });
});
