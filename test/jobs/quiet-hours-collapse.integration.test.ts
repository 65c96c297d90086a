/**
 * Messages held through the quiet hours, on a real Redis and BullMQ worker against the fake Bot API: the fan-out
 * holds each chat's part of every change set of the night, and one send per chat and source tells the net change
 * when the hours end (ауд. 425 → 518, then 518 → 620: one «ауд. 425 → 620»; moved and back: nothing), once,
 * however often the fan-out runs; the log line says when held messages go and why. A message Telegram refuses,
 * or a chat that is gone, takes what was held with it, so the next change is told alone; a message delayed for
 * the morning one by one (an earlier version) joins the held sets.
 */
import { Writable } from 'node:stream';
import { type Job, Queue, Worker } from 'bullmq';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import type { TelegramSendJobData } from '../../src/jobs/contract.ts';
import { fanOutChangeSet, HELD_SEND_LAG_MS, type NotifyFanoutDeps } from '../../src/jobs/notify-fanout.ts';
import { telegramJobOptions } from '../../src/jobs/queues.ts';
import { type TelegramSendResult, telegramSendProcessor } from '../../src/jobs/telegram-send.ts';
import { connectRedis } from '../../src/lib/redis-connection.ts';
import { RedisOutageLog } from '../../src/lib/redis-outage.ts';
import { createLogger, silentLogger } from '../../src/logger.ts';
import { deliverAt } from '../../src/notify/quiet-hours.ts';
import { telegramChannel } from '../../src/notify/telegram/channel.ts';
import { createMetrics } from '../../src/runtime/metrics.ts';
import { ChannelStates } from '../../src/store/channel-states.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { deliveryHash, deliveryId, heldDeliveryId, NotifyOutbox } from '../../src/store/notify-outbox.ts';
import { TelegramChats } from '../../src/store/telegram-chats.ts';
import type { ChangeSet, NotifyItem } from '../../src/timetable/notify-change.ts';
import { type FakeTelegram, startFakeTelegram } from '../../testkit/fake-telegram/index.ts';
import { jobEnded } from '../support/jobs.ts';
import { CLASS, moved, side } from '../support/notify-items.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

const SOURCE = 'group:4242';
const OTHER = 'group:4243';
/** Noon in Moscow the day after the night: no quiet hours. */
const DAY = Date.UTC(2029, 9, 2, 9, 0);
/** A night: 02:00 in Moscow, inside the default quiet hours 23-07; the class is years ahead. */
const NIGHT = Date.UTC(2029, 9, 1, 23, 0);

interface Rig {
  telegram: FakeTelegram;
  queue: Queue<TelegramSendJobData, TelegramSendResult>;
  outbox: NotifyOutbox;
  chats: TelegramChats;
  fanout: NotifyFanoutDeps;
  logs: Record<string, unknown>[];
  clock: { now: number };
  /** Publishes `items` at `stamp` into the outbox and fans them out. */
  publish(stamp: number, items: NotifyItem[], source?: string): Promise<ChangeSet>;
  /** The Telegram jobs waiting for the morning. */
  delayed(): Promise<Job<TelegramSendJobData, TelegramSendResult>[]>;
  /** Runs the held sends now (as the end of the quiet hours would) and waits for them. */
  morning(): Promise<TelegramSendResult[]>;
  close(): Promise<void>;
}

