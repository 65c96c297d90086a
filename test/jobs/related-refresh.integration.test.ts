/**
 * Related refreshes: a room changed in a shared lecture reaches, at once, every active feed that shows the
 * class (its teacher, the other groups of the lecture, the students of those groups), and then settles.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TimetableEntry } from '../../src/timetable/types.ts';
import { type RelatedPipeline, type SimUser, startRelatedPipeline } from './related-pipeline.ts';

let pipeline: RelatedPipeline;
/** The shared lecture whose room moves, the group it is found in, and the other group it names. */
let lecture: TimetableEntry;
let groupId: number;
let otherGroupId: number;
let students: string[];
let otherStudents: string[];
let inactiveStudent: string;

beforeAll(async () => {
  pipeline = await startRelatedPipeline();
  const byName = new Map(pipeline.groups.map((group) => [group.name, group.id]));
  const usersOf = (id: number) => pipeline.users.filter((user) => user.groupId === id);
  // A group with three students or more and a future lecture shared with a group that has a student too.
  for (const group of pipeline.groups) {
    if (usersOf(group.id).length < 3) continue;
    const entries = await pipeline.groupEntries(group.id);
    const shared = entries.find(
      (entry) =>
        entry.groups.length >= 2 &&
        entry.teacher.id !== null &&
        entry.finishDate > '2025-10-15' &&
        entry.groups.some((name) => name !== group.name && usersOf(byName.get(name) ?? 0).length > 0),
    );
    if (!shared) continue;
    lecture = shared;
    groupId = group.id;
    otherGroupId = byName.get(shared.groups.find((name) => name !== group.name) as string) as number;
    break;
  }
  if (!lecture) throw new Error('the simulator has no shared lecture between groups with students');
  // The groups and the teacher are followed (their first fetch activates them), then the students subscribe.
  await pipeline.refresh(`group:${groupId}`);
  await pipeline.refresh(`group:${otherGroupId}`);
  await pipeline.refresh(`employee:${lecture.teacher.id}`);
  const [inactive, ...rest] = usersOf(groupId) as [SimUser, ...SimUser[]];
  inactiveStudent = await pipeline.subscribe(inactive);
  await pipeline.ctx.registry.deactivate(inactiveStudent);
  students = await Promise.all(rest.map((user) => pipeline.subscribe(user)));
  otherStudents = await Promise.all(usersOf(otherGroupId).map((user) => pipeline.subscribe(user)));
  await pipeline.drain();
}, 60_000);

afterAll(async () => {
  await pipeline?.close();
});

