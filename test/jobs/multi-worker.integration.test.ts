import type { ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { enqueueRefresh } from '../../src/jobs/queues.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { testContext } from '../support/service.ts';
import { startWorkerProcess, type WorkerProcess } from '../support/spawn-worker.ts';
import { type SimControl, simControl } from '../upstream/sim-control.ts';
import { REFERENCE_DATE, waitForJob } from './helpers.ts';

let sim: Awaited<ReturnType<typeof startSimulator>>;
let control: SimControl;
let ctx: ServiceContext;
let closeContext: () => Promise<void>;
const children: ChildProcess[] = [];

/** Starts a worker process on the test's prefix and resolves once it takes jobs. */
function startWorker(): Promise<WorkerProcess> {
  const env = {
    REDIS_PREFIX: ctx.config.redisPrefix,
    UNIVERSITY_API_URL: sim.url,
    WORKER_CONCURRENCY: '4',
    UPSTREAM_RATE_LIMIT: '200',
  };
  return startWorkerProcess(env, (child) => children.push(child));
}

beforeAll(async () => {
  sim = await startSimulator({ port: 0, seed: 3, referenceDate: REFERENCE_DATE, groups: 20, employees: 20, users: 2 });
  control = simControl(sim.url);
  ({ context: ctx, close: closeContext } = await testContext({ UNIVERSITY_API_URL: sim.url }));
});
afterEach(async () => {
  await control.clearFaults();
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
afterAll(async () => {
  await closeContext?.();
  await sim?.close();
});

async function sources(): Promise<string[]> {
  const groups = (await control.groups()).map((group) => `group:${group.id}`);
  const employees = (await control.employees()).map((employee) => `employee:${employee.id}`);
  return [...groups, ...employees];
}

describe('several worker processes on one Redis', () => {
  it('fetch each source exactly once per cycle, sharing the work, however often it is asked for', async () => {
    const [a, b] = await Promise.all([startWorker(), startWorker()]);
    const all = await sources();
    for (let cycle = 0; cycle < 2; cycle += 1) {
      await control.clearStats();
      // Every source asked for three times at once, as many subscribers and an admin might.
      const ids = await Promise.all(
        all.flatMap((source) =>
          [0, 1, 2].map(() => enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'schedule', now: Date.now() })),
        ),
      );
      const unique = [...new Set(ids)];
      expect(unique.length).toBe(all.length);
      const jobs = await Promise.all(unique.map((id) => waitForJob(ctx, id, 30_000)));
      expect(jobs.every((job) => job.state === 'completed')).toBe(true);
      const stats = await control.stats();
      expect(stats.total).toBe(all.length);
      const processors = new Set(
        await Promise.all(unique.map(async (id) => (await ctx.queues.refresh.getJob(id))?.processedBy)),
      );
      expect(processors).toEqual(new Set([a.id, b.id]));
    }
  });

  it('a worker killed with SIGKILL mid-job leaves its job to another worker, which completes it', async () => {
    const [source] = await sources();
    if (!source) throw new Error('no source');
    const first = await startWorker();
    await control.fault({ endpoint: '*', kind: 'latency', latencyMs: 3_000, times: 1 });
    const id = await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'resync', now: Date.now() });
    await waitUntil(
      async () => (await ctx.queues.refresh.getJobState(id)) === 'active',
      'the job to start on the first worker',
      10_000,
    );
    expect((await ctx.queues.refresh.getJob(id))?.processedBy).toBe(first.id);
    first.child.kill('SIGKILL');
    await new Promise((done) => first.child.once('exit', done));

    const second = await startWorker();
    const job = await waitForJob(ctx, id, 20_000);
    expect(job.state).toBe('completed');
    expect((await ctx.queues.refresh.getJob(id))?.processedBy).toBe(second.id);
    expect(await ctx.feeds.exists(source)).toBe(true);
    expect(await ctx.registry.get(source)).toMatchObject({ status: 'ok' });
  });
});
