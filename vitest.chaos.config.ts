import { defineConfig } from 'vitest/config';

/**
 * The chaos suite (`npm run chaos`): scenarios in `test/chaos/*.chaos.test.ts`, each against its own real
 * processes on loopback (redis-server, simulator, fake Google, `api` and `worker` children). One file at a
 * time, since each scenario starts half a dozen processes on a small machine; every scenario prints a
 * `CHAOS <name>: …` line with its figures (docs/RELIABILITY.md). Not part of `npm test`.
 */
export default defineConfig({
  test: {
    include: ['test/chaos/**/*.chaos.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 240_000,
    hookTimeout: 120_000,
    disableConsoleIntercept: true,
  },
});
