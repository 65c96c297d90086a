import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { createUniversityClient, type UniversityClient } from '../../src/upstream/client.ts';
import {
  InvalidIdError,
  UpstreamAuthError,
  UpstreamHttpError,
  UpstreamNotFoundError,
  UpstreamProtocolError,
} from '../../src/upstream/errors.ts';
import { memoryLogger, sleepSpy } from './local-server.ts';
import { type SimControl, simControl } from './sim-control.ts';

const REFERENCE_DATE = new Date('2025-10-01T00:00:00Z');
const SMALL = { groups: 60, employees: 60, users: 10 };
type Simulator = Awaited<ReturnType<typeof startSimulator>>;

let sim: Simulator;
let control: SimControl;
let client: UniversityClient;
let token: string;
let groupId: number;

beforeAll(async () => {
  sim = await startSimulator({ port: 0, seed: 1, referenceDate: REFERENCE_DATE, ...SMALL });
  control = simControl(sim.url);
  client = createUniversityClient({
    baseUrl: sim.url,
    logger: silentLogger(),
    retry: { baseDelayMs: 5, maxDelayMs: 20 },
  });
  const [user] = await control.users();
  if (!user) throw new Error('the simulator has no users');
  token = user.token;
  groupId = user.groupId;
});
beforeEach(async () => {
  await control.clearStats();
});
afterEach(() => control.clearFaults());
afterAll(async () => {
  await client.close();
  await sim.close();
});

describe('timetables', () => {
  it('fetches a group timetable with every entry valid', async () => {
    const group = (await control.groups()).find((g) => g.id === groupId);
    const result = await client.groupSchedule(groupId);
    expect(result.problems).toEqual([]);
    expect(result.entries.length).toBe(group?.entryCount);
    expect(result.entries.length).toBeGreaterThan(0);
    for (const entry of result.entries) {
      expect(entry.startDate).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(entry.endTime > entry.beginTime).toBe(true);
      expect(entry.groups.length).toBeGreaterThan(0);
    }
  });

  it('fetches an employee timetable by a teacher id from a group timetable', async () => {
    const { entries } = await client.groupSchedule(String(groupId));
    const teacherId = entries.find((e) => e.teacher.id !== null)?.teacher.id ?? 0;
    const result = await client.employeeSchedule(teacherId);
    expect(result.entries.length).toBeGreaterThan(0);
    expect(result.entries.every((e) => e.teacher.id === teacherId)).toBe(true);
  });

  it('maps an unknown group to UpstreamNotFoundError with the upstream text, without retrying', async () => {
    const error = await client.groupSchedule(987_654_321).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamNotFoundError);
    expect(error).toMatchObject({ status: 404, retryable: false, attempts: 1 });
    expect((error as Error).message).toContain('groupSchedule');
    expect((error as UpstreamHttpError).upstreamMessage).toMatch(/не найден/);
    expect((await control.stats()).byEndpoint.groupSchedule).toBe(1);
  });

  it.each([0, -1, 1.5, '4a', '../x', ''])('rejects id %j before any request', async (bad) => {
    await expect(client.groupSchedule(bad)).rejects.toBeInstanceOf(InvalidIdError);
    await expect(client.employeeSchedule(bad)).rejects.toMatchObject({ name: 'InvalidIdError', field: 'employeeId' });
    expect((await control.stats()).total).toBe(0);
  });
});

describe('employee search', () => {
  it('returns one employee (a users object) as a one-element array', async () => {
    const [employee] = await control.employees();
    if (!employee) throw new Error('no employees');
    const q = `${employee.lastName} ${employee.firstName} ${employee.middleName}`;
    const raw = await control.raw(`/employees?q=${encodeURIComponent(q)}`);
    expect(Array.isArray((raw.body as { users: unknown }).users)).toBe(false);
    const found = await client.searchEmployees(q);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ id: employee.id, lastName: employee.lastName, firstName: employee.firstName });
  });

  it('returns several employees as an array', async () => {
    const raw = await control.raw(`/employees?q=${encodeURIComponent('а')}`);
    expect(Array.isArray((raw.body as { users: unknown }).users)).toBe(true);
    const found = await client.searchEmployees('а');
    expect(found.length).toBeGreaterThan(1);
    expect(found.length).toBe((raw.body as { users: unknown[] }).users.length);
    expect(new Set(found.map((e) => e.id)).size).toBe(found.length);
  });

  it('returns [] when nothing matches', async () => {
    await expect(client.searchEmployees('Zzyzx-nobody-0000')).resolves.toEqual([]);
  });

  it('maps a missing q to an HTTP error carrying the upstream text, not retried', async () => {
    const raw = await control.raw('/employees');
    expect(raw.status).toBe(400);
    await control.clearStats();
    // The client always sends q; an empty one (`q=`) is what a caller can do, and the simulator treats it as missing.
    const error = await client.searchEmployees('  ').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamHttpError);
    expect(error).toMatchObject({ status: 400, upstreamMessage: (raw.body as { error: string }).error });
    expect((error as Error).message).toContain((raw.body as { error: string }).error);
    expect((await control.stats()).byEndpoint.employeeSearch).toBe(1);
  });
});

