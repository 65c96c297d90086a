/**
 * Change notifications by e-mail end to end: the service's api and worker roles as child processes (the real
 * composition root), the university simulator (its semester around today), a real SMTP server with STARTTLS and
 * AUTH, real Redis. A person signs up with the page's form and gets a confirmation mail; nothing else comes before
 * the link's button is pressed (opening the link confirms nothing); then a room changed upstream gives one mail per
 * changing refresh naming the new room, a refresh without change none, a 451 is retried and delivered once, the
 * mail's one-click unsubscribe ends it; and a digest subscriber gets one mail at the digest time.
 */
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ChannelSendJobData } from '../../src/jobs/contract.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { freePort } from '../../src/runtime/embedded-redis.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import type { TimetableEntry } from '../../src/timetable/types.ts';
import { until, waitUntil } from '../../testkit/poll.ts';
import { type RoleProcess as Role, startRoleProcess } from '../../testkit/processes.ts';
import { type ReceivedMail, startSmtpServer, type TestSmtpServer } from '../../testkit/smtp-server.ts';
import { resyncAndWait } from '../support/jobs.ts';
import { TEST_ADMIN_TOKEN, TEST_SECRET_KEY, testContext, uniquePrefix } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';

const SCRIPT = resolve(import.meta.dirname, 'support/service-process.ts');
const DAY = 86_400_000;
const READER = 'reader@student.example.edu';
const EVENING = 'evening@student.example.edu';

let sim: RunningSimulator;
let smtp: TestSmtpServer;
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

async function patchRoom(id: number, room: string): Promise<void> {
  await simControl(sim.url).patchEntry(id, { num_auditorium_schedule: room });
}

/** The change mails an address got (not its confirmation mails). */
function changeMails(address: string): ReceivedMail[] {
  return smtp.mailsTo(address).filter((mail) => !mail.subject.startsWith('Подтвердите'));
}

function confirmations(address: string): ReceivedMail[] {
  return smtp.mailsTo(address).filter((mail) => mail.subject.startsWith('Подтвердите'));
}

/** Waits until nothing is left to do: no fan-out or mail job waiting or active, the outbox empty. */
async function settled(): Promise<void> {
  await waitUntil(
    async () => {
      const [notify, mails, outbox] = await Promise.all([
        ctx.queues.notify.getJobCounts('waiting', 'active', 'prioritized'),
        ctx.queues.email.getJobCounts('waiting', 'active', 'prioritized'),
        ctx.notify.outbox.size(),
      ]);
      return Object.values(notify).every((n) => n === 0) && Object.values(mails).every((n) => n === 0) && outbox === 0;
    },
    'the notifications to settle',
    30_000,
  );
}

/** Signs `address` up with the page's form and answers the link of the confirmation mail it gets. */
async function signUp(address: string, digest: boolean): Promise<string> {
  const before = confirmations(address).length;
  const response = await fetch(`${api.url}/email/subscribe`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      source,
      email: address,
      subgroup: '',
      exclude: '',
      lang: 'ru',
      ...(digest ? { digest: '1' } : {}),
    }),
  });
  expect(response.status).toBe(200);
  expect(await response.text()).toContain('Проверьте почту');
  await waitUntil(() => confirmations(address).length > before, 'the confirmation mail', 20_000);
  const mail = confirmations(address).at(-1) as ReceivedMail;
  const link = /(https?:\/\/\S+\/email\/confirm\?token=\S+)/.exec(mail.text)?.[1];
  if (link === undefined) throw new Error(`no link in ${mail.text}`);
  return link;
}

/** Today's ISO weekday (1 = Monday) in `zone`. */
function isoWeekday(zone: string): number {
  const name = new Intl.DateTimeFormat('en-US', { weekday: 'short', timeZone: zone }).format(new Date());
  return ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'].indexOf(name) + 1;
}

let source: string;
let entry: TimetableEntry;
let room = 3300;
const nextRoom = () => String(++room);

beforeAll(async () => {
  sim = await startSimulator({ port: 0, seed: 31, referenceDate: new Date(), groups: 6, employees: 6, users: 2 });
  smtp = await startSmtpServer();
  const apiPort = String(await freePort());
  env = {
    REDIS_URL: inject('redisUrl'),
    REDIS_PREFIX: uniquePrefix('mail-e2e'),
    UNIVERSITY_API_URL: sim.url,
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    SECRET_KEY: TEST_SECRET_KEY,
    LOG_LEVEL: 'warn',
    PUBLIC_URL: `http://127.0.0.1:${apiPort}`,
    REFRESH_INTERVAL: '12h',
    SMTP_URL: smtp.url,
    MAIL_FROM: 'Расписание <timetable@example.edu>',
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
      source = `group:${group.id}`;
      entry = weekly;
      break;
    }
  }
  if (!entry) throw new Error('no group with a weekly class running two more weeks');
  await resync(source);
}, 90_000);

afterAll(async () => {
  for (const role of roles) await stopRole(role);
  await closeContext?.();
  await smtp?.close();
  await sim?.close();
});

