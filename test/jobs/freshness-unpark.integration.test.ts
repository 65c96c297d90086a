/**
 * What a group explained is unparked when the group leaves the planner: its students parked by it and the
 * teachers parked by the groups come back within one interval, whether the reconciler deactivated the group or
 * it was forgotten (the upstream stopped knowing it). Others keep their plans.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { planAfterRefresh } from '../../src/jobs/freshness-plan.ts';
import { reconcile } from '../../src/jobs/schedule.ts';
import { forgetSource } from '../../src/jobs/term-starts.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { testContext } from '../support/service.ts';
import { REFERENCE_DATE } from './helpers.ts';

const HOUR = 3_600_000;
const INTERVAL = 30 * 60_000;
const clock = { now: REFERENCE_DATE.getTime() };
let ctx: ServiceContext;
let close: () => Promise<void>;

beforeEach(async () => {
  clock.now = REFERENCE_DATE.getTime();
  ({ context: ctx, close } = await testContext(
    { REFRESH_INTERVAL: '30m', REFRESH_MAX_WAIT: '4h', INACTIVE_AFTER: '1d' },
    { now: () => clock.now },
  ));
});
afterEach(async () => {
  await close();
});

/** A subscription id of the stored length (22 characters). */
const subscription = (n: number) => `student${String(n).padStart(15, '0')}`;

/**
 * Group 5 with two students parked by it, a teacher parked by the groups, and a student of group 6 parked by
 * it; every one of them refreshed now, and active.
 */
async function parkedAround(): Promise<{ students: string[]; other: string }> {
  const students = [subscription(1), subscription(2)];
  for (const id of students) await ctx.relations.recordMember(id, 5);
  await ctx.relations.recordMember(subscription(3), 6);
  const plans: [string, string | undefined][] = [
    ['group:5', undefined],
    ['group:6', undefined],
    ['employee:9', 'groups'],
    ...students.map((id): [string, string] => [`personal:${id}`, 'group:5']),
    [`personal:${subscription(3)}`, 'group:6'],
  ];
  for (const [source] of plans) await ctx.registry.activate(source, clock.now);
  await reconcile(ctx);
  for (const [source, parkedBy] of plans)
    await planAfterRefresh(ctx, source, clock.now, { changed: false, parkedBy, relatedQueued: 0, classSoon: false });
  return { students: students.map((id) => `personal:${id}`), other: `personal:${subscription(3)}` };
}

async function plan(source: string) {
  const [planned] = await ctx.freshness.planned([source]);
  if (planned === undefined) throw new Error(`${source} is not planned`);
  return planned;
}

describe('a group leaving the planner', () => {
  it('unparks its students and the teachers parked by the groups when the reconciler deactivates it', async () => {
    const { students, other } = await parkedAround();
    expect((await plan(students[0] ?? '')).deadline).toBe(clock.now + 4 * HOUR);
    expect(await ctx.freshness.parkedCount()).toBe(4);
    // Two hours on, the group is deactivated (the others are kept active by being asked for).
    clock.now += 2 * HOUR;
    for (const source of ['group:6', 'employee:9', ...students, other]) await ctx.registry.touch(source, clock.now);
    await ctx.registry.deactivate('group:5');
    await reconcile(ctx);
    for (const source of [...students, 'employee:9']) {
      const planned = await plan(source);
      expect(planned.state?.parkedBy, source).toBeUndefined();
      expect(planned.deadline, source).toBeLessThanOrEqual(clock.now + INTERVAL);
      expect(planned.next, source).toBeLessThanOrEqual(clock.now + INTERVAL);
    }
    // Group 6's student is explained by a group still refreshed: left parked.
    expect((await plan(other)).state?.parkedBy).toBe('group:6');
    expect(await ctx.freshness.parkedCount()).toBe(1);
  });

  it('unparks its students when it is forgotten, never moving a plan later', async () => {
    const { students } = await parkedAround();
    clock.now += 2 * HOUR;
    // One student came due sooner already: that stays.
    await ctx.redis.zadd(ctx.keys.freshnessDeadline, clock.now + 60_000, students[1] ?? '');
    await forgetSource(ctx, 'group:5', ctx.logger);
    const [first, second] = await Promise.all(students.map(plan));
    expect(first?.state?.parkedBy).toBeUndefined();
    expect(first?.deadline).toBeLessThanOrEqual(clock.now + INTERVAL);
    expect(second?.deadline).toBe(clock.now + 60_000);
  });
});
