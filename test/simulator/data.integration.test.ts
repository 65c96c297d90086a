import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/index.ts';
import {
  call,
  dayNumber,
  employeeEntries,
  fetchText,
  groupEntries,
  mapLimit,
  start,
  type WireEntry,
} from './helpers.ts';

interface SimGroup {
  id: number;
  name: string;
  entryCount: number;
}

interface SimEmployee {
  id: number;
  lastName: string;
  firstName: string;
  middleName: string;
}

const ENTRY_FIELDS: Record<string, 'number' | 'string'> = {
  id: 'number',
  semester: 'number',
  year: 'number',
  subject_name: 'string',
  subject_id: 'number',
  start_day_schedule: 'string',
  finish_day_schedule: 'string',
  day_week_schedule: 'number',
  type_week_schedule: 'number',
  note_schedule: 'string',
  time_interval_id: 'number',
  total_time_schedule: 'string',
  begin_time_schedule: 'string',
  end_time_schedule: 'string',
  teacher_id: 'number',
  teacher_lastname: 'string',
  teacher_firstname: 'string',
  teacher_middlename: 'string',
  num_auditorium_schedule: 'string',
  building_name: 'string',
  building_id: 'number',
  group_list: 'string',
  subject_kind_name: 'string',
};

const SLOTS: Record<number, string> = {
  1: '08:30-10:00',
  2: '10:10-11:40',
  3: '11:50-13:20',
  4: '14:00-15:30',
  5: '15:40-17:10',
  6: '17:20-18:50',
  7: '19:00-20:30',
};

function clash(a: WireEntry, b: WireEntry): boolean {
  if (a.day_week_schedule !== b.day_week_schedule || a.time_interval_id !== b.time_interval_id) return false;
  const weeksOverlap =
    a.type_week_schedule === 0 || b.type_week_schedule === 0 || a.type_week_schedule === b.type_week_schedule;
  const datesOverlap =
    dayNumber(a.start_day_schedule) <= dayNumber(b.finish_day_schedule) &&
    dayNumber(b.start_day_schedule) <= dayNumber(a.finish_day_schedule);
  return weeksOverlap && datesOverlap;
}

