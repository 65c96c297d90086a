/**
 * Parking, learnt from what refreshes fetched: a student's timetable equal to their group's subgroup view is
 * explained by the group, a teacher whose classes all show in followed groups by those groups; anything that
 * differs keeps its own place, and a parked source that stops matching is unparked by its next refresh. An
 * elective of a student's own keeps them unparked, and its changes reach them through its teacher's refresh.
 */

import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { learnFromRefresh } from '../../src/jobs/freshness-learn.ts';
import { createLogger } from '../../src/logger.ts';
import { normaliseEntries } from '../../src/store/snapshot-store.ts';
import { subgroupOf } from '../../src/timetable/event-text.ts';
import type { TimetableEntry } from '../../src/timetable/types.ts';
import { type RelatedPipeline, type SimUser, startRelatedPipeline } from './related-pipeline.ts';

let pipeline: RelatedPipeline;
let student: SimUser;
let studentSource: string;
let groupEntries: TimetableEntry[];

beforeAll(async () => {
  pipeline = await startRelatedPipeline();
  // A second-subgroup student of a group with classes of both subgroups: no view but subgroup 2's is theirs.
  for (const user of pipeline.users.filter((candidate) => candidate.subgroup === 2)) {
    const entries = await pipeline.groupEntries(user.groupId);
    const subgroups = new Set(entries.map((entry) => subgroupOf(entry.note)));
    if (subgroups.has(1) && subgroups.has(2)) {
      [student, groupEntries] = [user, entries];
      break;
    }
  }
  if (!student) throw new Error('no second-subgroup student in a group with both subgroups');
  await pipeline.refresh(`group:${student.groupId}`);
  studentSource = await pipeline.subscribe(student);
}, 60_000);

afterAll(async () => {
  await pipeline?.close();
});

/** What parks `source` in the planner's state after its last refresh (it must have one: it is followed). */
async function parkedBy(source: string): Promise<string | undefined> {
  const state = await pipeline.ctx.freshness.state(source);
  if (state === undefined) throw new Error(`the planner has no state of ${source}`);
  return state.parkedBy;
}

describe('a personal timetable', () => {
  it('equal to its group for subgroup 2 is parked by the group; the group itself never is', async () => {
    expect(await parkedBy(studentSource)).toBe(`group:${student.groupId}`);
    expect(await parkedBy(`group:${student.groupId}`)).toBeUndefined();
  });

  it('with a class its group view lacks is not parked, and a parked one is unparked by its next refresh', async () => {
    const { sim } = pipeline;
    // The simulator gives this class to every student of the group (its note names no subgroup the way the
    // simulator reads notes), while the feed's subgroup option reads "подгр. 1" as the first subgroup's: the
    // student's timetable now has a class that no view of the group has.
    const [template] = groupEntries;
    const wire = (await sim.raw(`/_sim/entries/${template?.id}`)).body as Record<string, unknown>;
    const added = await sim.addEntry({
      ...wire,
      id: undefined,
      note_schedule: 'подгр. 1',
      groupIds: [student.groupId],
    });
    try {
      await pipeline.refresh(studentSource);
      expect(await parkedBy(studentSource)).toBeUndefined();
      // Still so after the group's own refresh: its views and the student's timetable differ.
      await pipeline.refresh(`group:${student.groupId}`);
      await pipeline.drain();
      expect(await parkedBy(studentSource)).toBeUndefined();
    } finally {
      await sim.deleteEntry(added.id);
    }
    // Equal again: the next refreshes park it again.
    await pipeline.refresh(`group:${student.groupId}`);
    await pipeline.drain();
    await pipeline.refresh(studentSource);
    expect(await parkedBy(studentSource)).toBe(`group:${student.groupId}`);
  });

  it('is compared as fetched: an elective of its own keeps it unparked, its group view parks it', async () => {
    const { ctx, clock } = pipeline;
    const view = normaliseEntries(groupEntries.filter((entry) => subgroupOf(entry.note) !== 1)).entries;
    const elective = { ...(groupEntries[0] as TimetableEntry), id: 990_001, subjectName: 'Факультатив', groups: [] };
    const learn = (entries: readonly TimetableEntry[]) =>
      learnFromRefresh(ctx, { source: studentSource, reason: 'schedule', facts: { entries }, now: clock.now });
    const unparked = { changed: false, relatedQueued: 0, classSoon: expect.any(Boolean) };
    expect(await learn(view)).toEqual({ ...unparked, parkedBy: `group:${student.groupId}` });
    expect(await learn(normaliseEntries([...view, elective]).entries)).toEqual(unparked);
    // The group stops being followed: nothing refreshes it, so it explains nobody.
    await ctx.registry.deactivate(`group:${student.groupId}`);
    try {
      expect(await learn(view)).toEqual(unparked);
    } finally {
      await ctx.registry.activate(`group:${student.groupId}`, clock.now);
    }
  });
});

