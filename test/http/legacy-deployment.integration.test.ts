/**
 * The running service (API + real workers) against a university that answers like real deployments of the
 * older API (the simulator's legacy dialect: windows-1251, no `success`, numbers as strings, HH.MM times,
 * DD.MM.YYYY dates, the `employees` search, profiles with nulls, the group's id included).
 */
import ICAL from 'ical.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { readEvents, waitForJob } from '../jobs/helpers.ts';
import { until } from '../support/poll.ts';
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

function unfolded(ics: string): string {
  return ics.replace(/\r\n[ \t]/g, '');
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

  it('takes a 400 for a group id as an unknown group: one request, remembered, answered 404', async () => {
    await sim.clearStats();
    await sim.fault({ endpoint: 'groupSchedule', kind: 'status', status: 400, error: 'Некорректный идентификатор' });
    try {
      const first = await app.inject({ method: 'GET', url: '/feeds/groups/987654.ics' });
      expect(first.statusCode).toBe(404);
      expect(first.json<{ error: string }>().error).toContain('Некорректный идентификатор');
      const again = await app.inject({ method: 'GET', url: '/feeds/groups/987654.ics' });
      expect(again.statusCode).toBe(404);
      expect((await sim.stats()).byEndpoint.groupSchedule).toBe(1);
      expect(await ctx.registry.missingReason('group:987654')).toContain('Некорректный идентификатор');
    } finally {
      await sim.clearFaults();
    }
  });
});
