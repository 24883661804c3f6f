import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Most tests wait on sockets, child processes and Redis rather than the CPU, but each file also starts its own
    // simulator, Prometheus or rollcall processes: on a 2-CPU machine three files at once starved the timing-bound
    // ones now and then, two keep the run well inside its budget.
    maxWorkers: 2,
  },
});
