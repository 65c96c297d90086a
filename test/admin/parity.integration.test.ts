/**
 * One parity per deployment, through the running service: no WEEK_PARITY_ANCHORS, a university whose 2018/19
 * timetables start on Saturday 1 September 2018 and Monday 4 February 2019. The worker counts every timetable
 * it publishes; feeds and `GET /admin/parity` follow the inferred term starts.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { RefreshJobResult } from '../../src/jobs/contract.ts';
import { enqueueRefresh } from '../../src/jobs/queues.ts';
import { forgetSource, seedTermCounts } from '../../src/jobs/term-starts.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { until } from '../../testkit/poll.ts';
import { readEvents, waitForJob } from '../jobs/helpers.ts';
import { testContext } from '../support/service.ts';
import { icsOf } from '../support/stored-feed.ts';
import { type SimControl, simControl } from '../upstream/sim-control.ts';
import { adminApp, BEARER } from './admin-app.ts';

const DAY = 86_400_000;
/** Before the 2018/19 year: nothing has happened yet, so every occurrence is still in the feeds. */
const NOW = Date.UTC(2018, 7, 1);

let simulator: RunningSimulator;
let sim: SimControl;
let ctx: ServiceContext;
let closeContext: () => Promise<void>;
let workers: WorkerSet;
let app: FastifyInstance;
let groupA: number;
let groupB: number;
let groupC: number;
let employees: number[];
let teacher: number;
let springTuesday: number;

async function refresh(source: string): Promise<RefreshJobResult> {
  const id = await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'resync', now: NOW });
  const job = await waitForJob(ctx, id);
  if (job.state !== 'completed') throw new Error(`refresh of ${source} ${job.state}: ${job.failedReason}`);
  return job.result as RefreshJobResult;
}

/** Waits until no refresh (re-renders included) is queued or running. */
async function idle(): Promise<void> {
  const counts = await until(
    () => ctx.queues.refresh.getJobCounts('active', 'waiting', 'delayed', 'prioritized'),
    (found) => Object.values(found).every((count) => count === 0),
  );
  expect(counts).toEqual({ active: 0, waiting: 0, delayed: 0, prioritized: 0 });
}

/** Each upstream entry once (by id), counted by start date: what the deployment's totals must be. */
async function distinctTotals(sources: string[]): Promise<Map<string, number>> {
  const entries = new Map<number, string>();
  for (const source of sources) {
    const [kind, id] = source.split(':');
    const { entries: fetched } =
      kind === 'group' ? await ctx.upstream.groupSchedule(Number(id)) : await ctx.upstream.employeeSchedule(Number(id));
    for (const entry of fetched) if (!entries.has(entry.id)) entries.set(entry.id, entry.startDate);
  }
  const totals = new Map<string, number>();
  for (const date of entries.values()) totals.set(date, (totals.get(date) ?? 0) + 1);
  return totals;
}

/** Every stored feed's term starts, as its publication recorded them. */
async function renderedTermStarts(sources: string[]): Promise<(readonly string[] | undefined)[]> {
  return Promise.all(
    sources.map(async (source) => (await ctx.snapshots.load(source)).published?.expansion?.termStarts),
  );
}

async function feedDates(source: string, entryId: number): Promise<string[]> {
  const feed = await ctx.feeds.get(source);
  return readEvents(icsOf(feed))
    .filter((event) => event.uid.startsWith(`${entryId}-`))
    .map((event) => event.uid.slice(`${entryId}-`.length, `${entryId}-`.length + 8))
    .map((day) => `${day.slice(0, 4)}-${day.slice(4, 6)}-${day.slice(6, 8)}`)
    .sort();
}

/** A copy of one of the group's autumn classes, moved to spring 2019 (or wherever `fields` say). */
async function addClass(template: Record<string, unknown>, fields: Record<string, unknown>): Promise<number> {
  const { id: _id, ...rest } = template;
  return (await sim.addEntry({ ...rest, ...fields })).id;
}

beforeAll(async () => {
  simulator = await startSimulator({
    port: 0,
    seed: 11,
    referenceDate: new Date('2018-10-01T00:00:00Z'),
    groups: 4,
    employees: 6,
    users: 0,
  });
  sim = simControl(simulator.url);
  const groups = await sim.groups();
  [groupA, groupB, groupC] = groups.map((group) => group.id) as [number, number, number];
  employees = (await sim.employees()).map((employee) => employee.id);
  const opened = await testContext({ UNIVERSITY_API_URL: simulator.url }, { now: () => NOW });
  ctx = opened.context;
  closeContext = opened.close;
  workers = await startWorkers(ctx, inject('redisUrl'), { lockDurationMs: 5_000, stalledIntervalMs: 1_000 });
  // No scheduled refreshes: the tests count upstream requests. The service's clock stands in 2018, BullMQ's runs
  // on the wall clock, so the tick scheduler the reconciler gives a source on its first refresh (about a second
  // later) starts years overdue and would fetch the source at once.
  await ctx.queues.schedule.pause();
  app = await adminApp(ctx);
});
afterAll(async () => {
  await app?.close();
  await workers?.close();
  await closeContext?.();
  await simulator?.close();
});