describe('the authorised user', () => {
  it('returns the default profile fields', async () => {
    const user = await client.me(token);
    expect(Object.keys(user).sort()).toEqual(['firstName', 'id', 'lastName', 'username']);
    expect(user.id).toBeGreaterThan(0);
  });

  it('returns selected fields, nested group included', async () => {
    const user = await client.me(token, { id: true, gender: true, studentId: true, group: { id: true, name: true } });
    expect(Object.keys(user).sort()).toEqual(['gender', 'group', 'id', 'studentId']);
    expect(user.group?.id).toBe(groupId);
    expect(Object.keys(user.group ?? {}).sort()).toEqual(['id', 'name']);
    const whole = await client.me(token, { group: true });
    expect(whole.group).toMatchObject({ id: groupId, name: user.group?.name });
    expect(typeof whole.group?.instituteName).toBe('string');
  });

  it('fetches the own timetable and study plan', async () => {
    const own = await client.mySchedule(token);
    expect(own.problems).toEqual([]);
    expect(own.entries.length).toBeGreaterThan(0);
    const plan = await client.myPlan(token);
    expect(plan.length).toBeGreaterThan(0);
    expect(plan.every((s) => s.semester > 0 && s.subjectId > 0)).toBe(true);
  });

  it.each(['me', 'mySchedule', 'myPlan'] as const)(
    '%s with a bad credential is an UpstreamAuthError, not retried',
    async (op) => {
      const error = await client[op]('not-a-valid-token').catch((err: unknown) => err);
      expect(error).toBeInstanceOf(UpstreamAuthError);
      expect(error).toMatchObject({ endpoint: op, status: 401, retryable: false });
      expect((await control.stats()).byEndpoint[op]).toBe(1);
    },
  );
});

describe('credentials stay out of logs and errors', () => {
  it('never logs or reports the credential during retries and an auth failure', async () => {
    const { logger, output } = memoryLogger();
    const { sleep } = sleepSpy();
    const logged = createUniversityClient({ baseUrl: sim.url, logger, sleep, retry: { attempts: 3 } });
    try {
      await control.fault({ endpoint: 'mySchedule', kind: 'status', status: 500, times: 2 });
      await expect(logged.mySchedule(token)).resolves.toMatchObject({ problems: [] });
      const secret = `${token}-revoked`;
      const error = await logged.mySchedule(secret).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(UpstreamAuthError);
      const errorText = `${String(error)} ${JSON.stringify(error)} ${(error as Error).stack ?? ''}`;
      expect(errorText).not.toContain(secret);
      expect(output()).not.toContain(token);
      const lines = output()
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatchObject({
        level: 40,
        endpoint: 'mySchedule',
        attempt: 1,
        error: 'UpstreamHttpError',
        status: 500,
      });
      expect(typeof lines[0]?.delayMs).toBe('number');
    } finally {
      await logged.close();
    }
  });
});

describe('custom auth header and scheme', () => {
  it('sends the bare credential in X-Api-Key', async () => {
    const auth = { authHeader: 'X-Api-Key', authScheme: '' };
    const custom = await startSimulator({ port: 0, seed: 1, referenceDate: REFERENCE_DATE, ...SMALL, ...auth });
    const right = createUniversityClient({
      baseUrl: custom.url,
      logger: silentLogger(),
      authHeader: 'X-Api-Key',
      authScheme: '',
    });
    const wrong = createUniversityClient({ baseUrl: custom.url, logger: silentLogger() });
    try {
      const [user] = await simControl(custom.url).users();
      const me = await right.me(user?.token ?? '');
      expect(me.id).toBe(user?.id);
      await expect(wrong.me(user?.token ?? '')).rejects.toBeInstanceOf(UpstreamAuthError);
    } finally {
      await Promise.all([right.close(), wrong.close()]);
      await custom.close();
    }
  });
});

describe('protocol errors from the simulator', () => {
  it('keeps success:false text on unsuccessful', async () => {
    await control.fault({ endpoint: 'groupSchedule', kind: 'unsuccessful', error: 'База данных недоступна' });
    const error = await client.groupSchedule(groupId).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamProtocolError);
    expect(error).toMatchObject({ reason: 'unsuccessful', upstreamMessage: 'База данных недоступна' });
    expect((error as Error).message).toContain('База данных недоступна');
    expect((await control.stats()).byEndpoint.groupSchedule).toBe(1);
  });
});
