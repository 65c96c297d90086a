/**
 * `GET /api/employees`: the service's teacher directory answers what it knows (teachers of the timetables read,
 * people the university's search found), however the name is written; only the rest goes to the university's
 * search, cached, whose failures answer as the error catalog says.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { silentLogger } from '../../src/logger.ts';
import { type Pipeline, startPipeline } from '../jobs/helpers.ts';

let pipeline: Pipeline;
let app: FastifyInstance;
let employees: { id: number; lastName: string; firstName: string; middleName: string }[];

beforeAll(async () => {
  pipeline = await startPipeline();
  app = await buildApp(pipeline.ctx, { logger: silentLogger() });
  employees = await pipeline.sim.employees();
});
afterEach(() => pipeline.sim.clearFaults());
afterAll(async () => {
  await app?.close();
  await pipeline?.close();
});

interface Found {
  id: number;
  lastName: string;
  firstName: string;
  middleName: string;
}
const search = (q: string) => app.inject({ method: 'GET', url: `/api/employees?q=${encodeURIComponent(q)}` });
const found = async (q: string) => {
  const response = await search(q);
  expect(response.statusCode, q).toBe(200);
  return response.json<{ employees: Found[] }>().employees;
};
const searches = async () => (await pipeline.sim.stats()).byEndpoint.employeeSearch ?? 0;
/** Every field of an employee in the answer, whether the directory or the university gave it. */
const EMPLOYEE_FIELDS = [
  'email',
  'firstName',
  'gender',
  'id',
  'lastName',
  'middleName',
  'photoPath',
  'post',
  'subDivision',
  'teacher',
  'workPhone',
];

describe('the teacher directory', () => {
  it('finds a ё surname written with е, and with initials, once a timetable naming the teacher was read', async () => {
    const teacher = employees.find((employee) => employee.lastName.includes('ё'));
    if (!teacher) throw new Error('the simulator has no teacher with ё in the surname');
    const plain = teacher.lastName.replace(/ё/g, 'е');
    // The university's search is strict: before the directory knows the teacher, `е` finds no one.
    const before = await searches();
    expect((await found(plain)).map((employee) => employee.id)).not.toContain(teacher.id);
    expect(await searches()).toBe(before + 1);

    expect((await pipeline.refresh(`employee:${teacher.id}`)).state).toBe('completed');
    const asked = await searches();
    const [first] = await found(plain);
    expect(first).toMatchObject({ id: teacher.id, lastName: teacher.lastName, firstName: teacher.firstName });
    expect(Object.keys(first ?? {}).sort()).toEqual(EMPLOYEE_FIELDS);
    const f = teacher.firstName[0] as string;
    const m = teacher.middleName[0] as string;
    for (const query of [
      `${plain} ${f}.${m}.`,
      `${teacher.lastName} ${f}. ${m}.`,
      `${plain.toUpperCase()} ${f} ${m}`,
      `${f}.${m}. ${plain}`,
      `${teacher.lastName} ${teacher.firstName}`,
      `${plain} ${teacher.firstName} ${teacher.middleName}`,
      plain.slice(0, 5),
    ])
      expect(
        (await found(query)).map((employee) => employee.id),
        query,
      ).toContain(teacher.id);
    // Every one of these was the directory's answer: the university was not asked again.
    expect(await searches()).toBe(asked);
  });

  it("keeps what the university's search found, and answers it again without asking", async () => {
    const person = employees.find((employee) => !employee.lastName.includes('ё')) as Found;
    const before = await searches();
    const first = await found(person.lastName);
    expect(first.map((employee) => employee.id)).toContain(person.id);
    expect(await searches()).toBe(before + 1);
    const again = await found(`  ${person.lastName.toLowerCase()}  ${person.firstName[0]}. `);
    expect(again.map((employee) => employee.id)).toContain(person.id);
    // The directory gives the record as the university's search did, post and subdivision included.
    expect(again.find((employee) => employee.id === person.id)).toEqual(
      first.find((employee) => employee.id === person.id),
    );
    expect(await searches()).toBe(before + 1);
  });
});

describe('teacher search', () => {
  it('asks the university for what the directory cannot answer, once, and answers repeats from the cache', async () => {
    // A first name alone: the directory matches surnames only, the university's search the whole name.
    const firstName = (employees.at(-1) as Found).firstName;
    const before = await searches();
    const first = await search(firstName);
    expect(first.statusCode).toBe(200);
    expect(first.headers['content-type']).toMatch(/^application\/json/);
    const { employees: answer } = first.json<{ employees: Found[] }>();
    expect(answer.length).toBeGreaterThan(0);
    expect(answer.every((employee) => employee.id > 0)).toBe(true);
    expect(answer.map((employee) => employee.firstName)).toContain(firstName);
    expect(await searches()).toBe(before + 1);

    const again = await search(`  ${firstName.toUpperCase()}  `);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first.json());
    expect(await searches()).toBe(before + 1);
    const { redis, keys } = pipeline.ctx;
    const ttl = await redis.ttl(keys.employeeSearch(firstName.toLowerCase()));
    expect(ttl).toBeGreaterThan(3500);
    expect(ttl).toBeLessThanOrEqual(3600);
  });

  it('answers 400 for a missing, too short, too long or repeated query', async () => {
    for (const url of [
      '/api/employees',
      '/api/employees?q=',
      '/api/employees?q=%20a%20',
      `/api/employees?q=${'я'.repeat(65)}`,
      '/api/employees?q=ab&q=cd',
    ]) {
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(400);
      expect(response.json<{ error: string }>().error).toMatch(/query parameter q/);
    }
  });

  it('answers 502 with the upstream’s words when the upstream fails, and caches nothing', async () => {
    await pipeline.sim.fault({
      endpoint: 'employeeSearch',
      kind: 'status',
      status: 500,
      error: 'справочник недоступен',
      times: 1,
    });
    const failed = await search('ова');
    expect(failed.statusCode).toBe(502);
    expect(failed.json<{ error: string }>().error).toMatch(
      /^the university failed: University API employeeSearch: HTTP 500: справочник недоступен/,
    );
    expect(await pipeline.ctx.redis.exists(pipeline.ctx.keys.employeeSearch('ова'))).toBe(0);
    expect((await search('ова')).statusCode).toBe(200);
  });

  it('answers 503 with Retry-After when the upstream rate-limits us', async () => {
    await pipeline.sim.fault({ endpoint: 'employeeSearch', kind: 'rate-limit', retryAfterSeconds: 7, times: 1 });
    const limited = await search('ев');
    expect(limited.statusCode).toBe(503);
    expect(limited.headers['retry-after']).toBe('7');
  });
});
