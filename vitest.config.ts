import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Two projects. `unit`: pure code (no Redis, no child process, no server), a few seconds in all
 * (`npm run test:unit`). `integration`: the suites named `*.integration.test.ts`, which need a real Redis
 * (started once for the run by the global setup), child processes or servers on loopback.
 */
export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts', 'bench/**/*.test.ts', 'src/**/*.test.ts'],
          // Pure suites share no state worth isolating: one module graph in worker threads runs them in about
          // 4 s instead of 11 s (a fresh process and import per file).
          pool: 'threads',
          isolate: false,
          exclude: [...configDefaults.exclude, '**/*.integration.test.ts', '**/*.chaos.test.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.integration.test.ts', 'bench/**/*.integration.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 20_000,
          hookTimeout: 30_000,
          pool: 'forks',
        },
      },
    ],
  },
});
