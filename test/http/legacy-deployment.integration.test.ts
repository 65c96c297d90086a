/**
 * The running service (API + real workers) against a university that answers like real deployments of the
 * older API (the simulator's legacy dialect: windows-1251, no `success`, numbers as strings, HH.MM times,
 * DD.MM.YYYY dates, the `employees` search, profiles with nulls, the group's id included, classes of several
 * groups as one row per group, control characters in text; and `legacy-unlabelled`, which names no charset).
 */
import ICAL from 'ical.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { SPLIT_ROW_ID_STEP } from '../../src/simulator/dialect.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { until } from '../../testkit/poll.ts';
import { readEvents, waitForJob } from '../jobs/helpers.ts';
import { testContext } from '../support/service.ts';
import { memoryLogger } from '../upstream/local-server.ts';
import { type SimControl, simControl } from '../upstream/sim-control.ts';

const REFERENCE_DATE = new Date('2025-10-01T00:00:00Z');
/**
 * Mojibake: windows-1251 read as UTF-8 leaves replacement characters; UTF-8 Cyrillic (lead bytes D0/D1, then
 * 80–BF) read as windows-1251 gives Р or С followed by one of the characters bytes 80–BF decode to (Ё/ё left
 * out: "Сёмин" is a name); read as Latin-1 it gives Ð or Ñ.
 */
const MOJIBAKE =
  /\ufffd|[РС][\u0402-\u040f\u0452-\u045f\u0490\u0491\u2018-\u2026\u2030\u2039\u203a\u20ac\u2116\u2122\u00a0-\u00bf]|Ð|Ñ/;

let simulator: RunningSimulator;
let sim: SimControl;
let ctx: ServiceContext;
let workers: WorkerSet;
let app: Awaited<ReturnType<typeof buildApp>>;
let closeContext: () => Promise<void>;
const log = memoryLogger();

beforeAll(async () => {
  simulator = await startSimulator({
    port: 0,
    seed: 5,
    referenceDate: REFERENCE_DATE,
    groups: 12,
    employees: 20,
    users: 3,
    dialect: 'legacy',
  });
  sim = simControl(simulator.url);
  const opened = await testContext(
    { UNIVERSITY_API_URL: simulator.url, LOG_LEVEL: 'debug' },
    { logger: log.logger, now: () => REFERENCE_DATE.getTime() },
  );
  ctx = opened.context;
  closeContext = opened.close;
  workers = await startWorkers(ctx, inject('redisUrl'), { lockDurationMs: 5_000, stalledIntervalMs: 1_000 });
  app = await buildApp(ctx, { logger: log.logger, feeds: { demandWaitMs: 10_000 } });
});
afterAll(async () => {
  await app?.close();
  await workers?.close();
  await closeContext?.();
  await simulator?.close();
});

/** Control characters RFC 5545 forbids in TEXT (all but tab; CR LF only as the line ending, checked apart). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is looked for.
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

function unfolded(ics: string): string {
  return ics.replace(/\r\n[ \t]/g, '');
}

/** An ICS body with no control character but its CRLF line endings. */
function expectNoControlCharacters(ics: string): void {
  expect(ics).not.toMatch(CONTROL);
  expect(ics.replaceAll('\r\n', '')).not.toMatch(/[\r\n]/);
}

/** Warnings that a body was read as windows-1251 without a label, per endpoint. */
function fallbackWarnings(): string[] {
  return log
    .output()
    .split('\n')
    .filter((line) => line.includes('university API body read as windows-1251'))
    .map((line) => (JSON.parse(line) as { endpoint: string }).endpoint);
}

/**
 * A teacher of a class sent as one row per group, the class's id (its first row's) and every group's name, as
 * the university sends them (read directly, not through the service).
 */
async function sharedClass(): Promise<{ teacherId: number; classId: number; groups: string[] }> {
  for (const employee of await sim.employees()) {
    const { entries } = await ctx.upstream.employeeSchedule(employee.id);
    const split = entries.find((entry) => entry.id > SPLIT_ROW_ID_STEP);
    if (split === undefined) continue;
    const classId = split.id % SPLIT_ROW_ID_STEP;
    const rows = entries.filter((entry) => entry.id % SPLIT_ROW_ID_STEP === classId).sort((a, b) => a.id - b.id);
    expect(rows.every((row) => row.groups.length === 1)).toBe(true);
    return { teacherId: employee.id, classId, groups: rows.flatMap((row) => row.groups) };
  }
  throw new Error('the simulator sent no class as one row per group');
}