describe('week parity inferred for the whole deployment (2018/19)', () => {
  it('starts from 1 September 2018 with week 1 on Monday 3 September', async () => {
    expect(await refresh(`group:${groupA}`)).toMatchObject({ outcome: 'published' });
    const { entries } = await ctx.upstream.groupSchedule(groupA);
    expect(entries.filter((entry) => entry.startDate === '2018-09-01').length).toBeGreaterThan(entries.length / 2);
    const week1 = Date.UTC(2018, 8, 3);
    for (const entry of entries.filter((one) => one.weekType !== 0)) {
      const dates = await feedDates(`group:${groupA}`, entry.id);
      expect(dates.length).toBeGreaterThan(0);
      for (const date of dates) {
        const week = Math.floor((Date.parse(date) - week1) / (7 * DAY)) + 1;
        expect(Math.abs(week) % 2 === 1).toBe(entry.weekType === 1);
      }
    }
  });

  it('restarts on 4 February 2019 once spring timetables appear, in every feed, a sparse teacher’s too', async () => {
    const template = (await sim.raw(`/_sim/entries/${(await ctx.upstream.groupSchedule(groupA)).entries[0]?.id}`))
      .body as Record<string, unknown>;
    const spring = { start_day_schedule: '04.02.19', finish_day_schedule: '31.05.19', groupIds: [groupB] };
    springTuesday = await addClass(template, { ...spring, day_week_schedule: 2, type_week_schedule: 1 });
    for (const weekday of [1, 3, 4, 5]) await addClass(template, { ...spring, day_week_schedule: weekday });
    // A teacher whose only spring classes start on 12 March: alone, they would restart parity there. Their
    // group (C) is never refreshed, so only the teacher's timetable counts them.
    teacher = employees.find((id) => id !== Number(template.teacher_id)) as number;
    const late = {
      start_day_schedule: '12.03.19',
      finish_day_schedule: '31.05.19',
      teacher_id: teacher,
      subject_name: 'Факультатив',
      groupIds: [groupC],
    };
    const teacherTuesday = await addClass(template, { ...late, day_week_schedule: 2, type_week_schedule: 1 });
    await addClass(template, { ...late, day_week_schedule: 4, type_week_schedule: 1 });

    await sim.clearStats();
    expect(await refresh(`group:${groupB}`)).toMatchObject({ outcome: 'published' });
    expect(await feedDates(`group:${groupB}`, springTuesday)).toEqual([
      '2019-02-05',
      '2019-02-19',
      '2019-03-05',
      '2019-03-19',
      '2019-04-02',
      '2019-04-16',
      '2019-04-30',
      '2019-05-14',
      '2019-05-28',
    ]);
    expect(await refresh(`employee:${teacher}`)).toMatchObject({ outcome: 'published' });
    // Week 7 of the spring count begins Monday 18 March: odd Tuesdays are 19 March, 2 April, … (not 12 March).
    expect((await feedDates(`employee:${teacher}`, teacherTuesday)).slice(0, 3)).toEqual([
      '2019-03-19',
      '2019-04-02',
      '2019-04-16',
    ]);

    // Group A is not refreshed: the change of term starts re-renders its stored timetable, asking nothing upstream.
    await idle();
    const { published } = await ctx.snapshots.load(`group:${groupA}`);
    expect(published?.expansion?.termStarts).toEqual(['2018-09-01', '2019-02-04']);
    expect((await sim.stats()).byEndpoint).toMatchObject({ groupSchedule: 1, employeeSchedule: 1 });
    expect((await ctx.termCounts.stored())?.termStarts.map((term) => term.date)).toEqual(['2018-09-01', '2019-02-04']);
    expect((await refresh(`group:${groupA}`)).outcome).toBe('unchanged');
  });

  it('GET /admin/parity shows the term starts, inferred from how many entries, and the weeks each covers', async () => {
    expect((await app.inject({ method: 'GET', url: '/admin/parity' })).statusCode).toBe(401);
    const response = await app.inject({ method: 'GET', url: '/admin/parity', headers: BEARER });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.source).toBe('inferred');
    expect(body.termStarts).toHaveLength(2);
    const [autumn, spring] = body.termStarts;
    expect(autumn).toMatchObject({
      date: '2018-09-01',
      source: 'inferred',
      firstWeek: '2018-09-03',
      firstDate: '2018-09-01',
      lastDate: '2019-02-03',
      weeks: 22,
    });
    expect(autumn.from).toMatch(/^inferred from \d+ of \d+ entries starting July–December 2018$/);
    // Group B's five spring classes; the teacher's two from 12 March are the other two of the half-year.
    expect(spring).toMatchObject({ date: '2019-02-04', source: 'inferred', entries: 5, firstWeek: '2019-02-04' });
    expect(spring.from).toBe('inferred from 5 of 7 entries starting January–June 2019');
    expect(spring.lastDate).toBeUndefined();
    expect(spring).toMatchObject({ openEnded: true, covers: 'every date from 2019-02-04 on' });
    expect(autumn.covers).toBe('2018-09-01 to 2019-02-03, 22 weeks');
    // What is stored in force, and the distinct entries behind it.
    expect(body.stored).toBe(true);
    expect(body.counts['2019-02-04']).toBe(5);
    expect(body.counts['2019-03-12']).toBe(2);
    expect(body.counts['2018-09-01']).toBe(autumn.entries);
  });

  it('counts an upstream entry once, however many timetables (a group and its teacher) hold it', async () => {
    const shared = `employee:${(await ctx.upstream.groupSchedule(groupA)).entries[0]?.teacher.id}`;
    const sources = [`group:${groupA}`, `group:${groupB}`, `employee:${teacher}`];
    expect(await ctx.termCounts.totals()).toEqual(await distinctTotals(sources));
    expect(await refresh(shared)).toMatchObject({ outcome: 'published' });
    // Group A's classes of that teacher are in both timetables, and still count once.
    expect(await ctx.termCounts.totals()).toEqual(await distinctTotals([...sources, shared]));
    await ctx.registry.remove(shared);
    expect(await ctx.termCounts.totals()).toEqual(await distinctTotals(sources));
    await idle();
  });

  it('ends on the right counts and one parity when different sources publish at once', async () => {
    const sources = [`group:${groupA}`, `group:${groupB}`, `employee:${teacher}`];
    const before = await ctx.termCounts.totals();
    // Without their published state, each refresh publishes in full: counts, commit and term starts race.
    await ctx.redis.del(...sources.map((source) => ctx.keys.published(source)));
    const results = await Promise.all(sources.map(refresh));
    expect(results.map((result) => result.outcome)).toEqual(['published', 'published', 'published']);
    await idle();
    expect(await ctx.termCounts.totals()).toEqual(before);
    const stored = (await ctx.termCounts.stored())?.termStarts.map((term) => term.date);
    expect(stored).toEqual(['2018-09-01', '2019-02-04']);
    expect(await renderedTermStarts(sources)).toEqual([stored, stored, stored]);
  });

  it('rebuilds lost counts from the stored timetables before a sparse teacher can decide alone', async () => {
    const before = await ctx.termCounts.totals();
    const keys = ctx.keys;
    await ctx.redis.del(keys.termCounts, keys.sourceTermCounts, keys.termEntryRefs, keys.termCountsVersion);
    // Alone, the teacher's two spring classes would make 12 March 2019 the spring term start.
    await ctx.redis.del(keys.published(`employee:${teacher}`));
    expect(await seedTermCounts(ctx)).toBe(3);
    expect(await ctx.termCounts.totals()).toEqual(before);
    expect(await seedTermCounts(ctx)).toBe(0);
    expect(await refresh(`employee:${teacher}`)).toMatchObject({ outcome: 'published' });
    expect(await renderedTermStarts([`employee:${teacher}`])).toEqual([['2018-09-01', '2019-02-04']]);
  });

  it('counts a timetable again on an unchanged refresh when its counts are missing', async () => {
    const before = await ctx.termCounts.totals();
    await ctx.termCounts.write(ctx.redis.multi(), `group:${groupB}`, []).exec();
    expect(await ctx.termCounts.counts(`group:${groupB}`)).toBe(false);
    expect(await refresh(`group:${groupB}`)).toMatchObject({ outcome: 'unchanged' });
    expect(await ctx.termCounts.counts(`group:${groupB}`)).toBe(true);
    expect(await ctx.termCounts.totals()).toEqual(before);
    await idle();
  });

  it('forgets a removed source, and the term starts follow at once', async () => {
    const before = await ctx.termCounts.totals();
    await sim.clearStats();
    await forgetSource(ctx, `group:${groupB}`, ctx.logger);
    const after = await ctx.termCounts.totals();
    expect(after.get('2019-02-04')).toBeUndefined();
    expect(after.get('2019-03-12')).toBe(before.get('2019-03-12'));
    // Spring now starts on 12 March, the teacher's: its feed is re-rendered from its snapshot, nothing fetched.
    await idle();
    expect(await renderedTermStarts([`employee:${teacher}`])).toEqual([['2018-09-01', '2019-03-12']]);
    expect((await sim.stats()).total).toBe(0);
  });
});
