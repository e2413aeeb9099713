import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

/** The files that replace a module (node:crypto's timingSafeEqual, JSON.stringify, the condition evaluator, spied on) or a browser's globals: they run isolated. */
const SPYING = ['test/server/config-stream-bounds.test.ts', 'test/server/credentials.test.ts', 'test/server/ingest-write-lock.test.ts', 'test/sdk/page-hide.test.ts'];

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    // Generous: CI machines have 2 cores shared with other services, and several tests start
    // child servers and CLI processes. The longest (races, verify) took up to 121 s at a load
    // average of 25.
    testTimeout: 300_000,
    hookTimeout: 300_000,
    // expect.poll waits for a condition; its default second is shorter than one answer can take
    // on a loaded CI machine (a console toggle's PUT once took longer at a load average of 20).
    expect: { poll: { timeout: 60_000 } },
    pool: 'forks',
    // More test files at once than cores: most of a file's time is spent waiting — on child
    // processes, fsync, sockets, PostgreSQL — not computing (on 2 cores: 3 files, not vitest's 1).
    maxWorkers: Math.max(3, availableParallelism()),
    projects: [
      // Files share their worker's loaded modules instead of loading the server's afresh each
      // (a tenth of the suite's CPU time): each still starts servers and storage of its own.
      { extends: true, test: { name: 'shared', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...SPYING], isolate: false } },
      { extends: true, test: { name: 'isolated', include: SPYING } },
    ],
  },
});