describe('e-mail change notifications through the running service', () => {
  it('sends nothing before the confirmation; opening the link confirms nothing, its button does', async () => {
    const link = await signUp(READER, false);
    expect(new URL(link).origin).toBe(api.url);
    // A change before the confirmation tells nobody.
    await patchRoom(entry.id, nextRoom());
    await resync(source);
    await settled();
    // What a mail scanner does: it fetches the link.
    const page = await fetch(link);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Подтвердить подписку');
    await patchRoom(entry.id, nextRoom());
    await resync(source);
    await new Promise((wake) => setTimeout(wake, 2_000));
    await settled();
    expect(changeMails(READER)).toEqual([]);
    expect(smtp.mailsTo(READER)).toHaveLength(1);
    // The person presses the button.
    const confirmed = await fetch(link, { method: 'POST' });
    expect(confirmed.status).toBe(200);
    expect(await confirmed.text()).toContain('Подписка подтверждена');
  }, 90_000);

  it('mails each changing refresh once, naming the new room, and a refresh without change not at all', async () => {
    const newRoom = nextRoom();
    await patchRoom(entry.id, newRoom);
    await resync(source);
    await waitUntil(() => changeMails(READER).length === 1, 'the change mail', 20_000);
    const [mail] = changeMails(READER);
    expect(mail?.subject).toContain(entry.subjectName);
    expect(mail?.subject).toContain(`→ ${newRoom}`);
    expect(mail?.text).toContain(`→ ${newRoom}`);
    expect(mail?.header('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    await new Promise((wake) => setTimeout(wake, 2_000));
    await settled();
    expect(changeMails(READER)).toHaveLength(1);
    await resync(source);
    await new Promise((wake) => setTimeout(wake, 2_000));
    await settled();
    expect(changeMails(READER)).toHaveLength(1);
    // Another change, another mail.
    const thirdRoom = nextRoom();
    await patchRoom(entry.id, thirdRoom);
    await resync(source);
    await waitUntil(() => changeMails(READER).length === 2, 'the second change mail', 20_000);
    expect(changeMails(READER)[1]?.subject).toContain(`→ ${thirdRoom}`);
  }, 90_000);

  it('retries a 451 and delivers the mail once', async () => {
    const before = changeMails(READER).length;
    smtp.script(READER, 451);
    const newRoom = nextRoom();
    await patchRoom(entry.id, newRoom);
    await resync(source);
    // Retried after the job's backoff (tens of seconds): promoted here rather than waited for.
    const delayed = await until(
      () => ctx.queues.email.getDelayed(),
      (jobs) => jobs.some((job) => job.attemptsMade === 1),
      20_000,
    );
    expect(changeMails(READER)).toHaveLength(before);
    await delayed.find((job) => job.attemptsMade === 1)?.promote();
    await waitUntil(() => changeMails(READER).length === before + 1, 'the mail after the 451', 20_000);
    expect(changeMails(READER).at(-1)?.subject).toContain(`→ ${newRoom}`);
    const answers = smtp.attempts.filter((each) => each.to === READER).map((each) => each.code);
    expect(answers.slice(-2)).toEqual([451, 250]);
    await new Promise((wake) => setTimeout(wake, 2_000));
    await settled();
    expect(changeMails(READER)).toHaveLength(before + 1);
  }, 90_000);

  it("ends with the mail's one-click unsubscribe: no more mails, the address deleted", async () => {
    const last = changeMails(READER).at(-1) as ReceivedMail;
    const url = /^<(.+)>$/.exec(last.header('list-unsubscribe') ?? '')?.[1];
    if (url === undefined) throw new Error('no List-Unsubscribe');
    // As a mail provider sends it: a form body, no cookies, no Origin.
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(response.status).toBe(200);
    expect(await ctx.mailboxes.hasAny(source)).toBe(false);
    const before = smtp.mailsTo(READER).length;
    await patchRoom(entry.id, nextRoom());
    await resync(source);
    await new Promise((wake) => setTimeout(wake, 2_000));
    await settled();
    expect(smtp.mailsTo(READER)).toHaveLength(before);
    expect(await ctx.redis.keys(`${ctx.config.redisPrefix}:mail:address:*`)).toEqual([]);
  }, 60_000);

  it('mails a digest subscriber once, at the digest time', async () => {
    // The digest a few minutes from now (local time): the class meets on another weekday, so it waits for it.
    const zone = ctx.config.timezone;
    const soon = new Intl.DateTimeFormat('en-GB', {
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
      timeZone: zone,
    })
      .format(new Date(Date.now() + 5 * 60_000))
      .replace(/[^\d:]/g, '');
    await stopRole(worker);
    worker = await startRole('worker', { MAIL_DIGEST_TIME: soon });
    const link = await signUp(EVENING, true);
    expect((await fetch(link, { method: 'POST' })).status).toBe(200);
    const first = nextRoom();
    await patchRoom(entry.id, first);
    await resync(source);
    const second = nextRoom();
    await patchRoom(entry.id, second);
    await resync(source);
    const held = await until(
      () => ctx.queues.email.getDelayed(),
      (jobs) => jobs.some((job) => (job.data as ChannelSendJobData).collapse === true),
      20_000,
    );
    const job = held.find((each) => (each.data as ChannelSendJobData).collapse === true);
    const due = (job?.timestamp ?? 0) + (job?.opts.delay ?? 0);
    expect(due).toBeGreaterThan(Date.now() + 60_000);
    expect(due).toBeLessThan(Date.now() + 5 * 60_000 + 6 * 60_000);
    expect(changeMails(EVENING)).toEqual([]);
    // The digest time comes.
    await job?.promote();
    await waitUntil(() => changeMails(EVENING).length === 1, 'the digest', 20_000);
    const [digest] = changeMails(EVENING);
    expect(digest?.subject).toContain(`→ ${second}`);
    await new Promise((wake) => setTimeout(wake, 2_000));
    await settled();
    expect(changeMails(EVENING)).toHaveLength(1);
  }, 120_000);
});
