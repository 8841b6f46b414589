import { defineConfig } from 'vitest/config';

// Benchmarks that need the e2e harness (a real kube-apiserver): run with
// `npx vitest run --config bench/vitest.config.ts`. They print figures and assert nothing.
export default defineConfig({
  test: {
    include: ['bench/**/*.bench.ts'],
    testTimeout: 600_000,
    hookTimeout: 300_000,
    pool: 'forks',
  },
});
