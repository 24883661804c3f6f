import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Most tests wait on sockets, child processes and Redis rather than the CPU: on a 2-CPU machine vitest's
    // default (one worker per CPU but one) runs them one file at a time.
    maxWorkers: 3,
  },
});
