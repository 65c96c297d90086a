import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { BUCKETS } from '../../src/store/source-relations.ts';
import { entryDigest, hasDigest } from '../../src/timetable/entry-digest.ts';
import { testContext } from '../support/service.ts';
import { entry } from '../timetable/fixtures.ts';

let ctx: ServiceContext;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ context: ctx, close } = await testContext());
});
afterAll(async () => {
  await close?.();
});

const student = (n: number) => `student${String(n).padStart(15, '0')}`;

describe('SourceRelations', () => {
  it('moves a student between groups, keeping each group list exact', async () => {
    const { relations } = ctx;
    const [a, b, c] = [student(1), student(2), student(3)];
    await relations.recordMember(a, 10);
    await relations.recordMember(b, 10);
    await relations.recordMember(c, 11);
    expect((await relations.members([10])).sort()).toEqual([`personal:${a}`, `personal:${b}`]);
    await relations.recordMember(a, 11);
    await relations.recordMember(a, 11);
    expect(await relations.members([10])).toEqual([`personal:${b}`]);
    expect((await relations.members([11])).sort()).toEqual([`personal:${a}`, `personal:${c}`]);
    await relations.recordMember(b, undefined);
    expect(await relations.members([10])).toEqual([]);
    expect((await relations.members([10, 11, 12])).length).toBe(2);
  });

  it('finds groups by name and their entries by digest', async () => {
    const { relations } = ctx;
    const lecture = entry({ id: 1, groups: ['ИВТ-21', 'ИВТ-22'] });
    await relations.recordGroup(21, 'ИВТ-21', [lecture, entry({ id: 2 })]);
    await relations.learnGroupName('ИВТ-21', 99);
    await relations.learnGroupName('ИВТ-22', 22);
    expect(await relations.groupsNamed(['ИВТ-22', 'ИВТ-21', 'ИВТ-21', 'нет'])).toEqual(
      new Map([
        ['ИВТ-22', 22],
        ['ИВТ-21', 21],
      ]),
    );
    const [set, none] = await relations.groupEntrySets([21, 22]);
    expect(none).toBeUndefined();
    expect(hasDigest(set as Buffer, entryDigest(lecture))).toBe(true);
    expect(hasDigest(set as Buffer, entryDigest(entry({ id: 1, room: '1' })))).toBe(false);
    expect((await relations.groupViews(21))?.length).toBe(36);
  });

  it('lists the students of each class of their own, and forgets a student whole', async () => {
    const { relations } = ctx;
    const [a, b] = [student(5), student(6)];
    await relations.recordMember(a, 30);
    await relations.recordMember(b, 30);
    await relations.recordElectives(a, [502, 501, 501]);
    await relations.recordElectives(b, [502]);
    expect((await relations.electiveStudents([502, 503])).sort()).toEqual([`personal:${a}`, `personal:${b}`]);
    await relations.recordElectives(a, [502, 504]);
    expect(await relations.electiveStudents([501])).toEqual([]);
    expect(await relations.electiveStudents([504, 504])).toEqual([`personal:${a}`]);

    await relations.forget(`personal:${a}`);
    expect(await relations.electiveStudents([501, 502, 504])).toEqual([`personal:${b}`]);
    expect(await relations.members([30])).toEqual([`personal:${b}`]);
    for (const key of await ctx.redis.keys(`${ctx.config.redisPrefix}:relations:*`))
      for (const [field, value] of Object.entries(await ctx.redis.hgetall(key)))
        expect(`${field} ${value}`, key).not.toContain(a);
    await relations.recordElectives(b, []);
    expect(await relations.electiveStudents([502])).toEqual([]);
    expect(await ctx.redis.exists(ctx.keys.relations('elective-students'))).toBe(0);
  });

  it('keeps the group of each student in small hashes', async () => {
    const { relations } = ctx;
    await relations.recordMember(student(4), 21);
    const buckets = await ctx.redis.keys(`${ctx.config.redisPrefix}:relations:member-of:*`);
    expect(buckets.length).toBeGreaterThan(0);
    for (const bucket of buckets) {
      expect(Number(bucket.split(':').at(-1))).toBeLessThan(BUCKETS);
      expect(await ctx.redis.object('ENCODING', bucket)).toBe('listpack');
    }
  });
});
