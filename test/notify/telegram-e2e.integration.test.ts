/**
 * Change notifications in Telegram end to end: the service's api and worker roles as child processes (the real
 * composition root: routes, workers, the poller), the university simulator (its semester around today, so that
 * classes are upcoming on the wall clock BullMQ and the workers use), the fake Bot API, real Redis. A person
 * follows the page's link, says /start to the bot, and a room changed upstream reaches them once: not on a
 * refresh without change, not twice around a worker killed with SIGKILL, not after /stop, not to a chat that
 * blocked the bot, and not in quiet hours (until they end).
 */
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { freePort } from '../../src/runtime/embedded-redis.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import type { TimetableEntry } from '../../src/timetable/types.ts';
import { type FakeTelegram, startFakeTelegram } from '../../testkit/fake-telegram/index.ts';
import { until, waitUntil } from '../../testkit/poll.ts';
import { type RoleProcess as Role, startRoleProcess } from '../../testkit/processes.ts';
import { resyncAndWait } from '../support/jobs.ts';
import { TEST_ADMIN_TOKEN, TEST_SECRET_KEY, testContext, uniquePrefix } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';

const SCRIPT = resolve(import.meta.dirname, 'support/service-process.ts');
const DAY = 86_400_000;
const CHANGE_HEADER = 'изменения в расписании';

let sim: RunningSimulator;
let telegram: FakeTelegram;
let ctx: ServiceContext;
let closeContext: () => Promise<void>;
let api: Role;
let worker: Role | undefined;
let env: Record<string, string>;
const roles: Role[] = [];

async function startRole(role: 'api' | 'worker', extra: Record<string, string> = {}): Promise<Role> {
  const started = await startRoleProcess(SCRIPT, role, { ...env, ...extra });
  roles.push(started);
  return started;
}

async function stopRole(role: Role | undefined, signal?: NodeJS.Signals): Promise<void> {
  await role?.stop(signal);
}

/** Asks the api for a resync of `source` and waits for the refresh to complete. */
async function resync(source: string): Promise<void> {
  await resyncAndWait(api.url, TEST_ADMIN_TOKEN, ctx.queues.refresh, source);
}

/** Changes an entry in the simulator. */
async function patchEntry(id: number, fields: Record<string, unknown>): Promise<void> {
  await simControl(sim.url).patchEntry(id, fields);
}

/** The change messages a chat got (not the bot's answers to commands). */
function changeMessages(chatId: number): string[] {
  return telegram
    .messages(chatId)
    .map((message) => message.text)
    .filter((text) => text.includes(CHANGE_HEADER));
}

/** The bot's answers to a chat, oldest first. */
function answers(chatId: number): string[] {
  return telegram
    .messages(chatId)
    .map((message) => message.text)
    .filter((text) => !text.includes(CHANGE_HEADER));
}

/** Says `text` to the bot and waits for its answer. */
async function say(chatId: number, text: string): Promise<string> {
  const before = answers(chatId).length;
  telegram.userSays(chatId, text);
  await waitUntil(() => answers(chatId).length > before, `the bot's answer to "${text}"`, 20_000);
  return answers(chatId).at(-1) as string;
}

/** Waits until nothing is left to do: no fan-out or send job waiting or active, the outbox empty. */
async function settled(): Promise<void> {
  await waitUntil(
    async () => {
      const [notify, sends, outbox] = await Promise.all([
        // Not delayed: the sweeper's next run always waits there.
        ctx.queues.notify.getJobCounts('waiting', 'active', 'prioritized'),
        ctx.queues.telegram.getJobCounts('waiting', 'active', 'prioritized'),
        ctx.notify.outbox.size(),
      ]);
      return Object.values(notify).every((n) => n === 0) && Object.values(sends).every((n) => n === 0) && outbox === 0;
    },
    'the notifications to settle',
    30_000,
  );
}

/** Today's ISO weekday (1 = Monday) in `zone`. */
function isoWeekday(zone: string): number {
  const name = new Intl.DateTimeFormat('en-US', { weekday: 'short', timeZone: zone }).format(new Date());
  return ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'].indexOf(name) + 1;
}

let groupId: number;
let source: string;
/** A weekly class of the group whose next meetings are within the horizon. */
let entry: TimetableEntry;
let room = 2200;
const nextRoom = () => String(++room);

