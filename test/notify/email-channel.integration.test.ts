/**
 * Change mails through the channel core to a real SMTP server: the service's context on a real Redis, the e-mail
 * queue's processor in a BullMQ worker, change sets published into the outbox and fanned out. A confirmed mailbox
 * gets one mail per change set with the one-click unsubscribe headers, our Message-ID and Date, text and HTML; a
 * 451 at RCPT is retried and delivered once; a `550 5.1.1` at RCPT unsubscribes the mailbox and deletes its
 * address; a refused login, a relay refusing every recipient with `554 5.7.1`, or a run of refused mailboxes
 * disables the channel with nothing dropped or deleted (beyond the run's first few) until a send succeeds; a
 * mailbox that leaves between the core's check and the send is settled quietly; a digest subscriber gets one mail
 * at `MAIL_DIGEST_TIME` with the net change.
 */
import { Writable } from 'node:stream';
import { type Job, Worker } from 'bullmq';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import type { ChannelSendJobData, EmailJobData } from '../../src/jobs/contract.ts';
import { emailProcessor } from '../../src/jobs/email-send.ts';
import { fanOutChangeSet } from '../../src/jobs/notify-fanout.ts';
import { connectRedis } from '../../src/lib/redis-connection.ts';
import { RedisOutageLog } from '../../src/lib/redis-outage.ts';
import { createLogger, type Logger, silentLogger } from '../../src/logger.ts';
import { type EmailChannel, emailChannel, MAIL_WAVE_REFUSALS } from '../../src/notify/email/channel.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { deliveryId } from '../../src/store/notify-outbox.ts';
import type { ChangeSet } from '../../src/timetable/notify-change.ts';
import { until } from '../../testkit/poll.ts';
import { type ReceivedMail, startSmtpServer, type TestSmtpServer } from '../../testkit/smtp-server.ts';
import { jobEnded } from '../support/jobs.ts';
import { moved } from '../support/notify-items.ts';
import { testContext } from '../support/service.ts';

const SOURCE = 'group:4242';
/** 10:00 in Moscow: outside any quiet hours, before the digest time (19:00). */
const MORNING = Date.UTC(2029, 9, 2, 7, 0);

interface Rig {
  ctx: ServiceContext;
  smtp: TestSmtpServer;
  channel: EmailChannel;
  /**
   * The service clock: real time unless a test sets it (the fan-out's quiet hours and digest read it). Jobs are
   * delayed on real time (BullMQ's), so a test that lets a delay run keeps it real.
   */
  clock: { now: number | undefined };
  /** What the service logged (info and above), one JSON object per line. */
  logs: Record<string, unknown>[];
  /** Signs `address` up for the source and confirms it; resolves to its mailbox id. */
  subscribe(address: string, digest?: boolean): Promise<string>;
  /** Publishes a room change at `stamp` into the outbox and fans it out. */
  publish(stamp: number, from: string, to: string): Promise<ChangeSet>;
  /** The e-mail queue's jobs of a mailbox in these states. */
  jobsOf(mailboxId: string, ...states: ('delayed' | 'completed' | 'failed')[]): Promise<Job<EmailJobData>[]>;
  close(): Promise<void>;
}

/** A logger that keeps what it logs. */
function recordingLogger(): { logger: Logger; logs: Record<string, unknown>[] } {
  const logs: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') logs.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger({ level: 'info', pretty: false, destination }), logs };
}