describe('an elective of a student’s own', () => {
  /** A classmate of the subgroup-2 student, their teacher of nothing in the group, and the elective's fields. */
  let learner: string;
  let teacher: string;
  let fields: Record<string, unknown>;

  beforeAll(async () => {
    const { sim } = pipeline;
    const classmate = pipeline.users.find((user) => user.groupId === student.groupId && user.id !== student.id);
    if (!classmate) throw new Error('the student has no classmate');
    const teaching = new Set(groupEntries.map((entry) => entry.teacher.id));
    const employee = (await sim.employees()).find((candidate) => !teaching.has(candidate.id));
    if (!employee) throw new Error('every employee teaches the group');
    teacher = `employee:${employee.id}`;
    // A class of the group's, moved to Saturday evening, taught by that employee, for the classmate alone.
    const template = groupEntries.find((entry) => entry.finishDate > '2025-12-01') as TimetableEntry;
    const wire = (await sim.raw(`/_sim/entries/${template.id}`)).body as Record<string, unknown>;
    fields = {
      ...wire,
      id: undefined,
      groupIds: undefined,
      group_list: '',
      subject_name: 'Факультатив',
      teacher_id: employee.id,
      day_week_schedule: 6,
      time_interval_id: 7,
      userIds: [classmate.id],
    };
    learner = await pipeline.subscribe(classmate);
    await pipeline.refresh(teacher);
    await pipeline.drain();
  });

  it('keeps the student unparked while it lasts; its changes reach the student through its teacher', async () => {
    const { ctx, sim } = pipeline;
    expect(await parkedBy(learner)).toBe(`group:${student.groupId}`);
    const elective = await sim.addEntry(fields);
    try {
      await pipeline.refresh(learner);
      await pipeline.drain();
      expect(await parkedBy(learner)).toBeUndefined();
      expect(await pipeline.locations(learner, elective.id)).not.toEqual([]);

      // The teacher's refresh finds the new room, and the student's feed shows it: a related refresh brought it.
      await sim.raw(`/_sim/entries/${elective.id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ num_auditorium_schedule: 'Ф-777' }),
      });
      await pipeline.refresh(teacher);
      await pipeline.drain();
      expect(await pipeline.locations(learner, elective.id)).toEqual([expect.stringContaining('Ф-777')]);
      const [moved] = await ctx.snapshots.changes(learner);
      expect(moved?.foundBy).toEqual({ reason: 'related', source: teacher });
    } finally {
      await sim.deleteEntry(elective.id);
    }

    // Cancelled: the teacher's refresh finds that too, and the student, equal to the group's view again, is
    // parked by it.
    await pipeline.refresh(teacher);
    await pipeline.drain();
    const [cancelled] = await ctx.snapshots.changes(learner);
    expect(cancelled?.foundBy).toEqual({ reason: 'related', source: teacher });
    expect(cancelled?.counts.removed).toBeGreaterThan(0);
    const kept = (await ctx.snapshots.snapshot(learner))?.entries ?? [];
    expect(kept.some((entry) => entry.id === elective.id)).toBe(false);
    expect(await parkedBy(learner)).toBe(`group:${student.groupId}`);
  });

  it('with its teacher unfollowed, changes reach the student on their own turn, one interval at most', async () => {
    const { ctx, sim, clock } = pipeline;
    const elective = await sim.addEntry(fields);
    await ctx.registry.deactivate(teacher);
    try {
      await pipeline.refresh(learner);
      await pipeline.drain();
      expect(await parkedBy(learner)).toBeUndefined();
      const [plan] = await ctx.freshness.planned([learner]);
      expect(plan?.deadline).toBe(clock.now + ctx.config.refreshIntervalMs);

      // Nobody else shows the elective: the group's refresh finds nothing to tell the student.
      await sim.raw(`/_sim/entries/${elective.id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ num_auditorium_schedule: 'Ф-778' }),
      });
      await pipeline.refresh(`group:${student.groupId}`);
      await pipeline.drain();
      expect(await pipeline.locations(learner, elective.id)).not.toContainEqual(expect.stringContaining('Ф-778'));
      await pipeline.refresh(learner);
      expect(await pipeline.locations(learner, elective.id)).toEqual([expect.stringContaining('Ф-778')]);
    } finally {
      await sim.deleteEntry(elective.id);
      await ctx.registry.activate(teacher, clock.now);
    }
    await pipeline.refresh(learner);
    await pipeline.drain();
    expect(await parkedBy(learner)).toBe(`group:${student.groupId}`);
  });
});

