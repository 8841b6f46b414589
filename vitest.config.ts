import { configDefaults, defineConfig } from 'vitest/config';

// Suites that use machine-wide resources (the e2e node, podman containers) run one file at a
// time in their own project; every other suite runs in parallel.
const machineSuites = ['e2e/node/**/*.test.ts', 'e2e/containers/**/*.test.ts'];

// Files run at once in the default project. Vitest's own default is one less than the CPUs,
// which is one file at a time on a 2-core machine; most suites spend their time waiting on the
// processes they start (kube-apiserver, proxies, CLIs), so two share two cores well. Three
// made the e2e suites' API servers miss their start deadlines on a machine loaded far beyond
// its cores (load average 40 on 2). TOLLGATE_TEST_WORKERS changes it.
const workers = Number(process.env.TOLLGATE_TEST_WORKERS) || 2;

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
          maxWorkers: workers,
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
