import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';

// The test workers start with Node's on-disk cache of compiled modules (testkit/processes.ts gives it to the
// Node processes the tests start): less CPU for each of the ~300 process starts of a run on 2 cores.
process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'node-compile-cache');

/**
 * Integration suites that must have the machine to themselves, since a neighbour's load would fail them rather
 * than slow them down: the abuse suites bound a latency or a flood's cost in wall time; the CalDAV push budget
 * gives a job 1 s, which the connecting push must stay within. The others say why beside them.
 */
const ALONE = [
  'test/abuse/**/*.integration.test.ts',
  'test/caldav/push-budget.integration.test.ts',
  // A flood of 40 commands must get the burst's 3 replies and one «too often», answered at 1 s pace: on a busy
  // machine the queued commands were handled slowly enough for the chat's rate to allow a fifth.
  'test/notify/telegram-replies.integration.test.ts',
  // The worker's first push into Radicale, waited for 30 s behind a browser, did not end in time beside others.
  'test/web/caldav.browser.integration.test.ts',
  // A connect must end between 1.9 and 3.2 s with its last slow request hung up: beside others, that request
  // could be cut before the hostile server had read it, and then no hang-up was counted.
  'test/http/caldav-hostile-connect.integration.test.ts',
  // Counts its commands with MONITOR, which streams every client's commands: beside other files, lines came in
  // before ioredis had switched the connection to monitor mode, and it threw "Command queue state error".
  'test/jobs/freshness-view.integration.test.ts',
  // Pauses its own Redis under a 3 s poll lock and asserts the lock was never lost: beside other files, handling
  // the page after the pause took long enough on 2 cores for the lock to lapse.
  'test/notify/max-poller-faults.integration.test.ts',
];

/**
 * Three projects, run one after the other (`sequence.groupOrder`). `unit`: pure code (no Redis, no child
 * process, no server), a few seconds in all (`npm run test:unit`). `integration`: the suites named
 * `*.integration.test.ts`, which need a real Redis (started once for the run by the global setup), child
 * processes or servers on loopback; `integration-alone`: those of them listed in {@link ALONE}.
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
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.integration.test.ts', 'bench/**/*.integration.test.ts'],
          exclude: [...configDefaults.exclude, ...ALONE],
          globalSetup: ['test/support/global-setup.ts'],
          // Bounds for a test that hangs, not for one that is slow: four files share two cores, and a test that
          // starts several processes one after another takes three times as long as alone. A test's own bound on
          // a wait or a latency says what it promises.
          testTimeout: 60_000,
          hookTimeout: 60_000,
          pool: 'forks',
          // Most of these files wait (timers, child processes, loopback I/O) rather than compute: vitest's default
          // on 2 cores (cores - 1 = 1 worker) ran them one at a time, 13 minutes for 10 of CPU.
          maxWorkers: 4,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration-alone',
          include: ALONE,
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 20_000,
          hookTimeout: 30_000,
          pool: 'forks',
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
