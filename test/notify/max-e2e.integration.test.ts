/**
 * Change notifications in MAX end to end: the service's api and worker roles as child processes (the real
 * composition root: routes, the MAX queue's worker, the poller), the university simulator (its semester around
 * today, so that classes are upcoming on the wall clock BullMQ and the workers use), the fake MAX Bot API, real
 * Redis. A person follows `/max/start` to the bot, opens it with the link's payload, and a room changed upstream
 * reaches their dialog once: not on a refresh without change, not twice around a worker killed with SIGKILL while
 * MAX holds the send, and not after /stop.
 */
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { freePort } from '../../src/runtime/embedded-redis.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { MaxChats } from '../../src/store/max-chats.ts';
import type { TimetableEntry } from '../../src/timetable/types.ts';
import { type FakeMax, startFakeMax } from '../../testkit/fake-max/index.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { type RoleProcess as Role, startRoleProcess } from '../../testkit/processes.ts';
import { resyncAndWait } from '../support/jobs.ts';
import { TEST_ADMIN_TOKEN, TEST_SECRET_KEY, testContext, uniquePrefix } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';

const SCRIPT = resolve(import.meta.dirname, 'support/service-process.ts');
const DAY = 86_400_000;
const CHANGE_HEADER = 'изменения в расписании';
const USER = '8800001';

let sim: RunningSimulator;
let max: FakeMax;
let ctx: ServiceContext;
let chats: MaxChats;
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

/** The person's dialog. */
function dialog(): string {
  return max.chatIdOf(USER) as string;
}

/** The change messages the dialog got (not the bot's answers to commands). */
function changeMessages(): string[] {
  return max
    .messages(dialog())
    .map((message) => message.text)
    .filter((text) => text.includes(CHANGE_HEADER));
}

/** The bot's answers to the dialog, oldest first. */
function answers(): string[] {
  return max
    .messages(dialog())
    .map((message) => message.text)
    .filter((text) => !text.includes(CHANGE_HEADER));
}

/** Waits until nothing is left to do: no fan-out or MAX job waiting or active, the outbox empty. */
async function settled(): Promise<void> {
  await waitUntil(
    async () => {
      const [notify, sends, outbox] = await Promise.all([
        ctx.queues.notify.getJobCounts('waiting', 'active', 'prioritized'),
        ctx.queues.max.getJobCounts('waiting', 'active', 'prioritized'),
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
let entry: TimetableEntry;
let room = 3300;
const nextRoom = () => String(++room);

beforeAll(async () => {
  sim = await startSimulator({ port: 0, seed: 31, referenceDate: new Date(), groups: 6, employees: 6, users: 2 });
  max = await startFakeMax({ username: 'id7700000099_bot' });
  const prefix = uniquePrefix('max-e2e');
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
    MAX_BOT_TOKEN: max.token,
    MAX_API_ROOT: max.apiRoot,
    MAX_POLL_LOCK: '3s',
    NOTIFY_QUIET_HOURS: 'off',
  };
  const opened = await testContext(env);
  ctx = opened.context;
  closeContext = opened.close;
  chats = new MaxChats(ctx.redis, ctx.keys);
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
  await max?.close();
  await sim?.close();
});

describe('MAX change notifications through the running service', () => {
  it('follows /max/start to the bot, opens it with the payload, and tells a room change once', async () => {
    const link = await fetch(`${api.url}/max/start?source=${source}`, { redirect: 'manual' });
    expect(link.status).toBe(303);
    const target = new URL(link.headers.get('location') ?? '');
    expect(`${target.origin}${target.pathname}`).toBe(`https://max.ru/${max.username}`);
    const payload = target.searchParams.get('start') ?? '';
    expect(payload.length).toBeLessThanOrEqual(128);
    max.userStarts(USER, payload);
    await waitUntil(() => answers().length === 1, 'the answer to the start', 20_000);
    expect(answers()[0]).toContain('Вы подписаны');
    expect(await chats.ofChat(dialog())).toEqual([{ source, options: {} }]);

    const newRoom = nextRoom();
    await patchEntry(entry.id, { num_auditorium_schedule: newRoom });
    await resync(source);
    await waitUntil(() => changeMessages().length === 1, 'the change message', 20_000);
    const [message] = changeMessages();
    expect(message).toContain(entry.subjectName);
    expect(message).toContain(`→ ${newRoom}`);
    expect(max.messages(dialog()).at(-1)?.format).toBe('html');
    await new Promise((wake) => setTimeout(wake, 3_000));
    await settled();
    expect(changeMessages()).toHaveLength(1);
    // A refresh that finds nothing new tells nothing.
    await resync(source);
    await new Promise((wake) => setTimeout(wake, 2_000));
    await settled();
    expect(changeMessages()).toHaveLength(1);
  }, 90_000);

  it('tells a change once when the worker is killed while MAX holds the send', async () => {
    const before = changeMessages().length;
    max.fault({ path: 'messages', kind: 'stall', chatId: dialog() });
    const newRoom = nextRoom();
    await patchEntry(entry.id, { num_auditorium_schedule: newRoom });
    await resync(source);
    await waitUntil(() => max.stalledCount() === 1, 'the send to be held', 20_000);
    await stopRole(worker, 'SIGKILL');
    // Its connection is gone: the held request was never answered, so MAX sent nothing.
    await waitUntil(() => max.stalledCount() === 0, "the fake to see the killed worker's connection close");
    max.release();
    expect(changeMessages()).toHaveLength(before);
    worker = await startRole('worker');
    await waitUntil(() => changeMessages().length === before + 1, 'the message after the restart', 30_000);
    await new Promise((wake) => setTimeout(wake, 3_000));
    await settled();
    const told = changeMessages().slice(before);
    expect(told).toHaveLength(1);
    expect(told[0]).toContain(`→ ${newRoom}`);
  }, 90_000);

  it('/stop ends it: the next change tells nothing', async () => {
    const asked = answers().length;
    max.userSays(USER, '/stop');
    await waitUntil(() => answers().length === asked + 1, 'the answer to /stop', 20_000);
    expect(answers().at(-1)?.toLowerCase()).toContain('отпис');
    expect(await chats.ofChat(dialog())).toEqual([]);
    const before = max.messages(dialog()).length;
    await patchEntry(entry.id, { num_auditorium_schedule: nextRoom() });
    await resync(source);
    await new Promise((wake) => setTimeout(wake, 3_000));
    await settled();
    expect(max.messages(dialog())).toHaveLength(before);
  }, 60_000);
});