async function rig(
  env: Record<string, string> = {},
  wrap: (channel: EmailChannel) => EmailChannel = (channel) => channel,
): Promise<Rig> {
  const smtp = await startSmtpServer();
  const clock: { now: number | undefined } = { now: undefined };
  const now = () => clock.now ?? Date.now();
  const { logger, logs } = recordingLogger();
  const opened = await testContext(
    {
      SMTP_URL: smtp.url,
      MAIL_FROM: 'Расписание <timetable@example.edu>',
      PUBLIC_URL: 'https://timetable.example.edu',
      NOTIFY_QUIET_HOURS: 'off',
      ...env,
    },
    { now, logger },
  );
  const ctx = opened.context;
  const channel = emailChannel({
    config: ctx.config,
    mailboxes: ctx.mailboxes,
    redis: ctx.redis,
    keys: ctx.keys,
    wallClock: Date.now,
    logger,
  });
  const outage = new RedisOutageLog(silentLogger());
  const blocking = connectRedis(inject('redisUrl'), { name: 'test-email-worker', outage, blocking: true });
  const worker = new Worker('email', emailProcessor(ctx, wrap(channel), { disabledRetryMs: 400 }), {
    connection: blocking,
    prefix: ctx.keys.queuePrefix,
    concurrency: 4,
  });
  worker.on('error', () => undefined);
  return {
    ctx,
    smtp,
    channel,
    clock,
    logs,
    subscribe: async (address, digest = false) => {
      const id = await ctx.mailboxes.createPending({ address, source: SOURCE, options: {}, digest, now: now() });
      const confirmed = await ctx.mailboxes.confirm(id, now());
      if (confirmed.kind !== 'added') throw new Error(`not added: ${confirmed.kind}`);
      return confirmed.mailboxId;
    },
    publish: async (stamp, from, to) => {
      const set: ChangeSet = { source: SOURCE, name: 'ИВТ-21', stamp, items: [moved(from, to)], omitted: 0 };
      await ctx.notify.outbox.write(ctx.redis.multi(), set).exec();
      await fanOutChangeSet(ctx, { source: SOURCE, stamp });
      return set;
    },
    jobsOf: async (mailboxId, ...states) =>
      ((await ctx.queues.email.getJobs(states)) as Job<ChannelSendJobData>[]).filter(
        (job) => job.data.chatId === mailboxId,
      ),
    close: async () => {
      await worker.close();
      channel.close();
      await blocking.quit();
      await opened.close();
      await smtp.close();
    },
  };
}

/** Waits until `count` mails reached `address`, and answers them. */
async function mailsOf(r: Rig, address: string, count: number): Promise<ReceivedMail[]> {
  return until(
    async () => r.smtp.mailsTo(address),
    (mails) => mails.length >= count,
    15_000,
  );
}

