/**
 * The admin table's view of the planner on the run's Redis: a page of sources costs the same few commands
 * however many rows it has (counted with MONITOR), and reads the refresh jobs as BullMQ itself does.
 */
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { QUEUE } from '../../src/jobs/contract.ts';
import { freshnessViews } from '../../src/jobs/freshness-view.ts';
import { enqueueRefresh } from '../../src/jobs/queues.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { sourceToken } from '../../src/timetable/source.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { testContext } from '../support/service.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** What BullMQ's own reading says: a waiting related or pacer refresh of each source, as the view shows it. */
async function waitingByBullmq(
  ctx: ServiceContext,
  sources: readonly string[],
): Promise<({ at: number; why: 'related' | 'queued' } | undefined)[]> {
  const waiting: ({ at: number; why: 'related' | 'queued' } | undefined)[] = [];
  for (const source of sources) {
    const id = await ctx.queues.refresh.getDeduplicationJobId(sourceToken(source));
    const job = id === null ? undefined : await ctx.queues.refresh.getJob(id);
    const waits = job !== undefined && !job.processedOn && !job.finishedOn;
    const why = job?.data.reason === 'related' ? 'related' : job?.data.reason === 'schedule' ? 'queued' : undefined;
    waiting.push(waits && why !== undefined ? { at: job.timestamp, why } : undefined);
  }
  return waiting;
}

/** Runs `action` and answers the commands Redis saw on keys under the context's prefix meanwhile. */
async function commandsDuring(ctx: ServiceContext, action: () => Promise<unknown>): Promise<string[][]> {
  const prefix = ctx.config.redisPrefix;
  const client = new Redis(ctx.config.redisUrl ?? '');
  const monitor = await client.monitor();
  cleanup.push(async () => monitor.disconnect());
  const seen: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (args.slice(1).some((arg) => arg.startsWith(prefix))) seen.push(args);
  });
  await action();
  // MONITOR reports asynchronously: a last command marks the end.
  const end = `${prefix}:end-of-view`;
  await ctx.redis.get(end);
  await waitUntil(() => seen.some((args) => args[1] === end), 'MONITOR to see the end', 3_000);
  return seen.filter((args) => args[1] !== end);
}

describe('the admin view of the planner', () => {
  it('reads a page of sources in a few commands, with the waiting refreshes BullMQ reads', async () => {
    const { context: ctx, close } = await testContext();
    cleanup.push(close);
    const now = ctx.now();
    const sources = Array.from({ length: 60 }, (_, index) => `group:${index + 1}`);
    const state = { lastRefresh: now, changes: 0, observedMs: 0, weight: 1 };
    for (const source of sources)
      await ctx.freshness.plan(source, { next: now + 60_000, deadline: now + 600_000, state });
    // group:8's related refresh has started (a worker took it): the plan shows, not `related`.
    await enqueueRefresh(ctx.queues, ctx.config, 'group:8', { reason: 'related', now, cause: 'group:99' });
    const blocking = new Redis(ctx.config.redisUrl ?? '', { maxRetriesPerRequest: null });
    const worker = new Worker(QUEUE.refresh, undefined, {
      connection: blocking,
      prefix: ctx.keys.queuePrefix,
      autorun: false,
    });
    cleanup.push(async () => {
      await worker.close(true);
      blocking.disconnect();
    });
    expect((await worker.getNextJob('test-token', { block: false }))?.data.source).toBe('group:8');
    // Related refreshes of five waiting; one the pacer queued (`queued`) and a first request (its plan shows).
    for (const source of sources.slice(0, 5))
      await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'related', now: now - 1_000, cause: 'group:99' });
    await enqueueRefresh(ctx.queues, ctx.config, 'group:6', { reason: 'schedule', now });
    await enqueueRefresh(ctx.queues, ctx.config, 'group:7', { reason: 'demand', now });
    // A deduplication id outliving its job.
    await ctx.redis.set(`${ctx.queues.refresh.keys.de}:${sourceToken('group:9')}`, 'group-9-gone');

    let views: Awaited<ReturnType<typeof freshnessViews>> = [];
    const commands = await commandsDuring(ctx, async () => {
      views = await freshnessViews(ctx, sources, now);
    });
    const expected = await waitingByBullmq(ctx, sources);
    expect(expected.filter((view) => view?.why === 'related')).toHaveLength(5);
    expect(expected[5]?.why).toBe('queued');
    views.forEach((view, index) => {
      const source = sources[index];
      expect(view.nextRefresh, source).toEqual(expected[index] ?? { at: now + 60_000, why: 'rotation' });
    });
    // The plans (three reads), the deduplication ids (one), and the nine jobs they name: not two per row.
    const names = commands.map((args) => args[0]?.toLowerCase());
    expect(names.filter((name) => name === 'mget')).toHaveLength(1);
    expect(commands.length).toBeLessThanOrEqual(3 + 1 + 9);
  });

  it('reads nothing of the queue for no sources', async () => {
    const { context: ctx, close } = await testContext();
    cleanup.push(close);
    expect(await freshnessViews(ctx, [], ctx.now())).toEqual([]);
  });
});
