/**
 * The group directory end to end: the admin import (JSON, CSV, bad input, auth), names learnt from published
 * group timetables and from sign-ups (the JSON API's and the page's), the search on `/`, and indexes of other
 * processes following changes.
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { silentLogger } from '../../src/logger.ts';
import { GroupDirectory } from '../../src/store/group-directory.ts';
import { type Pipeline, startPipeline } from '../jobs/helpers.ts';
import { TEST_ADMIN_TOKEN, testContext } from '../support/service.ts';

let pipeline: Pipeline;
let app: FastifyInstance;
let users: { id: number; token: string; groupId: number }[];
let groups: { id: number; name: string; entryCount: number }[];

beforeAll(async () => {
  pipeline = await startPipeline({ PUBLIC_URL: 'http://127.0.0.1:9' });
  app = await buildApp(pipeline.ctx, { logger: silentLogger() });
  users = await pipeline.sim.users();
  groups = await pipeline.sim.groups();
});
afterEach(() => pipeline.sim.clearFaults());
afterAll(async () => {
  await app?.close();
  await pipeline?.close();
});

const admin = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };
const importJson = (payload: unknown, headers: Record<string, string> = admin) =>
  app.inject({ method: 'POST', url: '/admin/directory', headers, payload: payload as object });
const importCsv = (csv: string) =>
  app.inject({
    method: 'POST',
    url: '/admin/directory',
    headers: { ...admin, 'content-type': 'text/csv' },
    payload: csv,
  });
const home = (query: string) => app.inject({ method: 'GET', url: `/?q=${encodeURIComponent(query)}` });

function groupOf(id: number): { id: number; name: string; entryCount: number } {
  const group = groups.find((candidate) => candidate.id === id);
  if (!group) throw new Error(`the simulator has no group ${id}`);
  return group;
}

describe('POST /admin/directory', () => {
  it('imports JSON, then counts what a second import adds, renames and leaves', async () => {
    const first = await importJson([
      { id: 900001, name: 'ЗЗ-101' },
      { id: 900002, name: 'ЗЗ-102' },
    ]);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ added: 2, updated: 0, unchanged: 0 });
    const second = await importJson({
      groups: [
        { id: 900001, name: 'ЗЗ-101' },
        { id: 900002, name: 'ЗЗ-102а' },
        { id: '900003', name: 'ЗЗ-103' },
      ],
    });
    expect(second.json()).toMatchObject({ added: 1, updated: 1, unchanged: 1 });
    expect(await pipeline.ctx.directory.name(900002)).toBe('ЗЗ-102а');
    expect((await pipeline.ctx.directory.search('зз10')).groups.map((group) => group.id)).toEqual([
      900001, 900003, 900002,
    ]);
  });

  it('imports CSV with a header and quoted fields', async () => {
    const response = await importCsv('id,name\r\n900011,"ЮЮ-1, вечерняя"\r\n900012,ЮЮ-2\r\n');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ added: 2, updated: 0, unchanged: 0 });
    expect(await pipeline.ctx.directory.name(900011)).toBe('ЮЮ-1, вечерняя');
  });

  it('imports CSV in the charset its Content-Type names, and refuses one sent as UTF-8 that is not', async () => {
    // «900031;ИВТ-31» in windows-1251, with Excel's separator line.
    const bytes = Buffer.from([...Buffer.from('sep=;\r\n900031;'), ...[0xc8, 0xc2, 0xd2], ...Buffer.from('-31\r\n')]);
    const post = (contentType: string) =>
      app.inject({
        method: 'POST',
        url: '/admin/directory',
        headers: { ...admin, 'content-type': contentType },
        payload: bytes,
      });
    const garbled = await post('text/csv');
    expect(garbled.statusCode).toBe(400);
    expect(garbled.json<{ error: string }>().error).toMatch(/^line 2: not UTF-8: say charset=windows-1251/);
    expect(await pipeline.ctx.directory.name(900031)).toBeUndefined();
    const response = await post('text/csv; charset="windows-1251"');
    expect(response.statusCode).toBe(200);
    expect(await pipeline.ctx.directory.name(900031)).toBe('ИВТ-31');
  });

  it('refuses bad input with a 400 naming the line or element, and changes nothing', async () => {
    const csv = await importCsv('900021,ЭЭ-1\n900022\n');
    expect(csv.statusCode).toBe(400);
    expect(csv.json()).toEqual({ error: 'line 2: expected 2 fields (id,name), got 1', code: 'INVALID_BODY' });
    expect(await pipeline.ctx.directory.name(900021)).toBeUndefined();
    const json = await importJson([{ id: -1, name: 'x' }]);
    expect(json.statusCode).toBe(400);
    expect(json.json()).toEqual({ error: '[0]: id must be a positive whole number, got "-1"', code: 'INVALID_BODY' });
    const shape = await importJson({ id: 1, name: 'x' });
    expect(shape.statusCode).toBe(400);
    const plain = await app.inject({
      method: 'POST',
      url: '/admin/directory',
      headers: { ...admin, 'content-type': 'text/plain' },
      payload: '1,x',
    });
    expect(plain.statusCode).toBe(400);
    expect(plain.json<{ error: string }>().error).toMatch(/CSV id,name sent as Content-Type: text\/csv$/);
  });

  it('refuses a body over 4 MiB', async () => {
    const response = await importCsv(`1,${'x'.repeat(4 * 1024 * 1024)}`);
    expect(response.statusCode).toBe(413);
  });

  it('needs the admin token', async () => {
    expect((await importJson([{ id: 1, name: 'x' }], {})).statusCode).toBe(401);
    expect(
      (await importJson([{ id: 1, name: 'x' }], { authorization: 'Bearer wrong-token-0123456789' })).statusCode,
    ).toBe(401);
    expect(await pipeline.ctx.directory.name(1)).toBeUndefined();
  });
});

describe('names the directory learns', () => {
  it('takes the name a published group timetable gives', async () => {
    const group = groups.find((candidate) => candidate.entryCount >= 4);
    if (!group) throw new Error('no group with entries');
    expect(await pipeline.ctx.directory.name(group.id)).toBeUndefined();
    const job = await pipeline.refresh(`group:${group.id}`);
    expect(job.state).toBe('completed');
    expect(await pipeline.ctx.directory.name(group.id)).toBe(group.name);
  });

  it("takes a student's group from the profile at sign-up, and keeps it on the subscription", async () => {
    const user = users[0];
    if (!user) throw new Error('no user');
    const response = await app.inject({
      method: 'POST',
      url: '/api/subscriptions',
      payload: { credential: user.token },
    });
    expect(response.statusCode).toBe(201);
    const group = groupOf(user.groupId);
    expect(await pipeline.ctx.directory.name(group.id)).toBe(group.name);
    const subscription = await pipeline.ctx.subscriptions.get(response.json<{ id: string }>().id);
    expect(subscription?.group).toEqual({ id: group.id, name: group.name });
  });

  it("is followed by another process's search index", async () => {
    const other = new Redis(inject('redisUrl'));
    try {
      const directory = new GroupDirectory(other, pipeline.ctx.keys);
      expect((await directory.search('ЖЖ-777')).total).toBe(0);
      await importJson([{ id: 900777, name: 'ЖЖ-777' }]);
      expect((await directory.search('жж777')).groups).toEqual([{ id: 900777, name: 'ЖЖ-777' }]);
      await pipeline.ctx.directory.record(900777, 'ЖЖ-778');
      expect((await directory.search('жж777')).total).toBe(0);
    } finally {
      other.disconnect();
    }
  });
});

describe('the search on /', () => {
  it('shows groups and teachers found as links to their timetables', async () => {
    await importJson([
      { id: 900801, name: 'ЙЙ-801' },
      { id: 900802, name: 'ЙЙ-802' },
    ]);
    const byGroups = await home('йй80');
    expect(byGroups.statusCode).toBe(200);
    expect(byGroups.body).toContain('<a href="/timetables/groups/900801">ЙЙ-801</a>');
    expect(byGroups.body).toContain('<a href="/timetables/groups/900802">ЙЙ-802</a>');
    const employees = await pipeline.sim.employees();
    // Two letters that 2 to 20 employees' names hold list them all, as the JSON lookup finds them.
    type Found = { id: number; lastName: string; firstName: string; middleName: string };
    const lookup = async (text: string) =>
      (await app.inject({ method: 'GET', url: `/api/employees?q=${encodeURIComponent(text)}` })).json<{
        employees: Found[];
      }>().employees;
    let found: Found[] = [];
    let start = '';
    // Letters most Russian names share (surnames, patronymics), then the two first of each surname.
    for (const text of ['ов', 'ев', 'ин', ...employees.map((one) => one.lastName.slice(0, 2))]) {
      found = await lookup(text);
      start = text;
      if (found.length >= 2 && found.length <= 20) break;
    }
    expect(found.length).toBeGreaterThanOrEqual(2);
    expect(found.length).toBeLessThanOrEqual(20);
    const byTeacher = await home(start);
    expect(byTeacher.statusCode).toBe(200);
    for (const one of found) {
      expect(byTeacher.body).toContain(`href="/timetables/employees/${one.id}"`);
      expect(byTeacher.body).toContain(`${one.lastName} ${one.firstName} ${one.middleName}`);
    }
  });

  it('opens the one timetable found at once: a group, or a teacher', async () => {
    await importJson(groups.map(({ id, name }) => ({ id, name })));
    const group = groups.find((one) => groups.every((other) => other.id === one.id || !other.name.includes(one.name)));
    if (!group) throw new Error('no group whose name is in no other');
    const byGroup = await home(group.name);
    expect(byGroup.statusCode).toBe(303);
    expect(byGroup.headers.location).toBe(`/timetables/groups/${group.id}`);
    expect(byGroup.headers['cache-control']).toBe('no-store');
    const [teacher] = await pipeline.sim.employees();
    if (!teacher) throw new Error('no teacher');
    const byTeacher = await home(`${teacher.lastName} ${teacher.firstName} ${teacher.middleName}`);
    expect(byTeacher.statusCode).toBe(303);
    expect(byTeacher.headers.location).toBe(`/timetables/employees/${teacher.id}`);
    // The JSON lookup still answers a list, however many it finds.
    const api = await app.inject({
      method: 'GET',
      url: `/api/employees?q=${encodeURIComponent(`${teacher.lastName} ${teacher.firstName} ${teacher.middleName}`)}`,
    });
    expect(api.statusCode).toBe(200);
    expect(JSON.stringify(api.json())).toContain(String(teacher.id));
  });

  it('keeps the group results when the teacher search fails, and says so', async () => {
    await importJson([{ id: 900901, name: 'Тест-901' }]);
    await pipeline.sim.fault({ endpoint: 'employeeSearch', kind: 'status', status: 500 });
    const response = await home('Тест-901');
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain('href="/timetables/groups/900901"');
    expect(response.body).toContain('Поиск преподавателей сейчас не отвечает');
  });

  it('asks for a longer query instead of searching', async () => {
    const response = await home('a');
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain('Введите хотя бы 2 символа');
  });

  it('shows a hostile group name as text', async () => {
    // Two of them: one would open its timetable rather than a list.
    await importJson([
      { id: 900666, name: '<img src=x onerror=alert(1)>' },
      { id: 900667, name: '<img src=y>' },
    ]);
    const response = await home('img src');
    expect(response.body).toContain('&#60;img src&#61;x onerror&#61;alert(1)&#62;');
    expect(response.body).not.toContain('<img src=x');
  });
});

describe('signing in on /', () => {
  const signIn = (credential: string) =>
    app.inject({
      method: 'POST',
      url: '/timetables/personal',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ credential }).toString(),
    });

  it('signs a student up, keeps the session in a cookie and sends them to the personal page', async () => {
    const user = users[1];
    if (!user) throw new Error('no user');
    const response = await signIn(user.token);
    expect(response.statusCode).toBe(303);
    expect(response.headers.location).toBe('/timetables/personal');
    // A session of its own (never a feed token), and a cookie from before sessions forgotten.
    const [session, legacy] = response.headers['set-cookie'] as string[];
    expect(session).toMatch(
      /^tts-session=[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+; Path=\/; SameSite=Lax; Max-Age=\d+; HttpOnly$/,
    );
    expect(legacy).toMatch(/^tts-personal=; Path=\/; SameSite=Lax; Max-Age=0; HttpOnly$/);
    const group = groupOf(user.groupId);
    expect(await pipeline.ctx.directory.name(group.id)).toBe(group.name);
  });

  it("shows the form again with the university's words for a rejected credential, never echoing it", async () => {
    const response = await signIn('not-a-real-token-123456');
    expect(response.statusCode).toBe(422);
    expect(response.headers['set-cookie']).toBeUndefined();
    expect(response.body).toContain('Университет не принял этот токен');
    expect(response.body).toContain('Недействительный токен');
    expect(response.body).not.toContain('not-a-real-token-123456');
    expect(response.body).toContain('id="credential"');
  });

  it('asks for the credential when the field is empty', async () => {
    const response = await signIn('   ');
    expect(response.statusCode).toBe(400);
    expect(response.body).toContain('Вставьте токен в поле.');
  });

  it('says the university is down when it cannot check the credential', async () => {
    await pipeline.sim.fault({ endpoint: 'me', kind: 'status', status: 500 });
    const user = users[2];
    if (!user) throw new Error('no user');
    const response = await signIn(user.token);
    expect(response.statusCode).toBe(502);
    expect(response.body).toContain('Университет сейчас не отвечает');
  });

  it('refuses a form sent from another site', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/timetables/personal',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      payload: 'credential=x',
    });
    expect(response.statusCode).toBe(403);
  });
});

describe('signing in on / under other settings', () => {
  /** An app on the pipeline's simulator with settings of its own; `run` gets its sign-in. */
  async function withApp(
    env: Record<string, string | undefined>,
    run: (signIn: (credential: string) => Promise<LightMyRequestResponse>) => Promise<void>,
  ) {
    const opened = await testContext({ UNIVERSITY_API_URL: pipeline.simUrl, ...env });
    const other = await buildApp(opened.context, { logger: silentLogger() });
    try {
      await run((credential) =>
        other.inject({
          method: 'POST',
          url: '/timetables/personal',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({ credential }).toString(),
        }),
      );
    } finally {
      await other.close();
      await opened.close();
    }
  }

  it('says how long to wait once over the sign-up limit', async () => {
    await withApp({ SIGN_UPS_PER_CLIENT: '1/10m' }, async (signIn) => {
      const [first, second] = [users[2], users[3]];
      if (!first || !second) throw new Error('no users');
      expect((await signIn(first.token)).statusCode).toBe(303);
      const limited = await signIn(second.token);
      expect(limited.statusCode).toBe(429);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(limited.body).toMatch(/Слишком много попыток входа\. Попробуйте через \d+ с\./);
    });
  });

  it('says personal timetables are off without SECRET_KEY', async () => {
    await withApp({ SECRET_KEY: undefined }, async (signIn) => {
      const response = await signIn(users[0]?.token ?? '');
      expect(response.statusCode).toBe(503);
      expect(response.body).toContain('Личные расписания на этом сервере выключены');
      expect(response.body).not.toContain('id="credential"');
    });
  });
});
