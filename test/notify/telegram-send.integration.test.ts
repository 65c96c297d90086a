/**
 * The Telegram send job on a real Redis and BullMQ worker against the fake Bot API: told once however the job
 * is repeated, a blocked chat unsubscribed, Telegram's 429 waited out, one message per chat per second, classes
 * that started meanwhile left out.
 */
import { type Job, Queue, Worker } from 'bullmq';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import type { TelegramSendJobData } from '../../src/jobs/contract.ts';
import { type TelegramSendResult, telegramSendProcessor } from '../../src/jobs/telegram-send.ts';
import { limiterFor } from '../../src/jobs/workers.ts';
import { connectRedis } from '../../src/lib/redis-connection.ts';
import { RedisOutageLog } from '../../src/lib/redis-outage.ts';
import { silentLogger } from '../../src/logger.ts';
import { createMetrics } from '../../src/runtime/metrics.ts';
import { ChannelStates } from '../../src/store/channel-states.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { deliveryHash, deliveryId, NotifyOutbox } from '../../src/store/notify-outbox.ts';
import { TelegramChats } from '../../src/store/telegram-chats.ts';
import type { ChangeSet, NotifyItem } from '../../src/timetable/notify-change.ts';
import { type FakeTelegram, startFakeTelegram } from '../../testkit/fake-telegram/index.ts';
import { jobEnded } from '../support/jobs.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

const HOUR = 3_600_000;

function roomChange(uid: string, startsAt: number, summary = 'Физика (практика)'): NotifyItem {
  const side = { date: '2030-10-02', begin: '10:10', end: '11:40', startUtc: startsAt, summary, teacher: '' };
  return {
    kind: 'moved',
    uid,
    before: { ...side, location: 'Корпус 1, 1008' },
    after: { ...side, location: 'Корпус 1, 2207' },
    startsAt,
    lessonKind: 'практика',
    note: '',
  };
}

interface Rig {
  telegram: FakeTelegram;
  queue: Queue<TelegramSendJobData, TelegramSendResult>;
  outbox: NotifyOutbox;
  chats: TelegramChats;
  /** Queues the delivery of `set` to `chatId` under its deterministic id. */
  deliver(chatId: string, set: ChangeSet): Promise<Job<TelegramSendJobData, TelegramSendResult>>;
  close(): Promise<void>;
}