async function rig(): Promise<Rig> {
  const telegram = await startFakeTelegram();
  const prefix = uniquePrefix('tg-quiet');
  const keys = redisKeys(prefix);
  const outage = new RedisOutageLog(silentLogger());
  const redis = connectRedis(inject('redisUrl'), { name: 'test-quiet', outage });
  const blocking = connectRedis(inject('redisUrl'), { name: 'test-quiet-worker', outage, blocking: true });
  const queue = new Queue<TelegramSendJobData, TelegramSendResult>('telegram', {
    connection: redis,
    prefix: keys.queuePrefix,
  });
  const outbox = new NotifyOutbox(redis, keys);
  const chats = new TelegramChats(redis, keys);
  const logs: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line.trim() !== '') logs.push(JSON.parse(line));
      done();
    },
  });
  const logger = createLogger({ level: 'info', pretty: false, destination });
  const clock = { now: NIGHT };
  const settings = { telegramBotToken: telegram.token, telegramApiRoot: telegram.apiRoot };
  const unused = { addBulk: async () => [] } as never;
  const fanout: NotifyFanoutDeps = {
    config: {
      timezone: 'Europe/Moscow',
      notifyQuietHours: { fromMinute: 23 * 60, toMinute: 7 * 60 },
      mailDigestTime: '19:00',
    },
    redis,
    keys,
    queues: { notify: unused, telegram: queue as never, webhook: unused },
    notify: {
      outbox,
      pageUrl: () => 'https://timetable.example.edu/timetables/groups/4242',
      channels: [telegramChannel({ config: settings, chats })],
    },
    webhooks: { ofSource: async () => [] },
    subscriptions: { feedOptionsOf: async () => ({}) } as never,
    logger,
    now: () => clock.now,
  };
  const worker = new Worker(
    'telegram',
    telegramSendProcessor({
      config: settings,
      logger: silentLogger(),
      redis,
      keys,
      queues: { telegram: queue },
      notify: { outbox, chats, states: new ChannelStates(redis, keys) },
      metrics: createMetrics(),
      now: Date.now,
    }),
    { connection: blocking, prefix: keys.queuePrefix, concurrency: 2 },
  );
  worker.on('error', () => undefined);
  const delayed = () => queue.getJobs(['delayed']);
  return {
    telegram,
    queue,
    outbox,
    chats,
    fanout,
    logs,
    clock,
    publish: async (stamp, items, source = SOURCE) => {
      const set: ChangeSet = { source, name: 'ИВТ-21', stamp, items, omitted: 0 };
      await outbox.write(redis.multi(), set).exec();
      await fanOutChangeSet(fanout, { source, stamp });
      return set;
    },
    delayed,
    morning: async () => {
      const jobs = await delayed();
      for (const job of jobs) await job.promote();
      const results: TelegramSendResult[] = [];
      for (const job of jobs) results.push((await jobEnded(queue, job.id as string)).job.returnvalue);
      return results;
    },
    close: async () => {
      await worker.close();
      await queue.close();
      await telegram.close();
      await deletePrefix(inject('redisUrl'), prefix);
      await blocking.quit();
      await redis.quit();
    },
  };
}

/** The next day, a change for chat 41 goes at once as one message of its own, with nothing of ауд. 425 in it. */
async function expectNextDayToldAlone(r: Rig): Promise<void> {
  r.clock.now = DAY;
  const next = await r.publish(DAY, [moved('100', '101', 'u2')]);
  const id = deliveryId('tg', '41', { source: SOURCE, stamp: next.stamp });
  expect((await jobEnded(r.queue, `tg-${deliveryHash(id)}`)).state).toBe('completed');
  const messages = r.telegram.messages(41);
  expect(messages).toHaveLength(1);
  expect(messages[0]?.text).toContain('ауд. 100 → 101');
  expect(messages[0]?.text).not.toContain('425');
}

