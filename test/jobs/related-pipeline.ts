/**
 * Set-up of the freshness learning tests: a simulator with enough students to share groups, a context on the
 * run's Redis under a unique prefix, one process's workers, and helpers to subscribe students and wait until
 * the refresh queue has run everything queued (related refreshes included).
 */
import { inject } from 'vitest';
import { enqueueRefresh } from '../../src/jobs/queues.ts';
import { startWorkers } from '../../src/jobs/workers.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import type { TimetableEntry } from '../../src/timetable/types.ts';
import { testContext } from '../support/service.ts';
import { icsOf } from '../support/stored-feed.ts';
import { simControl } from '../upstream/sim-control.ts';
import { REFERENCE_DATE, readEvents, waitForJob } from './helpers.ts';

/** A simulator user as `/_sim/users` lists it. */
export interface SimUser {
  id: number;
  token: string;
  groupId: number;
  subgroup: 1 | 2;
}

/**
 * Starts the pipeline: 12 groups, 24 employees and 60 students (about five a group). `workerContext` may change
 * what the workers run with (a store that fails, to see that the refresh does not).
 */
export async function startRelatedPipeline(workerContext: (ctx: ServiceContext) => ServiceContext = (ctx) => ctx) {
  const simulator = await startSimulator({
    port: 0,
    seed: 7,
    referenceDate: REFERENCE_DATE,
    groups: 12,
    employees: 24,
    users: 60,
  });
  const clock = { now: REFERENCE_DATE.getTime() };
  const { context: ctx, close } = await testContext(
    { UNIVERSITY_API_URL: simulator.url, REFRESH_POLICY: 'adaptive' },
    { now: () => clock.now },
  );
  const workers = await startWorkers(workerContext(ctx), inject('redisUrl'), {
    lockDurationMs: 5_000,
    stalledIntervalMs: 1_000,
  });
  const sim = simControl(simulator.url);
  const groups = await sim.groups();
  const users = ((await sim.raw('/_sim/users')).body as { users: SimUser[] }).users;

  /** Runs a refresh as an admin's resync would, and waits for it. */
  const refresh = async (source: string) => {
    const id = await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'resync', now: clock.now });
    const job = await waitForJob(ctx, id);
    if (job.state !== 'completed') throw new Error(`refresh of ${source} ${job.state}: ${job.failedReason}`);
    return job;
  };

  return {
    ctx,
    sim,
    clock,
    groups,
    users,
    refresh,
    /** Subscribes a student (active, with the group the profile names) and fetches their timetable once. */
    subscribe: async (user: SimUser): Promise<string> => {
      const group = groups.find((candidate) => candidate.id === user.groupId);
      const { subscription } = await ctx.subscriptions.create({
        credential: user.token,
        name: `Студент ${user.id}`,
        upstreamUserId: user.id,
        ...(group ? { group: { id: group.id, name: group.name } } : {}),
        now: clock.now,
      });
      await ctx.registry.activate(subscription.source, clock.now);
      await refresh(subscription.source);
      return subscription.source;
    },
    /** Waits until no refresh is queued or running (polling the queue's counts). */
    drain: async (timeoutMs = 20_000): Promise<void> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const counts = await ctx.queues.refresh.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
        if (Object.values(counts).every((count) => count === 0)) return;
        if (Date.now() > deadline) throw new Error(`refresh queue not drained: ${JSON.stringify(counts)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    /** The locations the stored feed of `source` shows for an entry's occurrences. */
    locations: async (source: string, entryId: number): Promise<string[]> => {
      const feed = await ctx.feeds.get(source);
      if (!feed) throw new Error(`no feed for ${source}`);
      const events = readEvents(icsOf(feed)).filter((event) => event.uid.startsWith(`${entryId}-`));
      const future = events.filter((event) => event.start > new Date(clock.now).toISOString());
      return [...new Set(future.map((event) => event.location))];
    },
    /** The group's current timetable as the university sends it. */
    groupEntries: async (groupId: number): Promise<TimetableEntry[]> =>
      (await ctx.upstream.groupSchedule(groupId)).entries,
    close: async () => {
      await workers.close();
      await close();
      await simulator.close();
    },
  };
}

/** The pipeline of {@link startRelatedPipeline}. */
export type RelatedPipeline = Awaited<ReturnType<typeof startRelatedPipeline>>;