describe('a room changed in a shared lecture', () => {
  it('reaches the teacher, the other group and every active student after one refresh of the group', async () => {
    const { ctx, sim } = pipeline;
    const room = 'Ауд. 999';
    const followers = [`employee:${lecture.teacher.id}`, `group:${otherGroupId}`, ...students, ...otherStudents];
    for (const source of followers) expect(await pipeline.locations(source, lecture.id)).not.toContain(room);
    await sim.raw(`/_sim/entries/${lecture.id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ num_auditorium_schedule: room }),
    });
    await sim.clearStats();

    const found = await pipeline.refresh(`group:${groupId}`);
    expect(found.result).toMatchObject({ outcome: 'published' });
    // No tick runs in this test: whatever serves the new room was queued by the group's refresh.
    await pipeline.drain();
    for (const source of followers) {
      const locations = await pipeline.locations(source, lecture.id);
      expect(locations.length, source).toBeGreaterThan(0);
      expect(
        locations.every((location) => location.includes(room)),
        source,
      ).toBe(true);
    }

    const [groupChange] = await ctx.snapshots.changes(`group:${groupId}`);
    expect(groupChange?.foundBy).toEqual({ reason: 'resync' });
    const [studentChange] = await ctx.snapshots.changes(students[0] as string);
    expect(studentChange?.foundBy).toEqual({ reason: 'related', source: `group:${groupId}` });
    const [teacherChange] = await ctx.snapshots.changes(`employee:${lecture.teacher.id}`);
    expect(teacherChange?.foundBy).toEqual({ reason: 'related', source: `group:${groupId}` });

    // Settled: each source was fetched once (the group, the other group, the teacher, the active students), and
    // nobody who published the change queued the group again.
    const stats = await sim.stats();
    expect(stats.byEndpoint.groupSchedule).toBe(2);
    expect(stats.byEndpoint.employeeSchedule).toBe(1);
    expect(stats.byEndpoint.mySchedule).toBe(students.length + otherStudents.length);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const counts = await ctx.queues.refresh.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    expect(Object.values(counts).every((count) => count === 0)).toBe(true);
  });

  it('leaves an inactive student alone', async () => {
    expect(await pipeline.locations(inactiveStudent, lecture.id)).not.toContain('Ауд. 999');
    const completed = await pipeline.ctx.queues.refresh.getJobs(['completed'], 0, 1000);
    const related = completed.filter((job) => job.data.reason === 'related').map((job) => job.data.source);
    expect(related).not.toContain(inactiveStudent);
    expect(related).not.toContain(`group:${groupId}`);
    expect(new Set(related)).toEqual(
      new Set([`employee:${lecture.teacher.id}`, `group:${otherGroupId}`, ...students, ...otherStudents]),
    );
  });

  it('queues nothing when the refresh finds no change', async () => {
    const { sim } = pipeline;
    await sim.clearStats();
    const before = (await pipeline.ctx.queues.refresh.getJobs(['completed'], 0, 1000)).length;
    await pipeline.refresh(`group:${groupId}`);
    await pipeline.drain();
    expect((await sim.stats()).total).toBe(1);
    expect((await pipeline.ctx.queues.refresh.getJobs(['completed'], 0, 1000)).length).toBe(before + 1);
  });
});

describe('a second change that a related refresh sees first', () => {
  it('is spread by that refresh: the teacher queued for one class passes on another class of theirs', async () => {
    const { ctx, sim } = pipeline;
    const teacher = lecture.teacher.id as number;
    const byName = new Map(pipeline.groups.map((group) => [group.name, group.id]));
    // Another future class of the same teacher, in a group that is neither of the lecture's.
    const classes = (await ctx.upstream.employeeSchedule(teacher)).entries;
    const other = classes.find(
      (entry) =>
        entry.id !== lecture.id &&
        entry.finishDate > '2025-10-15' &&
        entry.groups.length > 0 &&
        entry.groups.every((name) => ![groupId, otherGroupId].includes(byName.get(name) ?? 0)),
    );
    if (!other) throw new Error(`teacher ${teacher} has no class outside the lecture's groups`);
    const thirdGroup = byName.get(other.groups[0] as string) as number;
    await pipeline.refresh(`group:${thirdGroup}`);
    await pipeline.drain();
    const change = async (entryId: number, room: string) =>
      sim.raw(`/_sim/entries/${entryId}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ num_auditorium_schedule: room }),
      });
    await change(lecture.id, 'Ауд. 1001');
    await change(other.id, 'Ауд. 1002');

    // The lecture's group finds the first change; the teacher's related refresh is the first to see the second.
    await pipeline.refresh(`group:${groupId}`);
    await pipeline.drain();
    const third = await pipeline.locations(`group:${thirdGroup}`, other.id);
    expect(third.length).toBeGreaterThan(0);
    expect(third.every((location) => location.includes('Ауд. 1002'))).toBe(true);
    const [thirdChange] = await ctx.snapshots.changes(`group:${thirdGroup}`);
    expect(thirdChange?.foundBy).toEqual({ reason: 'related', source: `employee:${teacher}` });
    // And nobody spread the lecture's change twice: the group it was found in was not queued again.
    const completed = await ctx.queues.refresh.getJobs(['completed'], 0, 1000);
    const requeued = completed.filter(
      (job) => job.data.reason === 'related' && job.data.source === `group:${groupId}` && job.data.cause !== undefined,
    );
    expect(requeued).toEqual([]);
  });
});