describe('quiet hours', () => {
  let r: Rig;
  beforeEach(async () => {
    r = await rig();
    r.telegram.addChat(41);
    await r.chats.subscribe({ chatId: '41', source: SOURCE, options: {} });
  });
  afterEach(async () => {
    await r.close();
  });

  it('tells ауд. 425 → 518 then 518 → 620 as one «ауд. 425 → 620» when the hours end, once', async () => {
    await r.publish(NIGHT, [moved('425', '518')]);
    r.clock.now += 3_600_000;
    const second = await r.publish(NIGHT + 3_600_000, [moved('518', '620')]);
    // One send waits for the morning, not two; nothing went out in the night.
    const waiting = await r.delayed();
    expect(waiting).toHaveLength(1);
    expect(waiting[0]?.data).toMatchObject({
      chatId: '41',
      collapse: true,
      deliveryId: heldDeliveryId('tg', '41', SOURCE),
    });
    expect(r.telegram.messages()).toEqual([]);
    // The log line says when and why, with the setting's name.
    const line = r.logs.find((each) => each.reason === 'quiet-hours');
    expect(line).toMatchObject({
      source: SOURCE,
      held: 1,
      quietHours: '23:00-07:00',
      timezone: 'Europe/Moscow',
      sendAt: '2029-10-02T04:00:00.000Z',
      setting: 'NOTIFY_QUIET_HOURS',
    });
    expect(String(line?.msg)).toContain('NOTIFY_QUIET_HOURS=off');

    expect(await r.morning()).toEqual([{ outcome: 'sent', messageId: expect.any(Number) }]);
    const messages = r.telegram.messages(41);
    expect(messages).toHaveLength(1);
    expect(messages[0]?.text).toContain('15:40 Оптика (лабораторная работа): ауд. 425 → 620');
    expect(messages[0]?.text).not.toContain('518');

    // The second set's fan-out run again (a crash before its outbox entry was taken out) holds nothing again.
    await r.publish(second.stamp, second.items);
    expect(await r.outbox.state(deliveryId('tg', '41', { source: SOURCE, stamp: second.stamp }))).toBe('sent');
    expect(await r.outbox.held('tg', '41', SOURCE)).toEqual([]);
    expect(r.telegram.messages(41)).toHaveLength(1);
  });

  it('tells nothing of a class moved and moved back in the night', async () => {
    await r.publish(NIGHT, [moved('425', '518')]);
    r.clock.now += 60_000;
    await r.publish(NIGHT + 60_000, [moved('518', '425')]);
    expect(await r.morning()).toEqual([{ outcome: 'empty' }]);
    expect(r.telegram.messages()).toEqual([]);
    expect(await r.outbox.held('tg', '41', SOURCE)).toEqual([]);
  });

  it('sends what waits at once, with the change that cannot wait, when a class starts before the hours end', async () => {
    await r.publish(NIGHT, [moved('425', '518')]);
    // 03:00: a class at 06:30 today moved: it goes now, and the held change goes with it (in order).
    r.clock.now = Date.UTC(2029, 9, 2, 0, 0);
    const soon = { ...moved('100', '101', 'u2'), startsAt: Date.UTC(2029, 9, 2, 3, 30) };
    soon.before = side('100', { date: '2029-10-02', begin: '06:30', startUtc: soon.startsAt });
    soon.after = side('101', { date: '2029-10-02', begin: '06:30', startUtc: soon.startsAt });
    await r.publish(r.clock.now, [soon]);
    const now = (await r.queue.getJobs(['waiting', 'active', 'completed'])).filter((job) => job.data.collapse);
    expect(now).toHaveLength(1);
    await jobEnded(r.queue, now[0]?.id as string);
    const [message] = r.telegram.messages(41);
    expect(message?.text).toContain('ауд. 100 → 101');
    expect(message?.text).toContain('ауд. 425 → 518');
    // The morning's send finds nothing left.
    expect(await r.morning()).toEqual([{ outcome: 'empty' }]);
    expect(r.telegram.messages(41)).toHaveLength(1);
  });

  it('drops the held sets when Telegram refuses their message, so the next change is told on its own', async () => {
    const first = await r.publish(NIGHT, [moved('425', '518')]);
    r.telegram.fault({
      method: 'sendMessage',
      kind: '400',
      chatId: 41,
      description: "Bad Request: can't parse entities",
    });
    const [job] = await r.delayed();
    await job?.promote();
    expect((await jobEnded(r.queue, job?.id as string)).state).toBe('failed');
    expect(await r.outbox.held('tg', '41', SOURCE)).toEqual([]);
    expect(await r.outbox.state(deliveryId('tg', '41', { source: SOURCE, stamp: first.stamp }))).toBe('dropped');

    // The next day's change goes at once and alone: not rebuilt into the refused message with what was held.
    await expectNextDayToldAlone(r);
  });

  it.each([
    ['403', 'Forbidden: bot was blocked by the user'],
    ['400', 'Bad Request: chat not found'],
  ] as const)('drops everything held for a chat that is gone (%s %s)', async (kind, description) => {
    await r.chats.subscribe({ chatId: '41', source: OTHER, options: {} });
    await r.publish(NIGHT, [moved('425', '518')]);
    await r.publish(NIGHT + 1, [moved('300', '301', 'u9')], OTHER);
    r.telegram.fault({ method: 'sendMessage', kind, chatId: 41, description });
    const job = (await r.delayed()).find((each) => each.data.set.source === SOURCE);
    await job?.promote();
    expect((await jobEnded(r.queue, job?.id as string)).job.returnvalue).toEqual({ outcome: 'dropped' });
    expect(await r.chats.ofChat('41')).toEqual([]);
    // The other source's held set goes too, before its own send runs.
    expect(await r.outbox.held('tg', '41', SOURCE)).toEqual([]);
    expect(await r.outbox.held('tg', '41', OTHER)).toEqual([]);

    // Back with /start the next day: a new change is told alone.
    await r.chats.subscribe({ chatId: '41', source: SOURCE, options: {} });
    await expectNextDayToldAlone(r);
  });

  it('tells a send delayed for the morning before sets were held together with them, as one net change', async () => {
    // A version that did not hold sets queued ауд. 425 → 518 on its own for the chat's morning moment.
    const at = deliverAt([{ startsAt: CLASS }], NIGHT, r.fanout.config.notifyQuietHours, 'Europe/Moscow', '41');
    const old: ChangeSet = { source: SOURCE, name: 'ИВТ-21', stamp: NIGHT, items: [moved('425', '518')], omitted: 0 };
    const oldId = deliveryId('tg', '41', { source: SOURCE, stamp: NIGHT });
    const queued = await r.queue.add(
      'telegram',
      { deliveryId: oldId, chatId: '41', set: old, pageUrl: 'https://timetable.example.edu/g', deliverAt: at },
      { ...telegramJobOptions(), jobId: `tg-${deliveryHash(oldId)}`, delay: at - NIGHT },
    );
    // After the deploy, ауд. 518 → 620 the same night is held; its collapsing send is due a moment after the old one.
    const second = await r.publish(NIGHT + 60_000, [moved('518', '620')]);
    const collapsing = (await r.delayed()).find((job) => job.data.collapse);
    const due = (job: { timestamp: number; delay: number } | undefined) => (job?.timestamp ?? 0) + (job?.delay ?? 0);
    expect(due(collapsing) - due(queued)).toBeGreaterThanOrEqual(HELD_SEND_LAG_MS);

    // The morning: both run, in the order they are due. One message, the net change.
    await queued.promote();
    await collapsing?.promote();
    // Whichever leases the held sets first tells them; the other finds them told.
    const outcomes = [
      (await jobEnded(r.queue, queued.id as string)).job.returnvalue.outcome,
      (await jobEnded(r.queue, collapsing?.id as string)).job.returnvalue.outcome,
    ];
    expect(outcomes.filter((outcome) => outcome === 'sent')).toHaveLength(1);
    expect(outcomes.every((outcome) => ['sent', 'empty', 'done-before'].includes(outcome))).toBe(true);
    const messages = r.telegram.messages(41);
    expect(messages).toHaveLength(1);
    expect(messages[0]?.text).toContain('ауд. 425 → 620');
    expect(messages[0]?.text).not.toContain('518');
    expect(await r.outbox.state(oldId)).toBe('sent');
    expect(await r.outbox.state(deliveryId('tg', '41', { source: SOURCE, stamp: second.stamp }))).toBe('sent');
  });
});