describe('change mails', () => {
  let r: Rig;
  beforeEach(async () => {
    r = await rig();
  });
  afterEach(async () => {
    await r.close();
  });

  it('mails a confirmed mailbox once per change set, with the one-click headers, Message-ID and Date', async () => {
    const mailboxId = await r.subscribe('reader@student.example.edu');
    const set = await r.publish(MORNING, '425', '518');
    const [mail] = await mailsOf(r, 'reader@student.example.edu', 1);
    if (mail === undefined) throw new Error('no mail');
    expect(mail.subject).toBe('ИВТ-21: Ср 2 окт., 15:40 Оптика (лабораторная работа): ауд. 425 → 518');
    expect(mail.text).toContain('Ср 2 окт.\n15:40 Оптика (лабораторная работа): ауд. 425 → 518');
    expect(mail.text).toContain('Расписание: https://timetable.example.edu/timetables/groups/4242');
    expect(mail.html).toContain('<b>Ср 2 окт.</b>');
    const unsubscribe = /^<(https:\/\/timetable\.example\.edu\/email\/unsubscribe\?token=([^>]+))>$/.exec(
      mail.header('list-unsubscribe') ?? '',
    );
    expect(unsubscribe).not.toBeNull();
    expect(await r.ctx.mailboxes.resolveUnsubscribe(decodeURIComponent(unsubscribe?.[2] ?? ''))).toEqual({
      mailboxId,
      source: SOURCE,
    });
    expect(mail.text).toContain(`Отписаться: ${unsubscribe?.[1]}`);
    expect(mail.header('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    const id = deliveryId('em', mailboxId, set);
    expect(mail.header('message-id')).toBe(r.channel.messageId(`${id}|${set.stamp}`));
    expect(mail.header('message-id')).toMatch(/^<[A-Za-z0-9_-]{32}@example\.edu>$/);
    expect(Math.abs(new Date(mail.header('date') ?? '').getTime() - Date.now())).toBeLessThan(60_000);
    // The relay has the mail a moment before the worker records it.
    await until(
      () => r.ctx.notify.outbox.state(id),
      (state) => state === 'sent',
      15_000,
    );

    // A retry of the same message (the relay took it but the worker died before recording it) keeps its id.
    const again = await r.channel.send({
      address: mailboxId,
      deliveryId: id,
      source: SOURCE,
      told: set,
      pageUrl: 'https://timetable.example.edu/timetables/groups/4242',
    });
    expect(again.kind).toBe('sent');
    const both = await mailsOf(r, 'reader@student.example.edu', 2);
    expect(both[1]?.header('message-id')).toBe(mail.header('message-id'));

    // Nobody but confirmed mailboxes: a sign-up left unconfirmed gets nothing of the next change.
    await r.ctx.mailboxes.createPending({
      address: 'waiting@example.edu',
      source: SOURCE,
      options: {},
      digest: false,
      now: MORNING,
    });
    await r.publish(MORNING + 1, '518', '620');
    await mailsOf(r, 'reader@student.example.edu', 3);
    expect(r.smtp.mailsTo('waiting@example.edu')).toEqual([]);
  });

  it('retries a 451 at RCPT with backoff and delivers it once', async () => {
    const mailboxId = await r.subscribe('grey@example.edu');
    r.smtp.script('grey@example.edu', 451);
    await r.publish(MORNING, '425', '518');
    // The first attempt failed; the job waits for its backoff (promoted here rather than waited for).
    const [waiting] = await until(
      () => r.jobsOf(mailboxId, 'delayed'),
      (jobs) => jobs.length === 1,
      15_000,
    );
    expect(waiting?.attemptsMade).toBe(1);
    expect(r.smtp.mailsTo('grey@example.edu')).toEqual([]);
    await waiting?.promote();
    expect((await jobEnded(r.ctx.queues.email, waiting?.id as string)).job.returnvalue).toMatchObject({
      outcome: 'sent',
    });
    expect(await mailsOf(r, 'grey@example.edu', 1)).toHaveLength(1);
    expect(r.smtp.attempts.filter((each) => each.to === 'grey@example.edu').map((each) => each.code)).toEqual([
      451, 250,
    ]);
    await new Promise((wake) => setTimeout(wake, 500));
    expect(r.smtp.mailsTo('grey@example.edu')).toHaveLength(1);
  });

  it('unsubscribes a mailbox refused with 550 5.1.1 and deletes its address; the others get theirs', async () => {
    const gone = await r.subscribe('nobody@example.edu');
    const hash = r.ctx.mailboxes.addressHash('nobody@example.edu');
    expect(await r.ctx.redis.get(r.ctx.keys.mailboxOfAddress(hash))).toBe(gone);
    await r.subscribe('somebody@example.edu');
    r.smtp.refuse('nobody@example.edu', 550);
    await r.publish(MORNING, '425', '518');
    await mailsOf(r, 'somebody@example.edu', 1);
    await until(
      () => r.ctx.mailboxes.follows(gone, SOURCE),
      (follows) => !follows,
      15_000,
    );
    expect(await r.ctx.mailboxes.addressOf(gone)).toBeUndefined();
    expect(await r.ctx.redis.exists(r.ctx.keys.mailbox(gone), r.ctx.keys.mailboxSources(gone))).toBe(0);
    expect(await r.ctx.redis.exists(r.ctx.keys.mailboxOfAddress(hash))).toBe(0);
    expect(r.smtp.attempts.find((each) => each.to === 'nobody@example.edu')?.code).toBe(550);
    expect(r.smtp.mailsTo('nobody@example.edu')).toEqual([]);
    expect(await r.ctx.notify.states.disabled('email')).toBeUndefined();
  });
});

/** Every mailbox key and address index of the test's prefix. */
async function mailboxKeys(r: Rig): Promise<string[]> {
  const prefix = r.ctx.config.redisPrefix;
  const keys = [
    ...(await r.ctx.redis.keys(`${prefix}:mail:box:*`)),
    ...(await r.ctx.redis.keys(`${prefix}:mail:address:*`)),
  ];
  return keys.sort();
}

describe('a relay that refuses us at RCPT', () => {
  let r: Rig;
  beforeEach(async () => {
    r = await rig();
  });
  afterEach(async () => {
    await r.close();
  });

  it('disables the channel on 554 5.7.1 for every recipient, deleting and dropping nothing', async () => {
    const ids = [
      await r.subscribe('first@example.edu'),
      await r.subscribe('second@example.edu'),
      await r.subscribe('third@example.edu'),
    ];
    const before = await mailboxKeys(r);
    expect(before).toHaveLength(9);
    r.smtp.refuseEveryone(554);
    await r.publish(MORNING, '425', '518');
    const disabled = await until(
      () => r.ctx.notify.states.disabled('email'),
      (state) => state !== undefined,
      15_000,
    );
    expect(disabled?.reason).toContain('554 5.7.1 at RCPT TO');
    // Every mailbox tried at least once by now (the probe each 400 ms), none of them gone.
    await until(
      async () => new Set(r.smtp.attempts.map((each) => each.to)).size,
      (tried) => tried === ids.length,
      15_000,
    );
    expect(await mailboxKeys(r)).toEqual(before);
    for (const id of ids) expect(await r.ctx.mailboxes.follows(id, SOURCE)).toBe(true);
    for (const id of ids) expect(await r.jobsOf(id, 'failed')).toEqual([]);
    expect(r.smtp.mails).toEqual([]);
    // Mended: every mail goes, and the channel is on again.
    r.smtp.refuseEveryone(undefined);
    for (const address of ['first@example.edu', 'second@example.edu', 'third@example.edu'])
      await mailsOf(r, address, 1);
    await until(
      () => r.ctx.notify.states.disabled('email'),
      (state) => state === undefined,
      15_000,
    );
  });

  it(`takes a run of more than ${MAIL_WAVE_REFUSALS} refused mailboxes for the relay's trouble`, async () => {
    const count = MAIL_WAVE_REFUSALS + 3;
    const addresses = Array.from({ length: count }, (_, index) => `student${index}@example.edu`);
    const ids: string[] = [];
    for (const address of addresses) ids.push(await r.subscribe(address));
    for (const address of addresses) r.smtp.refuse(address, 550);
    await r.publish(MORNING, '425', '518');
    const disabled = await until(
      () => r.ctx.notify.states.disabled('email'),
      (state) => state !== undefined,
      15_000,
    );
    expect(disabled?.reason).toContain('mailboxes in a row');
    // Every mailbox refused at least once: the first few of the run are unsubscribed, the rest kept.
    await until(
      async () => new Set(r.smtp.attempts.map((each) => each.to)).size,
      (tried) => tried === count,
      15_000,
    );
    const following = async () => {
      let kept = 0;
      for (const id of ids) if (await r.ctx.mailboxes.follows(id, SOURCE)) kept += 1;
      return kept;
    };
    await until(following, (kept) => kept === count - MAIL_WAVE_REFUSALS, 15_000);
    // The relay still takes our login, which says nothing of the recipients: the probe cannot tell it mended.
    expect(await r.channel.probe?.()).toMatchObject({ kind: 'failed', permanent: false });
    // The relay takes mail again: those kept get theirs, and the channel is on.
    for (const address of addresses) r.smtp.refuse(address, undefined);
    await until(
      async () => r.smtp.mails.length,
      (sent) => sent === count - MAIL_WAVE_REFUSALS,
      15_000,
    );
    await until(
      () => r.ctx.notify.states.disabled('email'),
      (state) => state === undefined,
      15_000,
    );
    expect(await following()).toBe(count - MAIL_WAVE_REFUSALS);
    expect(await r.channel.probe?.()).toEqual({ kind: 'sent', messageId: '' });
  });
});

describe('a mailbox that leaves while its mail is being made', () => {
  let r: Rig;
  let leaving: string | undefined;
  beforeEach(async () => {
    // The core finds the mailbox following (as it did a moment before), then it leaves before the send.
    r = await rig({}, (channel) => ({
      ...channel,
      follows: async (address, source) => {
        if (address !== leaving) return channel.follows(address, source);
        leaving = undefined;
        await r.ctx.mailboxes.unsubscribe(address, source);
        return true;
      },
    }));
  });
  afterEach(async () => {
    await r.close();
  });

  it('is settled quietly: no mail, no error, the job completes as unsubscribed', async () => {
    const mailboxId = await r.subscribe('leaving@example.edu');
    // It follows another timetable too: the mailbox and its address stay, only this subscription is gone.
    const other = await r.ctx.mailboxes.createPending({
      address: 'leaving@example.edu',
      source: 'group:4343',
      options: {},
      digest: false,
      now: Date.now(),
    });
    expect(await r.ctx.mailboxes.confirm(other, Date.now())).toMatchObject({ kind: 'added', mailboxId });
    leaving = mailboxId;
    await r.publish(MORNING, '425', '518');
    // Settled by the attempt that found the address gone: no retry, no attempt used up.
    const [ended] = await until(
      () => r.jobsOf(mailboxId, 'completed'),
      (jobs) => jobs.length === 1,
      15_000,
    );
    expect(ended?.returnvalue).toEqual({ outcome: 'unsubscribed' });
    expect(ended?.attemptsMade).toBe(1);
    expect(r.smtp.attempts).toEqual([]);
    expect(r.logs.filter((line) => Number(line.level) >= 50)).toEqual([]);
    expect(await r.ctx.notify.states.disabled('email')).toBeUndefined();
    expect(await r.ctx.mailboxes.follows(mailboxId, 'group:4343')).toBe(true);
    expect(await r.ctx.mailboxes.addressOf(mailboxId)).toBe('leaving@example.edu');
  });
});

describe('a relay that refuses our login', () => {
  let r: Rig;
  beforeEach(async () => {
    r = await rig();
  });
  afterEach(async () => {
    await r.close();
  });

  it('disables the channel with the reason, drops nothing, and is back on after the first success', async () => {
    await r.subscribe('patient@example.edu');
    r.smtp.refuseLogins(true);
    await r.publish(MORNING, '425', '518');
    const disabled = await until(
      () => r.ctx.notify.states.disabled('email'),
      (state) => state !== undefined,
      15_000,
    );
    expect(disabled?.reason).toContain('EAUTH');
    expect(disabled?.reason).not.toContain('relay-password');
    expect(r.smtp.mailsTo('patient@example.edu')).toEqual([]);
    // Mended: the next try (every 400 ms here) sends it, and the channel is on again.
    r.smtp.refuseLogins(false);
    await mailsOf(r, 'patient@example.edu', 1);
    await until(
      () => r.ctx.notify.states.disabled('email'),
      (state) => state === undefined,
      15_000,
    );
  });
});

describe('the daily digest', () => {
  let r: Rig;
  beforeEach(async () => {
    r = await rig({ MAIL_DIGEST_TIME: '19:00' });
  });
  afterEach(async () => {
    await r.close();
  });

  it('mails a digest subscriber once at MAIL_DIGEST_TIME with the net change of the day', async () => {
    r.clock.now = MORNING;
    const digest = await r.subscribe('digest@example.edu', true);
    await r.subscribe('each@example.edu');
    await r.publish(MORNING, '425', '518');
    r.clock.now = MORNING + 3_600_000;
    await r.publish(MORNING + 3_600_000, '518', '620');
    await mailsOf(r, 'each@example.edu', 2);
    const [held] = await r.jobsOf(digest, 'delayed');
    // Due at 19:00 in Moscow (16:00 UTC), within the spread after it.
    const due = (held?.data as ChannelSendJobData | undefined)?.deliverAt ?? 0;
    expect(due - Date.UTC(2029, 9, 2, 16, 0)).toBeGreaterThanOrEqual(0);
    expect(due - Date.UTC(2029, 9, 2, 16, 0)).toBeLessThan(5 * 60_000);
    expect(r.smtp.mailsTo('digest@example.edu')).toEqual([]);
    // The evening comes.
    r.clock.now = Date.UTC(2029, 9, 2, 16, 1);
    await held?.promote();
    const [mail] = await mailsOf(r, 'digest@example.edu', 1);
    expect(mail?.subject).toBe('ИВТ-21: Ср 2 окт., 15:40 Оптика (лабораторная работа): ауд. 425 → 620');
    await new Promise((wake) => setTimeout(wake, 500));
    expect(r.smtp.mailsTo('digest@example.edu')).toHaveLength(1);
  });
});
