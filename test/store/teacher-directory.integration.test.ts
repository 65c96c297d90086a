/**
 * The teacher directory on a real Redis: fed by refreshes of timetables (every teacher they name, written only
 * when new or renamed) and by search answers, and found by the search of another process as soon as it changed.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadScript } from '../../src/lib/lua-script.ts';
import { TeacherDirectory } from '../../src/store/teacher-directory.ts';
import type { Employee } from '../../src/upstream/directory-schema.ts';
import { type Pipeline, startPipeline } from '../jobs/helpers.ts';

let pipeline: Pipeline;

beforeAll(async () => {
  pipeline = await startPipeline();
});
afterAll(async () => {
  await pipeline?.close();
});

const version = async () => Number((await pipeline.ctx.redis.get(pipeline.ctx.keys.teacherDirectoryVersion)) ?? 0);
const employee = (fields: Partial<Employee> & Pick<Employee, 'id' | 'lastName'>): Employee => ({
  teacher: true,
  email: '',
  firstName: '',
  middleName: '',
  post: '',
  gender: '',
  photoPath: '',
  workPhone: '',
  subDivision: '',
  ...fields,
});

describe('the teacher directory', () => {
  it("learns every teacher a group's timetable names, and a second refresh writes nothing", async () => {
    const group = (await pipeline.sim.groups()).find((candidate) => candidate.entryCount > 0);
    if (!group) throw new Error('no group with classes');
    const { teachers, keys, redis, snapshots } = pipeline.ctx;
    expect((await pipeline.refresh(`group:${group.id}`)).state).toBe('completed');
    const snapshot = await snapshots.snapshot(`group:${group.id}`);
    const named = new Map(snapshot?.entries.map((entry) => [entry.teacher.id, entry.teacher]));
    expect(named.size).toBeGreaterThan(0);
    for (const [id, teacher] of named) {
      const stored = JSON.parse((await redis.hget(keys.teacherDirectory, String(id))) ?? 'null');
      expect(stored).toMatchObject({ id, teacher: true, lastName: teacher.lastName, firstName: teacher.firstName });
    }
    const [someone] = named.values();
    expect((await teachers.find(someone?.lastName ?? '', 50)).map((found) => found.id)).toContain(someone?.id);

    const written = await version();
    expect((await pipeline.refresh(`group:${group.id}`)).state).toBe('completed');
    expect(await version()).toBe(written);
  });

  it('keeps a record when a timetable spells the name with е for ё, and renames it when the name changed', async () => {
    const { teachers, keys, redis } = pipeline.ctx;
    const found = employee({ id: 990001, lastName: 'Кулёва', firstName: 'Анна', post: 'доцент' });
    expect(await teachers.recordFound([found])).toBe(1);
    const before = await version();
    expect(await teachers.recordSeen([{ id: 990001, lastName: 'Кулева', firstName: 'Анна', middleName: '' }])).toBe(0);
    expect(await version()).toBe(before);
    expect(await teachers.recordFound([found])).toBe(0);

    expect(await teachers.recordSeen([{ id: 990001, lastName: 'Петрова', firstName: 'Анна', middleName: '' }])).toBe(1);
    expect(JSON.parse((await redis.hget(keys.teacherDirectory, '990001')) ?? 'null')).toMatchObject({
      lastName: 'Петрова',
      post: 'доцент',
    });
    // Entries without a teacher, or without a surname, name no one.
    expect(
      await teachers.recordSeen([
        { id: null, lastName: 'Никто', firstName: '', middleName: '' },
        { id: 990002, lastName: '  ', firstName: 'Безфамильный', middleName: '' },
      ]),
    ).toBe(0);
  });

  it("answers another process's search with what one process recorded", async () => {
    const { redis, keys } = pipeline.ctx;
    const other = new TeacherDirectory(redis, keys);
    expect(await other.find('Зорькина', 10)).toEqual([]);
    await pipeline.ctx.teachers.recordFound([employee({ id: 990003, lastName: 'Зорькина', firstName: 'Ёлка' })]);
    expect((await other.find('зорькина е.', 10)).map((found) => found.id)).toEqual([990003]);
  });

  it('adds no new teacher once full, and still updates the ones it has', async () => {
    const { redis, keys } = pipeline.ctx;
    const script = loadScript(join(import.meta.dirname, '../../src/store'), 'teacher-directory-record');
    const hash = `${keys.teacherDirectory}:bounded`;
    const counter = `${hash}:version`;
    expect(await script.run(redis, [hash, counter], ['2', '1', 'a', '2', 'b', '3', 'c'])).toBe(2);
    expect(await redis.hgetall(hash)).toEqual({ 1: 'a', 2: 'b' });
    expect(await script.run(redis, [hash, counter], ['2', '3', 'c', '1', 'a2', '2', 'b'])).toBe(1);
    expect(await redis.hgetall(hash)).toEqual({ 1: 'a2', 2: 'b' });
    expect(await redis.get(counter)).toBe('2');
  });
});
