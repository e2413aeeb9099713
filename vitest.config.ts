import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Generous: CI machines have 2 cores shared with other services, and several tests start
    // child servers and CLI processes whose TypeScript loads on the spot.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