describe('against a legacy deployment', () => {
  it('serves a group feed with the timetable read right, in readable Cyrillic', async () => {
    const [group] = await sim.groups();
    if (!group) throw new Error('the simulator has no groups');
    const feed = await app.inject({ method: 'GET', url: `/feeds/groups/${group.id}.ics` });
    expect(feed.statusCode).toBe(200);
    const body = unfolded(feed.body);
    expect(body).not.toMatch(MOJIBAKE);
    const events = new ICAL.Component(ICAL.parse(feed.body)).getAllSubcomponents('vevent');
    expect(events.length).toBeGreaterThan(0);
    const summaries = events.map((event) => String(event.getFirstPropertyValue('summary')));
    expect(summaries.every((summary) => /[А-Яа-яЁё]/.test(summary))).toBe(true);
    // The timetable, as the API serves it to us, read through the same client: every entry became events.
    const { entries, problems } = await ctx.upstream.groupSchedule(group.id);
    expect(problems).toEqual([]);
    expect(entries.every((entry) => /^\d{2}:\d{2}$/.test(entry.beginTime))).toBe(true);
    for (const entry of entries.slice(0, 5)) expect(body).toContain(entry.subjectName.slice(0, 20));
    // The university said windows-1251 in Content-Type: nothing to warn about.
    expect(log.output()).not.toContain('university API body read as windows-1251');
    // Its text held control characters (a bell, a vertical tab): none reached the feed.
    const sent = await (await fetch(`${simulator.url}/groups/${group.id}/schedule`)).text();
    expect(sent).toMatch(/\\u0007|\\u000b/);
    expectNoControlCharacters(feed.body);
  });

  it("shows a class sent as one row per group once in the teacher's feed, listing every group", async () => {
    const { teacherId, classId, groups } = await sharedClass();
    expect(groups.length).toBeGreaterThan(1);
    const feed = await app.inject({ method: 'GET', url: `/feeds/employees/${teacherId}.ics` });
    expect(feed.statusCode).toBe(200);
    expectNoControlCharacters(feed.body);
    const events = new ICAL.Component(ICAL.parse(feed.body)).getAllSubcomponents('vevent').map((vevent) => ({
      uid: String(vevent.getFirstPropertyValue('uid')),
      start: String(vevent.getFirstPropertyValue('dtstart')),
      description: String(vevent.getFirstPropertyValue('description')),
    }));
    const ofClass = events.filter((event) => event.uid.startsWith(`${classId}-`));
    expect(ofClass.length).toBeGreaterThan(0);
    for (const event of ofClass) {
      expect(event.description).toContain(`Группы: ${groups.join(', ')}`);
      // One event at that time, not one per group's row.
      expect(events.filter((other) => other.start === event.start)).toHaveLength(1);
    }
    // No event comes from the other groups' rows.
    const rowIds = new Set(groups.map((_, index) => String(classId + index * SPLIT_ROW_ID_STEP)));
    rowIds.delete(String(classId));
    expect(events.filter((event) => rowIds.has(event.uid.split('-')[0] ?? ''))).toEqual([]);
  });

  it('finds teachers through /api/employees?q= from the employees answer', async () => {
    const [employee] = await sim.employees();
    if (!employee) throw new Error('the simulator has no employees');
    const found = await app.inject({ method: 'GET', url: `/api/employees?q=${encodeURIComponent(employee.lastName)}` });
    expect(found.statusCode).toBe(200);
    const { employees } = found.json<{ employees: { id: number; lastName: string; firstName: string }[] }>();
    expect(employees).toContainEqual(
      expect.objectContaining({ id: employee.id, lastName: employee.lastName, firstName: employee.firstName }),
    );
    expect(JSON.stringify(employees)).not.toMatch(MOJIBAKE);
  });

  it('signs up a user whose profile has nulls (the group id too) and publishes the personal feed', async () => {
    const [user] = await sim.users();
    if (!user) throw new Error('the simulator has no users');
    const created = await app.inject({
      method: 'POST',
      url: '/api/subscriptions',
      payload: { credential: user.token },
    });
    expect(created.statusCode).toBe(201);
    const { source, feedUrl, name } = created.json<Record<string, string>>();
    expect(name).toMatch(/^Расписание: [А-ЯЁ]/);
    expect(name).not.toMatch(MOJIBAKE);
    const queued = await until(
      async () =>
        (await ctx.queues.refresh.getJobs(['waiting', 'delayed', 'prioritized', 'active', 'completed'])).find(
          (job) => job.data.source === source,
        ),
      (job) => job?.id !== undefined,
      10_000,
    );
    expect((await waitForJob(ctx, queued?.id ?? '')).state).toBe('completed');
    const feed = await app.inject({ method: 'GET', url: new URL(feedUrl ?? '').pathname });
    expect(feed.statusCode).toBe(200);
    expect(unfolded(feed.body)).not.toMatch(MOJIBAKE);
    expect(readEvents(feed.body).length).toBeGreaterThan(0);
  });

  it('reads windows-1251 sent without a charset without mojibake, warning once per endpoint', async () => {
    const [, second, third] = await sim.groups();
    if (!second || !third) throw new Error('the simulator has too few groups');
    await sim.raw('/_sim/dialect', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ dialect: 'legacy-unlabelled' }),
    });
    try {
      const labelless = await fetch(`${simulator.url}/groups/${second.id}/schedule`);
      expect(labelless.headers.get('content-type')).toBe('application/json');
      for (const group of [second, third]) {
        const feed = await app.inject({ method: 'GET', url: `/feeds/groups/${group.id}.ics` });
        expect(feed.statusCode).toBe(200);
        const body = unfolded(feed.body);
        expect(body).not.toMatch(MOJIBAKE);
        expect(body).toMatch(/SUMMARY:[А-ЯЁа-яё]/);
        expect(body).toContain(`X-WR-CALNAME:${group.name}`);
        expectNoControlCharacters(feed.body);
      }
      // Two group timetables read, one warning for their endpoint. Background refreshes of earlier tests' teacher
      // or personal sources may read other endpoints meanwhile; each of those warns once too, never twice.
      const warned = fallbackWarnings();
      expect(warned.filter((endpoint) => endpoint === 'groupSchedule')).toEqual(['groupSchedule']);
      expect(new Set(warned).size).toBe(warned.length);
    } finally {
      await sim.raw('/_sim/dialect', {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ dialect: 'legacy' }),
      });
    }
  });

  it('takes a 400 for a group id as an unknown group: one request, remembered, answered 404', async () => {
    await sim.clearStats();
    await sim.fault({ endpoint: 'groupSchedule', kind: 'status', status: 400, error: 'Некорректный идентификатор' });
    try {
      const first = await app.inject({ method: 'GET', url: '/feeds/groups/987654.ics' });
      expect(first.statusCode).toBe(404);
      expect(first.json<{ error: string }>().error).toContain('Некорректный идентификатор');
      const again = await app.inject({ method: 'GET', url: '/feeds/groups/987654.ics' });
      expect(again.statusCode).toBe(404);
      // Counted for this id alone: the groups of earlier tests are active sources, refreshed on their schedule.
      const path = '/groups/987654/schedule';
      expect((await sim.stats(path)).byPath?.[path]).toBe(1);
      expect(await ctx.registry.missingReason('group:987654')).toContain('Некорректный идентификатор');
    } finally {
      await sim.clearFaults();
    }
  });

  it('takes a 400 for a teacher id as an unknown teacher: one request, remembered, answered 404', async () => {
    await sim.clearStats();
    await sim.fault({ endpoint: 'employeeSchedule', kind: 'status', status: 400, error: 'Некорректный идентификатор' });
    try {
      const first = await app.inject({ method: 'GET', url: '/feeds/employees/876543.ics' });
      expect(first.statusCode).toBe(404);
      expect(first.json<{ error: string }>().error).toContain('Некорректный идентификатор');
      const again = await app.inject({ method: 'GET', url: '/feeds/employees/876543.ics' });
      expect(again.statusCode).toBe(404);
      // Counted for this id alone: the teacher of an earlier test is an active source, refreshed on its schedule.
      const path = '/employees/876543/schedule';
      expect((await sim.stats(path)).byPath?.[path]).toBe(1);
      expect(await ctx.registry.missingReason('employee:876543')).toContain('Некорректный идентификатор');
    } finally {
      await sim.clearFaults();
    }
  });
});