/** An HTML attribute's value as the browser reads it (the templates escape `=` and `&` too). */
function decodeAttribute(value: string): string {
  return value
    .replace(/&#x([0-9a-f]+);/gi, (_, hex: string) => String.fromCodePoint(Number.parseInt(hex, 16)))
    .replace(/&#(\d+);/g, (_, decimal: string) => String.fromCodePoint(Number(decimal)))
    .replaceAll('&quot;', '"')
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');
}

/** The `/start` payload the group page's «Уведомления в Telegram» link leads to. */
async function payloadFromPage(): Promise<string> {
  const page = await fetch(`${api.url}/timetables/groups/${groupId}`);
  expect(page.status).toBe(200);
  const html = await page.text();
  expect(html).toContain('Уведомления в Telegram');
  const href = /href="([^"]*\/telegram\/start[^"]*)"/.exec(html)?.[1];
  if (!href) throw new Error('no Telegram link on the page');
  const link = new URL(decodeAttribute(href), api.url);
  const redirect = await fetch(link, { redirect: 'manual' });
  if (redirect.status !== 303) throw new Error(`${link.href}: ${redirect.status} ${await redirect.text()}`);
  const target = new URL(redirect.headers.get('location') ?? '');
  expect(`${target.origin}${target.pathname}`).toBe(`https://t.me/${telegram.username}`);
  const payload = target.searchParams.get('start') ?? '';
  expect(payload).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  return payload;
}

beforeAll(async () => {
  sim = await startSimulator({ port: 0, seed: 29, referenceDate: new Date(), groups: 6, employees: 6, users: 2 });
  telegram = await startFakeTelegram({ username: 'timetable_e2e_bot' });
  const prefix = uniquePrefix('tg-e2e');
  const apiPort = String(await freePort());
  env = {
    REDIS_URL: inject('redisUrl'),
    REDIS_PREFIX: prefix,
    UNIVERSITY_API_URL: sim.url,
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    SECRET_KEY: TEST_SECRET_KEY,
    LOG_LEVEL: 'warn',
    PUBLIC_URL: `http://127.0.0.1:${apiPort}`,
    REFRESH_INTERVAL: '12h',
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    TELEGRAM_POLL_LOCK: '3s',
    NOTIFY_QUIET_HOURS: 'off',
  };
  const opened = await testContext(env);
  ctx = opened.context;
  closeContext = opened.close;
  api = await startRole('api', { PORT: apiPort });
  worker = await startRole('worker');
  // A group with a weekly class (no subgroup) running for at least two more weeks, on another weekday than today.
  const today = new Date().toISOString().slice(0, 10);
  const todayIso = isoWeekday(ctx.config.timezone);
  const later = new Date(Date.now() + 15 * DAY).toISOString().slice(0, 10);
  const { groups } = (await (await fetch(`${sim.url}/_sim/groups`)).json()) as { groups: { id: number }[] };
  for (const group of groups) {
    const { entries } = await ctx.upstream.groupSchedule(group.id);
    const weekly = entries.find(
      (e) =>
        e.weekType === 0 && e.note === '' && e.weekday !== todayIso && e.startDate <= today && e.finishDate >= later,
    );
    if (weekly) {
      groupId = group.id;
      entry = weekly;
      break;
    }
  }
  if (!entry) throw new Error('no group with a weekly class running two more weeks');
  source = `group:${groupId}`;
  await resync(source);
}, 90_000);

afterAll(async () => {
  for (const role of roles) await stopRole(role);
  await closeContext?.();
  await telegram?.close();
  await sim?.close();
});

describe('Telegram change notifications through the running service', () => {
  const chat = 5001;

  it("follows the page's link with /start, then tells a room change once and a refresh without change not at all", async () => {
    const payload = await payloadFromPage();
    const answer = await say(chat, `/start ${payload}`);
    expect(answer).toContain('Вы подписаны');
    const newRoom = nextRoom();
    await patchEntry(entry.id, { num_auditorium_schedule: newRoom });
    await resync(source);
    await waitUntil(() => changeMessages(chat).length === 1, 'the change message', 20_000);
    const [message] = changeMessages(chat);
    expect(message).toContain(entry.subjectName);
    expect(message).toContain(`→ ${newRoom}`);
    // Nothing more comes of it.
    await new Promise((wake) => setTimeout(wake, 3_000));
    await settled();
    expect(changeMessages(chat)).toHaveLength(1);
    // A refresh that finds nothing new tells nothing.
    await resync(source);
    await new Promise((wake) => setTimeout(wake, 2_000));
    await settled();
    expect(changeMessages(chat)).toHaveLength(1);
  }, 60_000);

  it('tells a change once when the worker is killed while Telegram holds the send', async () => {
    const before = changeMessages(chat).length;
    telegram.fault({ method: 'sendMessage', kind: 'stall', chatId: chat });
    const newRoom = nextRoom();
    await patchEntry(entry.id, { num_auditorium_schedule: newRoom });
    await resync(source);
    await waitUntil(() => telegram.stalledCount() === 1, 'the send to be held', 20_000);
    await stopRole(worker, 'SIGKILL');
    // Its connection is gone: the held request was never answered, so Telegram sent nothing.
    await waitUntil(() => telegram.stalledCount() === 0, "the fake to see the killed worker's connection close");
    telegram.release();
    expect(changeMessages(chat)).toHaveLength(before);
    worker = await startRole('worker');
    await waitUntil(() => changeMessages(chat).length === before + 1, 'the message after the restart', 30_000);
    await new Promise((wake) => setTimeout(wake, 3_000));
    await settled();
    const told = changeMessages(chat).slice(before);
    expect(told).toHaveLength(1);
    expect(told[0]).toContain(`→ ${newRoom}`);
  }, 90_000);

  it('tells a change once when the worker is killed right after the publication (the outbox keeps it)', async () => {
    const before = changeMessages(chat).length;
    // The worker may get as far as sending before the kill lands. Telegram must not answer that send: a kill after
    // its 200 and before the delivery's record says `sent` is the one round trip in which a repeat is preferred to
    // a loss (jobs/channel-send.ts), which is not what this test is about. The send, if it starts, is held.
    telegram.fault({ method: 'sendMessage', kind: 'stall', chatId: chat });
    const newRoom = nextRoom();
    await patchEntry(entry.id, { num_auditorium_schedule: newRoom });
    const response = await fetch(`${api.url}/admin/resync`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ source }),
    });
    expect(response.status).toBe(202);
    // Kill the worker as soon as the change set is in the outbox (the publication's transaction).
    await until(
      () => ctx.notify.outbox.size(),
      (size) => size > 0 || telegram.stalledCount() > 0 || changeMessages(chat).length > before,
      20_000,
    );
    await stopRole(worker, 'SIGKILL');
    // A send held at the kill is dropped with the killed worker's connection, never answered; then the fault goes,
    // whether or not a send met it.
    await waitUntil(() => telegram.stalledCount() === 0, "the fake to see the killed worker's connection close");
    telegram.clearFaults();
    telegram.release();
    worker = await startRole('worker');
    await waitUntil(() => changeMessages(chat).length === before + 1, 'the message after the restart', 30_000);
    await new Promise((wake) => setTimeout(wake, 3_000));
    await settled();
    const told = changeMessages(chat).slice(before);
    expect(told).toHaveLength(1);
    expect(told[0]).toContain(`→ ${newRoom}`);
  }, 90_000);

  it('tells a change once with three workers, only one of them polling Telegram', async () => {
    const before = changeMessages(chat).length;
    const since = Date.now();
    const extra = [await startRole('worker'), await startRole('worker')];
    try {
      const newRoom = nextRoom();
      await patchEntry(entry.id, { num_auditorium_schedule: newRoom });
      await resync(source);
      await waitUntil(() => changeMessages(chat).length === before + 1, 'the change message', 20_000);
      await new Promise((wake) => setTimeout(wake, 3_000));
      await settled();
      const told = changeMessages(chat).slice(before);
      expect(told).toHaveLength(1);
      expect(told[0]).toContain(`→ ${newRoom}`);
      // The bot still answers, and getUpdates never met a second poller (Telegram's 409 Conflict).
      expect(await say(chat, '/help')).toContain('/stop');
      expect(telegram.calls('getUpdates').filter((call) => call.at >= since && call.status === 409)).toEqual([]);
    } finally {
      for (const role of extra) await stopRole(role);
    }
  }, 90_000);

  it('drops a chat that blocked the bot, and tells the others', async () => {
    const blocked = 5002;
    const payload = await payloadFromPage();
    expect(await say(blocked, `/start ${payload}`)).toContain('Вы подписаны');
    telegram.blockChat(blocked);
    const before = changeMessages(chat).length;
    const newRoom = nextRoom();
    await patchEntry(entry.id, { num_auditorium_schedule: newRoom });
    await resync(source);
    await waitUntil(() => changeMessages(chat).length === before + 1, 'the message to the other chat', 20_000);
    await waitUntil(
      async () => !(await ctx.notify.chats.ofSource(source)).some((c) => c.chatId === String(blocked)),
      'the blocked chat to be unsubscribed',
      20_000,
    );
    expect(await ctx.notify.chats.ofChat(String(blocked))).toEqual([]);
    expect(changeMessages(blocked)).toEqual([]);
  }, 60_000);

  it("waits out Telegram's 429 for its retry_after, then tells once", async () => {
    const before = changeMessages(chat).length;
    telegram.fault({ method: 'sendMessage', kind: '429', retryAfter: 2, chatId: chat });
    const newRoom = nextRoom();
    await patchEntry(entry.id, { num_auditorium_schedule: newRoom });
    await resync(source);
    await waitUntil(() => changeMessages(chat).length === before + 1, 'the message after the rate limit', 30_000);
    const calls = telegram.calls('sendMessage').filter((call) => Number(call.params.chat_id) === chat);
    const limited = calls.findLast((call) => call.status === 429);
    const sent = calls.at(-1);
    expect(sent?.status).toBe(200);
    expect((sent?.at ?? 0) - (limited?.at ?? 0)).toBeGreaterThanOrEqual(1_900);
    await settled();
    expect(changeMessages(chat).slice(before)).toHaveLength(1);
  }, 60_000);

  it('/stop ends it: the next change tells nothing', async () => {
    const answer = await say(chat, '/stop');
    expect(answer.toLowerCase()).toContain('отпис');
    expect(await ctx.notify.chats.ofChat(String(chat))).toEqual([]);
    const before = telegram.messages(chat).length;
    await patchEntry(entry.id, { num_auditorium_schedule: nextRoom() });
    await resync(source);
    await new Promise((wake) => setTimeout(wake, 3_000));
    await settled();
    expect(telegram.messages(chat)).toHaveLength(before);
  }, 60_000);

  it('holds a message in quiet hours until they end, but not one about a class before then', async () => {
    // Quiet hours from this local hour for two hours. The class meets on another weekday (chosen so), at 08:00 at
    // the earliest: its next meeting starts after they end, so the message waits for their end.
    const zone = ctx.config.timezone;
    const hour = Number(
      new Intl.DateTimeFormat('en-GB', { hour: '2-digit', hourCycle: 'h23', timeZone: zone }).format(new Date()),
    );
    const window = `${String(hour).padStart(2, '0')}-${String((hour + 2) % 24).padStart(2, '0')}`;
    await stopRole(worker);
    worker = await startRole('worker', { NOTIFY_QUIET_HOURS: window });
    const quiet = 5003;
    const payload = await payloadFromPage();
    expect(await say(quiet, `/start ${payload}`)).toContain('Вы подписаны');
    const newRoom = nextRoom();
    await patchEntry(entry.id, { num_auditorium_schedule: newRoom });
    await resync(source);
    const delayed = await until(
      () => ctx.queues.telegram.getDelayed(),
      (jobs) => jobs.some((job) => job.data.chatId === String(quiet)),
      20_000,
    );
    const job = delayed.find((each) => each.data.chatId === String(quiet));
    expect(job).toBeDefined();
    // Due when the quiet hours end (within their two hours and the few minutes' spread).
    const due = (job?.timestamp ?? 0) + (job?.opts.delay ?? 0);
    expect(due).toBeGreaterThan(Date.now() + 60_000);
    expect(due).toBeLessThan(Date.now() + 2 * 3_600_000 + 6 * 60_000);
    await new Promise((wake) => setTimeout(wake, 2_000));
    expect(changeMessages(quiet)).toEqual([]);
    // The morning comes.
    await job?.promote();
    await waitUntil(() => changeMessages(quiet).length === 1, 'the held message', 20_000);
    expect(changeMessages(quiet)[0]).toContain(`→ ${newRoom}`);

    // A class added for an hour from now starts before the quiet hours end: that is told at once.
    const soon = zonedParts(Date.now() + 3_600_000, zone);
    const later = zonedParts(Date.now() + 3_600_000 + 30 * 60_000, zone);
    const template = (await (await fetch(`${sim.url}/_sim/entries/${entry.id}`)).json()) as Record<string, unknown>;
    const { id: _id, ...fields } = template;
    const added = await fetch(`${sim.url}/_sim/entries`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        ...fields,
        subject_name: 'Срочная консультация',
        start_day_schedule: soon.date,
        finish_day_schedule: soon.date,
        day_week_schedule: soon.weekday,
        type_week_schedule: 0,
        begin_time_schedule: soon.time,
        end_time_schedule: later.date === soon.date ? later.time : '23:59',
        total_time_schedule: `${soon.time}-${later.date === soon.date ? later.time : '23:59'}`,
        time_interval_id: null,
      }),
    });
    expect(added.status).toBe(201);
    await resync(source);
    await waitUntil(() => changeMessages(quiet).length === 2, 'the message about the class before morning', 20_000);
    expect(changeMessages(quiet)[1]).toContain(`${soon.time} Срочная консультация`);
    expect(changeMessages(quiet)[1]).toContain('новое занятие');
  }, 90_000);
});

/** The local date, ISO weekday and HH:MM of `at` in `zone`. */
function zonedParts(at: number, zone: string): { date: string; weekday: number; time: string } {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    })
      .formatToParts(new Date(at))
      .map((part) => [part.type, part.value]),
  );
  return {
    date: `${parts.year}-${parts.month}-${parts.day}`,
    weekday: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'].indexOf(parts.weekday ?? '') + 1,
    time: `${parts.hour}:${parts.minute}`,
  };
}
