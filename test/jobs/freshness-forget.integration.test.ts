/**
 * A source that is gone leaves nothing the freshness planner learnt about it: a deleted subscription's student
 * leaves their group's students (to whom related refreshes go) and their plan, and a group the upstream does not
 * know loses its views, entries and names, and its plan.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueRefresh } from '../../src/jobs/queues.ts';
import { deleteSubscription } from '../../src/subscriptions/personal.ts';
import { entry } from '../timetable/fixtures.ts';
import { waitForJob } from './helpers.ts';
import { type RelatedPipeline, type SimUser, startRelatedPipeline } from './related-pipeline.ts';

let pipeline: RelatedPipeline;

beforeAll(async () => {
  pipeline = await startRelatedPipeline();
}, 60_000);

afterAll(async () => {
  await pipeline?.close();
});

/** Every `key field` of the relations store whose field or value contains `text`. */
async function relationsNaming(text: string): Promise<string[]> {
  const { redis, config } = pipeline.ctx;
  const found: string[] = [];
  for (const key of await redis.keys(`${config.redisPrefix}:relations:*`))
    for (const [field, value] of Object.entries(await redis.hgetall(key)))
      if (field.includes(text) || value.includes(text)) found.push(`${key} ${field}`);
  return found;
}

/** Which of the planner's records name `source`. */
async function plansNaming(source: string): Promise<string[]> {
  const { redis, keys } = pipeline.ctx;
  const [next, deadline, state, parked] = await Promise.all([
    redis.zscore(keys.freshnessNext, source),
    redis.zscore(keys.freshnessDeadline, source),
    redis.hget(keys.freshnessState, source),
    redis.sismember(keys.freshnessParked, source),
  ]);
  return [
    ...(next === null ? [] : ['next']),
    ...(deadline === null ? [] : ['deadline']),
    ...(state === null ? [] : ['state']),
    ...(parked === 0 ? [] : ['parked']),
  ];
}

describe('a deleted subscription', () => {
  it('leaves its group’s students and the planner; its classmates stay', async () => {
    const { ctx, users } = pipeline;
    const group = pipeline.groups.find(
      (candidate) => users.filter((user) => user.groupId === candidate.id).length >= 2,
    );
    if (!group) throw new Error('no group with two students');
    const [leaving, staying] = users.filter((user) => user.groupId === group.id) as [SimUser, SimUser];
    await pipeline.refresh(`group:${group.id}`);
    const source = await pipeline.subscribe(leaving);
    const classmate = await pipeline.subscribe(staying);
    await pipeline.drain();
    const id = source.slice('personal:'.length);
    // Before: the student is one of the group's, and planned (parked by the group: equal to its view).
    expect((await ctx.relations.members([group.id])).sort()).toEqual([source, classmate].sort());
    expect(await relationsNaming(id)).not.toEqual([]);
    expect(await plansNaming(source)).toEqual(['next', 'deadline', 'state', 'parked']);

    const subscription = await ctx.subscriptions.get(id);
    if (!subscription) throw new Error('the subscription is gone already');
    await deleteSubscription(ctx, subscription);

    expect(await relationsNaming(id)).toEqual([]);
    expect(await plansNaming(source)).toEqual([]);
    expect(await ctx.relations.members([group.id])).toEqual([classmate]);
    expect(await plansNaming(classmate)).not.toEqual([]);
  });
});

describe('a group the upstream does not know', () => {
  it('is forgotten with its views, entries, names and plan; other groups keep theirs', async () => {
    const { ctx, clock } = pipeline;
    const known = pipeline.groups[0];
    if (!known) throw new Error('the simulator has no group');
    await pipeline.refresh(`group:${known.id}`);
    const unknownId = 999_001;
    const source = `group:${unknownId}`;
    // What a refresh and a student's profile could have taught of it before the university stopped knowing it.
    await ctx.relations.recordGroup(unknownId, 'ЗЗ-991', [entry({ id: 1, groups: ['ЗЗ-991'] })]);
    await ctx.relations.learnGroupName('ЗЗ-991 (профиль)', unknownId);
    await ctx.freshness.plan(source, {
      next: clock.now + 60_000,
      deadline: clock.now + 60_000,
      state: { lastRefresh: clock.now, changes: 0, observedMs: 0, weight: 1 },
    });
    expect(await ctx.relations.groupsNamed(['ЗЗ-991', 'ЗЗ-991 (профиль)'])).toEqual(
      new Map([
        ['ЗЗ-991', unknownId],
        ['ЗЗ-991 (профиль)', unknownId],
      ]),
    );
    const knownViews = await ctx.relations.groupViews(known.id);
    expect(knownViews).toBeDefined();

    const id = await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'resync', now: clock.now });
    expect((await waitForJob(ctx, id)).state).toBe('failed');

    expect(await ctx.relations.groupViews(unknownId)).toBeUndefined();
    expect(await ctx.relations.groupEntrySets([unknownId])).toEqual([undefined]);
    expect(await ctx.relations.groupsNamed(['ЗЗ-991', 'ЗЗ-991 (профиль)'])).toEqual(new Map());
    expect(await plansNaming(source)).toEqual([]);
    expect(await ctx.relations.groupViews(known.id)).toEqual(knownViews);
    expect(await ctx.relations.groupsNamed([known.name])).toEqual(new Map([[known.name, known.id]]));
    expect((await ctx.relations.groupEntrySets([known.id]))[0]).toBeDefined();
  });
});
