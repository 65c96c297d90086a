/**
 * The reconciler and the freshness planner on the run's Redis: switching REFRESH_POLICY both ways (and the one
 * warning a reconcile gives when it finds the other policy's work, which a mixed deployment repeats every
 * minute), and a source whose first refresh failed, planned by the reconciler within an interval of its
 * activation however late the reconcile runs.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { tickSchedulerId } from '../../src/jobs/contract.ts';
import { deadlineLead, FreshnessPacer } from '../../src/jobs/freshness-pacer.ts';
import { planAfterRefresh } from '../../src/jobs/freshness-plan.ts';
import { reconcile } from '../../src/jobs/schedule.ts';
import { createLogger } from '../../src/logger.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { spreadUnit } from '../../src/store/freshness-store.ts';
import { sourceToken } from '../../src/timetable/source.ts';
import { testContext } from '../support/service.ts';
import { REFERENCE_DATE } from './helpers.ts';

const MINUTE = 60_000;
const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** A context whose warnings are collected in `warnings`. */
async function context(env: Record<string, string>, now: () => number) {
  const warnings: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n'))
        if (line.trim() !== '') warnings.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = createLogger({ level: 'warn', pretty: false, destination });
  const { context: ctx, close } = await testContext(env, { now, logger });
  cleanup.push(close);
  return { ctx, warnings };
}

/** The same process's dependencies under the other policy (another process of a mixed deployment). */
function withPolicy(ctx: ServiceContext, refreshPolicy: 'adaptive' | 'fixed'): ServiceContext {
  return { ...ctx, config: { ...ctx.config, refreshPolicy } };
}

async function tickIds(ctx: ServiceContext): Promise<string[]> {
  const schedulers = await ctx.queues.schedule.getJobSchedulers(0, -1, true);
  return schedulers.map((scheduler) => scheduler.key).filter((key) => key.startsWith(tickSchedulerId('')));
}

async function plannedSources(ctx: ServiceContext): Promise<string[]> {
  return (await ctx.redis.zrange(ctx.keys.freshnessDeadline, '0', '-1')).sort();
}

/** Log lines that warn about the other policy's work. */
const policyWarnings = (lines: readonly Record<string, unknown>[]) =>
  lines.filter((line) => String(line.msg).includes('REFRESH_POLICY'));

describe('switching REFRESH_POLICY', () => {
  it('adaptive → fixed → adaptive: ticks and plans swap within one reconcile each way, with one warning each', async () => {
    const clock = { now: REFERENCE_DATE.getTime() };
    const { ctx, warnings } = await context({ REFRESH_INTERVAL: '30m' }, () => clock.now);
    const student = 'personal:AAAAAAAAAAAAAAAAAAAAAA';
    const sources = ['group:1', 'group:2', 'employee:3', student];
    for (const source of sources) await ctx.registry.activate(source, clock.now);
    expect(await reconcile(ctx)).toMatchObject({ created: 0, removed: 0, planned: { added: 4, removed: 0 } });
    expect(policyWarnings(warnings)).toEqual([]);
    // The student's refresh parked it by its group; the group's students are recorded.
    await ctx.relations.recordMember('AAAAAAAAAAAAAAAAAAAAAA', 1);
    await planAfterRefresh(ctx, student, clock.now, {
      changed: false,
      parkedBy: 'group:1',
      relatedQueued: 0,
      classSoon: false,
    });
    expect(await ctx.freshness.parkedCount()).toBe(1);

    // Switched to fixed: every active source gets its tick, the planner's keys go; what was learnt of the
    // relations stays (docs/operations.md says so), unused.
    const fixed = withPolicy(ctx, 'fixed');
    clock.now += MINUTE;
    expect(await reconcile(fixed)).toMatchObject({ created: 4, removed: 0, planned: { added: 0, removed: 4 } });
    expect((await tickIds(ctx)).sort()).toEqual(sources.map((source) => tickSchedulerId(sourceToken(source))).sort());
    const plannerKeys = [ctx.keys.freshnessNext, ctx.keys.freshnessDeadline, ctx.keys.freshnessState];
    expect(await ctx.redis.exists(...plannerKeys, ctx.keys.freshnessParked)).toBe(0);
    expect(await ctx.relations.members([1])).toEqual([student]);
    // One warning for the reconcile, not one per source, naming the setting.
    expect(policyWarnings(warnings)).toHaveLength(1);
    expect(policyWarnings(warnings)[0]).toMatchObject({ policy: 'fixed', foundPlanned: 4, foundTicks: 0 });
    // Nothing of the other policy left: reconciling again changes nothing and warns no more.
    clock.now += MINUTE;
    await ctx.registry.activate('group:5', clock.now);
    expect(await reconcile(fixed)).toMatchObject({ created: 1, removed: 0, planned: { added: 0, removed: 0 } });
    expect(policyWarnings(warnings)).toHaveLength(1);

    // Back to adaptive: the ticks go, the planner holds every active source again.
    clock.now += MINUTE;
    expect(await reconcile(ctx)).toMatchObject({ created: 0, removed: 5, planned: { added: 5, removed: 0 } });
    expect(await tickIds(ctx)).toEqual([]);
    expect(await plannedSources(ctx)).toEqual([...sources, 'group:5'].sort());
    expect(policyWarnings(warnings)).toHaveLength(2);
    expect(policyWarnings(warnings)[1]).toMatchObject({ policy: 'adaptive', foundTicks: 5, foundPlanned: 0 });
    clock.now += MINUTE;
    expect(await reconcile(ctx)).toMatchObject({ created: 0, removed: 0, planned: { added: 0, removed: 0 } });
    expect(policyWarnings(warnings)).toHaveLength(2);
  });

  it('warns at every reconcile while processes run different policies, once per reconcile', async () => {
    const clock = { now: REFERENCE_DATE.getTime() };
    const { ctx, warnings } = await context({ REFRESH_INTERVAL: '30m' }, () => clock.now);
    for (let index = 1; index <= 20; index += 1) await ctx.registry.activate(`group:${index}`, clock.now);
    const fixed = withPolicy(ctx, 'fixed');
    await reconcile(ctx);
    for (const process of [fixed, ctx, fixed, ctx]) {
      clock.now += MINUTE;
      await reconcile(process);
    }
    expect(policyWarnings(warnings).map((line) => line.policy)).toEqual(['fixed', 'adaptive', 'fixed', 'adaptive']);
  });
});

