import { configDefaults, defineConfig } from 'vitest/config';

// Suites that use machine-wide resources (the e2e node, podman containers) run one file at a
// time in their own project; every other suite runs in parallel.
const machineSuites = ['e2e/node/**/*.test.ts', 'e2e/containers/**/*.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'default',
          include: ['packages/*/test/**/*.test.ts', 'e2e/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...machineSuites],
        },
      },
      {
        extends: true,
        test: {
          name: 'machine',
          include: machineSuites,
          fileParallelism: false,
          testTimeout: 180_000,
        },
      },
    ],
  },
});
