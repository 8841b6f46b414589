// Lint rules the whole workspace shares: type-aware, no `any`, no floating promises,
// type-only imports spelled as such.
import js from '@eslint/js';
import vitest from '@vitest/eslint-plugin';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'bench/.bench-out/**'] },
  js.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['vitest.config.ts'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/require-await': 'off',
    },
  },
  // Libraries and built-ins a proxy thread loads only when it needs them (../api/src/lazy-module.ts,
  // ../kit/src/node-http.ts): an import here would load them in every thread of every process.
  {
    files: ['packages/*/src/**/*.ts'],
    ignores: ['packages/testkit/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            { name: 'node:http', allowTypeImports: true, message: "an import of node:http loads Node's bundled fetch in every thread: take its values from @tollgate/kit/node-http" },
            { name: 'http', allowTypeImports: true, message: "use node:http's types, and @tollgate/kit/node-http for its values" },
            { name: 'yaml', allowTypeImports: true, message: "take the YAML library from @tollgate/api's `yaml()`, loaded on first use" },
            { name: 'ajv', allowTypeImports: true, message: 'compile schemas with @tollgate/api\'s compile(), which loads ajv on first use' },
            { name: '@datadog/pprof', allowTypeImports: true, message: 'the profiler is loaded by the admin server that serves it (kit/src/admin/pprof.ts)' },
          ],
        },
      ],
    },
  },
  // Tests say what they check: every test asserts, none is disabled or focused, no assertion
  // hides in a branch that may not run or outside a test.
  {
    files: ['packages/*/test/**/*.ts', 'packages/*/test/**/*.tsx', 'e2e/**/*.test.ts'],
    plugins: { vitest },
    rules: {
      'vitest/expect-expect': 'error',
      'vitest/no-disabled-tests': 'error',
      'vitest/no-focused-tests': 'error',
      'vitest/no-conditional-expect': 'error',
      'vitest/no-standalone-expect': 'error',
      'vitest/no-identical-title': 'error',
      // expect(value, message) is vitest's way of naming what failed.
      'vitest/valid-expect': ['error', { maxArgs: 2 }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', fetch: 'readonly', Buffer: 'readonly' },
    },
  },
);
