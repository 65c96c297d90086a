/**
 * The worker's wall clock jumping 10 minutes (forwards, then in another run backwards) while it runs: job
 * delays, retry backoffs and scheduler ticks are computed from it, while Redis and the api keep the right
 * time. The feeds and calendars must still follow the upstream, without a burst of refreshes or pushes.
 */
import { resolve } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { Cleanup, sleep } from '../../testkit/processes.ts';
import { converge, googleErrors, outcome, storedCounts } from './support/checks.ts';
import { Rig } from './support/rig.ts';

const HOOK = resolve(import.meta.dirname, 'support/clock-offset.ts');
let cleanup: Cleanup;
afterEach(() => cleanup.run());

for (const [name, jumpMs] of [
  ['forwards', 600_000],
  ['backwards', -600_000],
] as const) {
  it(`worker clock jumps 10 minutes ${name}: feeds and calendars still follow the upstream, no burst`, async () => {
    cleanup = new Cleanup();
    const rig = await Rig.start(cleanup, {
      groups: 3,
      targets: 2,
      personal: 1,
      workerEnv: { NODE_OPTIONS: `--import=${HOOK}`, CHAOS_CLOCK_JUMP_MS: String(jumpMs) },
    });
    expect((await converge(rig)).verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
    const before = await storedCounts(rig);
    const counts = async () => ({
      refresh: (await rig.ctx.queues.refresh.getJobCounts('completed', 'failed')) as Record<string, number>,
      push: (await rig.ctx.queues.pushQueue('google').getJobCounts('completed', 'failed')) as Record<string, number>,
    });
    const startCounts = await counts();
    process.kill(rig.worker.pid, 'SIGUSR2');
    await sleep(500);
    await rig.dropOneClassEach();
    await rig.resyncAll();
    const jumpedAt = Date.now();
    const { verdict } = await converge(rig, 150_000);
    const exactMs = Date.now() - jumpedAt;
    // A minute of scheduler ticks after the jump: how many jobs ran (a burst would be many per source).
    await sleep(15_000);
    const endCounts = await counts();
    const ran = (queue: 'refresh' | 'push') =>
      (endCounts[queue].completed ?? 0) +
      (endCounts[queue].failed ?? 0) -
      (startCounts[queue].completed ?? 0) -
      (startCounts[queue].failed ?? 0);
    outcome(`clock-jump-${name}`, {
      exactAfterMs: exactMs,
      refreshJobsRun: ran('refresh'),
      pushJobsRun: ran('push'),
      sources: rig.allSources().length,
      duplicates: googleErrors(rig).duplicates,
      exact: verdict,
    });
    expect(rig.worker.stderr()).toContain('clock-offset: wall clock now off by');
    expect(verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
    expect(ran('refresh')).toBeLessThanOrEqual(3 * rig.allSources().length);
    expect(googleErrors(rig).duplicates).toBe(0);
    expect(await storedCounts(rig)).toEqual(before);
  });
}