describe('a source new to the planner', () => {
  it('whose first refresh failed comes due within REFRESH_INTERVAL of its activation, however late the reconcile', async () => {
    const clock = { now: REFERENCE_DATE.getTime() };
    const interval = 10 * MINUTE;
    const { ctx } = await context({ REFRESH_INTERVAL: '10m', UPSTREAM_RATE_LIMIT: '100' }, () => clock.now);
    // Asked for at t0, their first fetches failed (nothing planned them); the reconcile runs 5 minutes late.
    const activated = clock.now;
    const fresh = Array.from({ length: 30 }, (_, index) => `group:${index + 1}`);
    for (const source of fresh) await ctx.registry.activate(source, activated);
    // Others active for long (the planner is new to them: a switch from the fixed policy) spread over an interval.
    const old = Array.from({ length: 30 }, (_, index) => `employee:${index + 1}`);
    for (const source of old) await ctx.registry.activate(source, activated - 3 * interval);
    clock.now += 5 * MINUTE;
    const reconciled = clock.now;
    await reconcile(ctx);
    const plans = await ctx.freshness.planned([...fresh, ...old]);
    const deadlines = new Map([...fresh, ...old].map((source, index) => [source, plans[index]?.deadline ?? 0]));
    for (const source of fresh) {
      expect(deadlines.get(source), source).toBeLessThanOrEqual(activated + interval);
      // Spread still, where the spread comes first.
      const spread = Math.round(reconciled + spreadUnit(source) * interval);
      expect(deadlines.get(source), source).toBe(Math.min(spread, activated + interval));
    }
    // Without their activation counting, some would come due later (the check above could fail).
    expect(fresh.some((source) => reconciled + spreadUnit(source) * interval > activated + interval)).toBe(true);
    for (const source of old) expect(deadlines.get(source), source).toBeGreaterThanOrEqual(reconciled);
    expect(Math.max(...old.map((source) => deadlines.get(source) ?? 0))).toBeGreaterThan(reconciled + interval / 2);

    // The pacer queues each fresh one by then (nobody runs the queue: the deadlines alone get them queued).
    const pacer = new FreshnessPacer(ctx);
    const queuedAt = new Map<string, number>();
    while (clock.now < activated + interval) {
      clock.now += 1_000;
      await pacer.step();
      const jobs = await ctx.queues.refresh.getJobs(['prioritized', 'waiting']);
      for (const job of jobs) if (!queuedAt.has(job.data.source)) queuedAt.set(job.data.source, clock.now);
    }
    for (const source of fresh) {
      expect(queuedAt.get(source), source).toBeDefined();
      expect(queuedAt.get(source) ?? 0, source).toBeLessThanOrEqual(
        activated + interval - deadlineLead(ctx.config) + 1_000,
      );
    }
  });
});