describe('simulator data', () => {
  let sim: RunningSimulator;
  let groups: SimGroup[];
  let employees: SimEmployee[];
  const timetables = new Map<number, WireEntry[]>();

  beforeAll(async () => {
    sim = await start();
    groups = (await call<{ groups: SimGroup[] }>(sim.url, '/_sim/groups')).body.groups;
    employees = (await call<{ employees: SimEmployee[] }>(sim.url, '/_sim/employees')).body.employees;
    const all = await mapLimit(groups, 32, (group) => groupEntries(sim.url, group.id));
    for (const [index, group] of groups.entries()) timetables.set(group.id, all[index] ?? []);
  });

  afterAll(async () => {
    await sim.close();
  });

  const allEntries = (): WireEntry[] => [...timetables.values()].flat();

  it('has at least 1500 groups named like 09-351 and 800 employees and 200 users', async () => {
    expect(groups.length).toBeGreaterThanOrEqual(1500);
    expect(employees.length).toBeGreaterThanOrEqual(800);
    const users = (await call<{ users: unknown[] }>(sim.url, '/_sim/users')).body.users;
    expect(users.length).toBeGreaterThanOrEqual(200);
    for (const group of groups) expect(group.name).toMatch(/^\d{2}-\d{3}$/);
    expect(new Set(groups.map((group) => group.name)).size).toBe(groups.length);
    expect(new Set(employees.map((employee) => employee.id)).size).toBe(employees.length);
  });

  it('gives every group 15–30 entries, matching entryCount', () => {
    for (const group of groups) {
      const entries = timetables.get(group.id) ?? [];
      expect(entries.length).toBe(group.entryCount);
      expect(entries.length).toBeGreaterThanOrEqual(15);
      expect(entries.length).toBeLessThanOrEqual(30);
    }
  });

  it('sends every field of section 2.1 with its type, a real time slot and the autumn semester', () => {
    for (const entry of allEntries().slice(0, 3000)) {
      for (const [field, type] of Object.entries(ENTRY_FIELDS))
        expect(typeof entry[field as keyof WireEntry], field).toBe(type);
      expect(entry.total_time_schedule).toBe(SLOTS[entry.time_interval_id]);
      expect(entry.total_time_schedule).toBe(`${entry.begin_time_schedule}-${entry.end_time_schedule}`);
      expect(entry.day_week_schedule).toBeGreaterThanOrEqual(1);
      expect(entry.day_week_schedule).toBeLessThanOrEqual(6);
      expect(entry.year).toBe(2025);
      expect(entry.semester % 2).toBe(1);
      expect(['01.09.25', '03.11.25']).toContain(entry.start_day_schedule);
      expect(['02.11.25', '28.12.25']).toContain(entry.finish_day_schedule);
    }
  });

  it('uses all three week types, all four kinds, whole and half semesters, and subgroup notes', () => {
    const entries = allEntries();
    expect(new Set(entries.map((entry) => entry.type_week_schedule))).toEqual(new Set([0, 1, 2]));
    expect(new Set(entries.map((entry) => entry.subject_kind_name))).toEqual(
      new Set(['лекция', 'практика', 'лабораторная работа', 'семинар']),
    );
    const notes = new Set(entries.map((entry) => entry.note_schedule));
    expect(notes).toContain('1 подгруппа');
    expect(notes).toContain('2 подгруппа');
    expect(entries.some((entry) => entry.finish_day_schedule === '02.11.25')).toBe(true);
    expect(entries.some((entry) => entry.start_day_schedule === '03.11.25')).toBe(true);
    expect(new Set(entries.map((entry) => entry.subject_name)).size).toBeGreaterThanOrEqual(60);
  });

  it('never puts two classes of one group at the same time', () => {
    const clashes: string[] = [];
    for (const [groupId, entries] of timetables) {
      for (let i = 0; i < entries.length; i++) {
        for (let j = i + 1; j < entries.length; j++) {
          const [a, b] = [entries[i] as WireEntry, entries[j] as WireEntry];
          if (clash(a, b)) clashes.push(`group ${groupId}: entries ${a.id} and ${b.id}`);
        }
      }
    }
    expect(clashes).toEqual([]);
  });

  it('shows a stream lecture with the same id and content in every group of its group_list and in its teacher’s view', async () => {
    const byName = new Map(groups.map((group) => [group.name, group.id]));
    const lectures = allEntries().filter(
      (entry) => entry.subject_kind_name === 'лекция' && entry.group_list.includes(', '),
    );
    expect(lectures.length).toBeGreaterThan(100);
    for (const lecture of lectures.slice(0, 40)) {
      const names = lecture.group_list.split(', ');
      expect(names.length).toBeGreaterThanOrEqual(2);
      expect(names.length).toBeLessThanOrEqual(4);
      for (const name of names) {
        const copy = timetables.get(byName.get(name) ?? -1)?.find((entry) => entry.id === lecture.id);
        expect(copy, `${name} has lecture ${lecture.id}`).toEqual(lecture);
      }
      const teacherView = await employeeEntries(sim.url, lecture.teacher_id);
      expect(teacherView.find((entry) => entry.id === lecture.id)).toEqual(lecture);
    }
  });

  it('makes each teacher’s timetable exactly the classes that name that teacher', async () => {
    const byTeacher = new Map<number, Map<number, WireEntry>>();
    for (const entry of allEntries()) {
      const mine = byTeacher.get(entry.teacher_id) ?? new Map<number, WireEntry>();
      mine.set(entry.id, entry);
      byTeacher.set(entry.teacher_id, mine);
    }
    const names = new Map(employees.map((employee) => [employee.id, employee]));
    for (const [teacherId, expected] of [...byTeacher].slice(0, 60)) {
      const view = await employeeEntries(sim.url, teacherId);
      expect(new Set(view.map((entry) => entry.id))).toEqual(new Set(expected.keys()));
      expect(view[0]?.teacher_lastname).toBe(names.get(teacherId)?.lastName);
    }
  });

  it('returns the same bytes for the same seed and different data for another seed', async () => {
    const twin = await start();
    const other = await start({ seed: 'another seed' });
    try {
      const sample = groups.slice(0, 5);
      for (const group of sample) {
        const a = await fetchText(`${sim.url}/groups/${group.id}/schedule`);
        const b = await fetchText(`${twin.url}/groups/${group.id}/schedule`);
        expect(b).toBe(a);
      }
      for (const path of ['/_sim/groups', '/_sim/employees', '/_sim/users']) {
        expect(await fetchText(`${twin.url}${path}`)).toBe(await fetchText(`${sim.url}${path}`));
        expect(await fetchText(`${other.url}${path}`)).not.toBe(await fetchText(`${sim.url}${path}`));
      }
    } finally {
      await Promise.all([twin.close(), other.close()]);
    }
  });
});
