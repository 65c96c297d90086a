import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RECONCILE_SCHEDULER_ID, SCHEDULE_JOB, tickSchedulerId } from '../../src/jobs/contract.ts';
import { intervalFor, reconcile, scheduleProcessor } from '../../src/jobs/schedule.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { testContext } from '../support/service.ts';

let ctx: ServiceContext;
let close: () => Promise<void>;
const clock = { now: Date.UTC(2025, 9, 1) };

beforeEach(async () => {
  ({ context: ctx, close } = await testContext(
    { REFRESH_INTERVAL: '30m', INACTIVE_AFTER: '30d', REFRESH_POLICY: 'fixed' },
    { now: () => clock.now },
  ));
});
afterEach(async () => {
  await close();
});

async function tickSchedulers(): Promise<Map<string, number | undefined>> {
  const schedulers = await ctx.queues.schedule.getJobSchedulers(0, -1, true);
  return new Map(
    schedulers
      .filter((scheduler) => scheduler.key !== RECONCILE_SCHEDULER_ID)
      .map((scheduler) => [scheduler.key, scheduler.every]),
  );
}

describe('the reconciler', () => {
  it('spreads sources over REFRESH_INTERVAL ±25%, the same interval for a source every time', () => {
    const intervals = Array.from({ length: 500 }, (_, index) => intervalFor(`group:${index + 1}`, 1_800_000));
    expect(Math.min(...intervals)).toBeGreaterThanOrEqual(1_350_000);
    expect(Math.max(...intervals)).toBeLessThanOrEqual(2_250_000);
    expect(new Set(intervals).size).toBeGreaterThan(400);
    expect(intervalFor('group:7', 1_800_000)).toBe(intervalFor('group:7', 1_800_000));
  });

  it('gives every active source exactly one tick scheduler and removes those of inactive sources', async () => {
    for (const source of ['group:1', 'group:2', 'employee:3']) await ctx.registry.activate(source, clock.now);
    expect(await reconcile(ctx)).toMatchObject({ created: 3, removed: 0 });
    const schedulers = await tickSchedulers();
    expect([...schedulers.keys()].sort()).toEqual([
      tickSchedulerId('employee-3'),
      tickSchedulerId('group-1'),
      tickSchedulerId('group-2'),
    ]);
    expect(schedulers.get(tickSchedulerId('group-1'))).toBe(intervalFor('group:1', 1_800_000));

    // Reconciling again, or from two processes at once, changes nothing and creates no duplicates.
    const again = await Promise.all([reconcile(ctx), reconcile(ctx)]);
    expect(again.map((result) => result.created + result.updated + result.removed)).toEqual([0, 0]);
    expect((await tickSchedulers()).size).toBe(3);

    await ctx.registry.deactivate('group:2');
    expect(await reconcile(ctx)).toMatchObject({ removed: 1 });
    expect([...(await tickSchedulers()).keys()]).not.toContain(tickSchedulerId('group-2'));
  });

  it("gives a new source its first tick one interval from now by the wall clock, whatever the service's clock", async () => {
    // BullMQ runs schedulers by the wall clock; this service's clock is set to a day long past.
    expect(clock.now).toBeLessThan(Date.now());
    const before = Date.now();
    await ctx.registry.activate('group:8', clock.now);
    await reconcile(ctx);
    const scheduler = await ctx.queues.schedule.getJobScheduler(tickSchedulerId('group-8'));
    expect(scheduler?.next).toBeGreaterThanOrEqual(before + intervalFor('group:8', 1_800_000));
  });

  it('deactivates sources nobody requested for INACTIVE_AFTER, unless something pushes from them or someone is told their changes', async () => {
    await ctx.registry.activate('group:1', clock.now);
    await ctx.registry.activate('group:2', clock.now);
    await ctx.redis.sadd(ctx.keys.sourceTargets('group:2'), 'target-1');
    // Someone told of its changes (here a webhook) keeps a source refreshed as a push target does.
    await ctx.registry.activate('group:3', clock.now);
    await ctx.webhooks.create({
      source: 'group:3',
      url: 'https://example.org/hook',
      secret: 'whsec_dGVzdA==',
      now: clock.now,
    });
    clock.now += 29 * 86_400_000;
    await ctx.registry.touch('group:1', clock.now - 86_400_000);
    expect(await reconcile(ctx)).toMatchObject({ deactivated: 0 });
    clock.now += 2 * 86_400_000;
    expect(await reconcile(ctx)).toMatchObject({ deactivated: 0 });
    clock.now += 29 * 86_400_000;
    expect(await reconcile(ctx)).toMatchObject({ deactivated: 1 });
    expect(await ctx.registry.isActive('group:1')).toBe(false);
    expect(await ctx.registry.isActive('group:2')).toBe(true);
    expect(await ctx.registry.isActive('group:3')).toBe(true);
    expect((await ctx.registry.get('group:1'))?.active).toBe(false);
  });

  it('a tick asks for one deduplicated refresh, and none for a source that is no longer active', async () => {
    await ctx.registry.activate('group:5', clock.now);
    const processor = scheduleProcessor(ctx);
    const tick = { name: SCHEDULE_JOB.tick, data: { source: 'group:5' } } as Parameters<typeof processor>[0];
    const [first, second] = [await processor(tick), await processor(tick)] as { job: string }[];
    expect(first?.job).toBeDefined();
    expect(second?.job).toBe(first?.job);
    expect(await ctx.queues.refresh.getJobCounts('waiting', 'prioritized')).toEqual({ waiting: 0, prioritized: 1 });
    await ctx.registry.deactivate('group:5');
    expect(await processor(tick)).toEqual({ skipped: 'inactive' });
  });
});

describe('limiterFor', () => {
  it('keeps the configured rate in windows of about 100 ms, so that bursts stay small', async () => {
    const { limiterFor } = await import('../../src/jobs/workers.ts');
    for (const rate of [0.2, 0.5, 1, 7, 10, 15, 100, 250, 10_000]) {
      const { max, duration } = limiterFor(rate);
      expect(Number.isInteger(max) && max >= 1).toBe(true);
      expect(Math.abs((max * 1000) / duration - rate) / rate).toBeLessThan(0.01);
      if (rate >= 10) expect(duration).toBeLessThanOrEqual(150);
    }
    expect(limiterFor(100)).toEqual({ max: 10, duration: 100 });
  });
});