describe('a teacher', () => {
  it('whose classes all show in followed groups is parked by the groups; one with a class for a group nobody follows is not', async () => {
    const { ctx } = pipeline;
    const byName = new Map(pipeline.groups.map((group) => [group.name, group.id]));
    const teacherId = groupEntries.find((entry) => entry.teacher.id !== null)?.teacher.id as number;
    const teacher = `employee:${teacherId}`;
    const classes = (await ctx.upstream.employeeSchedule(teacherId)).entries;
    const groupIds = [...new Set(classes.flatMap((entry) => entry.groups.map((name) => byName.get(name) as number)))];
    for (const id of groupIds) await pipeline.refresh(`group:${id}`);
    await pipeline.drain();
    await pipeline.refresh(teacher);
    expect(await parkedBy(teacher)).toBe('groups');

    // Nobody follows the groups of one of the teacher's classes any more: that class is the teacher's alone.
    const unfollowed = (classes[0] as TimetableEntry).groups.map((name) => `group:${byName.get(name)}`);
    for (const source of unfollowed) await ctx.registry.deactivate(source);
    await pipeline.refresh(teacher);
    expect(await parkedBy(teacher)).toBeUndefined();
  });
});

describe('a failure to learn', () => {
  it('never fails the refresh: the feed is published and the source recorded as fetched', async () => {
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n'))
          if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const logger = createLogger({ level: 'warn', pretty: false, destination });
    const failing = await startRelatedPipeline((ctx) => {
      const relations = Object.create(ctx.relations) as typeof ctx.relations;
      relations.recordGroup = async () => {
        throw new Error('relations unavailable');
      };
      return { ...ctx, relations, logger };
    });
    try {
      const source = `group:${failing.groups[0]?.id}`;
      const job = await failing.refresh(source);
      expect(job.result).toMatchObject({ outcome: 'published' });
      expect(await failing.ctx.feeds.exists(source)).toBe(true);
      expect(await failing.ctx.registry.get(source)).toMatchObject({ status: 'ok' });
      expect(lines.map((line) => [line.source, line.msg])).toEqual([
        [source, 'could not learn from the refresh; planning it as an unparked source'],
      ]);
    } finally {
      await failing.close();
    }
  });
});