async function rig(): Promise<Rig> {
  const telegram = await startFakeTelegram();
  const prefix = uniquePrefix('tg-send');
  const keys = redisKeys(prefix);
  const outage = new RedisOutageLog(silentLogger());
  const redis = connectRedis(inject('redisUrl'), { name: 'test-tg', outage });
  const blocking = connectRedis(inject('redisUrl'), { name: 'test-tg-worker', outage, blocking: true });
  const queue = new Queue<TelegramSendJobData, TelegramSendResult>('telegram', {
    connection: redis,
    prefix: keys.queuePrefix,
  });
  const outbox = new NotifyOutbox(redis, keys);
  const chats = new TelegramChats(redis, keys);
  const ctx = {
    config: { telegramBotToken: telegram.token, telegramApiRoot: telegram.apiRoot },
    logger: silentLogger(),
    redis,
    keys,
    queues: { telegram: queue },
    notify: { outbox, chats, states: new ChannelStates(redis, keys) },
    metrics: createMetrics(),
    now: Date.now,
  };
  const worker = new Worker('telegram', telegramSendProcessor(ctx), {
    connection: blocking,
    prefix: keys.queuePrefix,
    concurrency: 4,
    limiter: limiterFor(25),
  });
  worker.on('error', () => undefined);
  return {
    telegram,
    queue,
    outbox,
    chats,
    deliver: (chatId, set) => {
      const id = deliveryId('tg', chatId, set);
      return queue.add(
        'telegram',
        { deliveryId: id, chatId, set, pageUrl: 'https://timetable.example.edu/timetables/groups/4242' },
        { jobId: `tg-${deliveryHash(id)}`, attempts: 5, backoff: { type: 'fixed', delay: 200 } },
      );
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

function changeSet(source: string, items: NotifyItem[], stamp = 1_900_000_000_000): ChangeSet {
  return { source, name: 'ИВТ-21 <б>', stamp, items, omitted: 0 };
}

describe('telegramSendProcessor', () => {
  let r: Rig;
  beforeEach(async () => {
    r = await rig();
  });
  afterEach(async () => {
    await r.close();
  });

  it('tells a chat once, and a re-added or repeated job of the same delivery tells nothing more', async () => {
    r.telegram.addChat(42);
    await r.chats.subscribe({ chatId: '42', source: 'group:4242', options: {} });
    const set = changeSet('group:4242', [roomChange('u1', Date.now() + 5 * HOUR)]);
    const job = await r.deliver('42', set);
    const first = await jobEnded(r.queue, job.id as string);
    expect(first.job.returnvalue).toMatchObject({ outcome: 'sent' });
    const [message] = r.telegram.messages(42);
    expect(message?.text).toContain('10:10 Физика (практика): ауд. 1008 → 2207');
    expect(message?.text.startsWith('ИВТ-21 <б>: изменения в расписании')).toBe(true);
    // The finished job is trimmed and the fan-out runs again (a sweep after a crash): the same delivery.
    await first.job.remove();
    const again = await r.deliver('42', set);
    expect((await jobEnded(r.queue, again.id as string)).job.returnvalue).toEqual({ outcome: 'done-before' });
    expect(r.telegram.messages(42)).toHaveLength(1);
    expect(await r.outbox.state(deliveryId('tg', '42', set))).toBe('sent');
  });

  it('leaves out classes that have started, and sends nothing when none is left', async () => {
    r.telegram.addChat(7);
    await r.chats.subscribe({ chatId: '7', source: 'group:1', options: {} });
    const started = roomChange('past', Date.now() - 60_000, 'Прошедшая пара');
    const mixed = changeSet('group:1', [started, roomChange('next', Date.now() + HOUR, 'Будущая пара')], 1);
    await jobEnded(r.queue, (await r.deliver('7', mixed)).id as string);
    const texts = r.telegram.messages(7).map((m) => m.text);
    expect(texts).toHaveLength(1);
    expect(texts[0]).toContain('Будущая пара');
    expect(texts[0]).not.toContain('Прошедшая пара');
    const onlyPast = changeSet('group:1', [started], 2);
    const ended = await jobEnded(r.queue, (await r.deliver('7', onlyPast)).id as string);
    expect(ended.job.returnvalue).toEqual({ outcome: 'empty' });
    expect(r.telegram.messages(7)).toHaveLength(1);
  });

  it('sends nothing to a chat that unsubscribed after the fan-out', async () => {
    r.telegram.addChat(8);
    const ended = await jobEnded(
      r.queue,
      (await r.deliver('8', changeSet('group:1', [roomChange('u', Date.now() + HOUR)]))).id as string,
    );
    expect(ended.job.returnvalue).toEqual({ outcome: 'unsubscribed' });
    expect(r.telegram.messages()).toEqual([]);
  });

  it('unsubscribes a chat that blocked the bot from every source, and drops the delivery', async () => {
    r.telegram.blockChat(9);
    await r.chats.subscribe({ chatId: '9', source: 'group:1', options: {} });
    await r.chats.subscribe({ chatId: '9', source: 'group:2', options: { subgroup: 1 } });
    const set = changeSet('group:1', [roomChange('u', Date.now() + HOUR)]);
    const ended = await jobEnded(r.queue, (await r.deliver('9', set)).id as string);
    expect(ended.state).toBe('completed');
    expect(ended.job.returnvalue).toEqual({ outcome: 'dropped' });
    expect(await r.chats.ofChat('9')).toEqual([]);
    expect(await r.chats.ofSource('group:2')).toEqual([]);
    expect(await r.outbox.state(deliveryId('tg', '9', set))).toBe('dropped');
  });

  it("waits out a 429's retry_after without using an attempt, then sends once", async () => {
    r.telegram.addChat(5);
    await r.chats.subscribe({ chatId: '5', source: 'group:1', options: {} });
    r.telegram.fault({ method: 'sendMessage', kind: '429', retryAfter: 1 });
    const started = Date.now();
    const ended = await jobEnded(
      r.queue,
      (await r.deliver('5', changeSet('group:1', [roomChange('u', Date.now() + HOUR)]))).id as string,
    );
    expect(ended.job.returnvalue).toMatchObject({ outcome: 'sent' });
    // BullMQ counts the run that completed: the rate-limited one is not counted.
    expect(ended.job.attemptsMade).toBe(1);
    const calls = r.telegram.calls('sendMessage');
    expect(calls.map((c) => c.status)).toEqual([429, 200]);
    expect((calls[1]?.at ?? 0) - (calls[0]?.at ?? 0)).toBeGreaterThanOrEqual(950);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(r.telegram.messages(5)).toHaveLength(1);
  });

  it('retries a server error and the network, and tells once', async () => {
    r.telegram.addChat(6);
    await r.chats.subscribe({ chatId: '6', source: 'group:1', options: {} });
    r.telegram.fault({ method: 'sendMessage', kind: '500' });
    r.telegram.fault({ method: 'sendMessage', kind: 'reset' });
    const ended = await jobEnded(
      r.queue,
      (await r.deliver('6', changeSet('group:1', [roomChange('u', Date.now() + HOUR)]))).id as string,
    );
    expect(ended.job.returnvalue).toMatchObject({ outcome: 'sent' });
    // Two failed runs and the one that completed.
    expect(ended.job.attemptsMade).toBe(3);
    expect(r.telegram.messages(6)).toHaveLength(1);
  });

  it('sends one message per chat per second, whatever the number of sources that changed', async () => {
    r.telegram.addChat(3);
    const sources = ['group:1', 'group:2', 'group:3'];
    for (const source of sources) await r.chats.subscribe({ chatId: '3', source, options: {} });
    const jobs = await Promise.all(
      sources.map((source) => r.deliver('3', changeSet(source, [roomChange('u', Date.now() + HOUR)]))),
    );
    for (const job of jobs) await jobEnded(r.queue, job.id as string);
    const times = r.telegram.messages(3).map((m) => m.at);
    expect(times).toHaveLength(3);
    const gaps = times.slice(1).map((at, i) => at - (times[i] as number));
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(900);
  });
});
