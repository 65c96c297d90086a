/**
 * The channel core on a real Redis and BullMQ worker, driven through a small channel of the test's own (its
 * subscribers in memory, its answers scripted): a delivery is told once however often its job is added; a `gone`
 * address is unsubscribed from everything with what is held for it; a channel that refuses our credentials is
 * disabled (said once), its messages wait, and the first success puts it back on (said once); a rate limit is
 * waited out without using an attempt; a refusal for good drops the message; a digest subscriber's changes wait
 * for `MAIL_DIGEST_TIME` and go as one net change, unless a class starts before then.
 */
import { Writable } from 'node:stream';
import { type Job, Queue, Worker } from 'bullmq';
import { afterEach, beforeEach, describe, expect, inject, it, onTestFinished } from 'vitest';
import { type ChannelSendResult, type ChannelSendTuning, channelSendProcessor } from '../../src/jobs/channel-send.ts';
import type { ChannelSendJobData } from '../../src/jobs/contract.ts';
import { fanOutChangeSet, type NotifyFanoutDeps } from '../../src/jobs/notify-fanout.ts';
import { channelJobOptions } from '../../src/jobs/queues.ts';
import { limiterFor } from '../../src/jobs/workers.ts';
import { connectRedis } from '../../src/lib/redis-connection.ts';
import { RedisOutageLog } from '../../src/lib/redis-outage.ts';
import { createLogger, silentLogger } from '../../src/logger.ts';
import type {
  ChannelAdapter,
  ChannelMessage,
  ChannelName,
  ChannelOutcome,
  ChannelSubscriber,
} from '../../src/notify/channel.ts';
import { createMetrics, type Metrics } from '../../src/runtime/metrics.ts';
import { ChannelStates } from '../../src/store/channel-states.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { deliveryHash, deliveryId, heldDeliveryId, NotifyOutbox } from '../../src/store/notify-outbox.ts';
import type { ChangeSet, NotifyItem } from '../../src/timetable/notify-change.ts';
import type { SourceKey } from '../../src/timetable/source.ts';
import { until } from '../../testkit/poll.ts';
import { jobEnded } from '../support/jobs.ts';
import { moved } from '../support/notify-items.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

const SOURCE = 'group:4242';
const OTHER = 'group:4243';
/** 10:00 in Moscow: outside the quiet hours, before the digest time (19:00). */
const MORNING = Date.UTC(2029, 9, 2, 7, 0);

/** A channel of the test's own: subscribers in memory, answers scripted per call (then `sent`). */
interface TestChannel extends ChannelAdapter {
  subscribe(address: string, source: SourceKey, digest?: boolean): void;
  /** The answers of the next sends, in order; once used up, every send is `sent`. */
  script: ChannelOutcome[];
  /** Every send, with the answer it got. */
  sends: { message: ChannelMessage; outcome: ChannelOutcome; at: number }[];
  /** Messages accepted, per address. */
  told(address: string): ChannelMessage[];
}

function testChannel(name: ChannelName): TestChannel {
  const subscribers = new Map<string, Map<SourceKey, ChannelSubscriber>>();
  const sends: TestChannel['sends'] = [];
  const channel: TestChannel = {
    name,
    on: true,
    paceMs: 0,
    script: [],
    sends,
    subscribe: (address, source, digest) => {
      const own = subscribers.get(address) ?? new Map<SourceKey, ChannelSubscriber>();
      own.set(source, { address, options: {}, ...(digest ? { digest } : {}) });
      subscribers.set(address, own);
    },
    ofSource: async (source) =>
      [...subscribers.values()].flatMap((own) => {
        const found = own.get(source);
        return found === undefined ? [] : [found];
      }),
    hasAny: async (source) => [...subscribers.values()].some((own) => own.has(source)),
    follows: async (address, source) => subscribers.get(address)?.has(source) ?? false,
    unsubscribe: async (address) => {
      const left = [...(subscribers.get(address)?.keys() ?? [])];
      subscribers.delete(address);
      return left;
    },
    send: async (message) => {
      const outcome = channel.script.shift() ?? { kind: 'sent', messageId: `m${sends.length + 1}` };
      sends.push({ message, outcome, at: Date.now() });
      return outcome;
    },
    told: (address) =>
      sends.filter((each) => each.message.address === address && each.outcome.kind === 'sent').map((e) => e.message),
  };
  return channel;
}

interface Rig {
  channel: TestChannel;
  queue: Queue<ChannelSendJobData, ChannelSendResult>;
  outbox: NotifyOutbox;
  states: ChannelStates;
  metrics: Metrics;
  logs: Record<string, unknown>[];
  clock: { now: number };
  /** Sets an address's turn as its last message would (`<prefix>:pace:<address>` for `ms`). */
  paceTaken(prefix: string, address: string, ms: number): Promise<void>;
  /** Queues the delivery of `set` to `address` under its deterministic id (or `jobId`). */
  deliver(address: string, set: ChangeSet, jobId?: string): Promise<Job<ChannelSendJobData, ChannelSendResult>>;
  /** Publishes `items` at `stamp` into the outbox and fans them out. */
  publish(stamp: number, items: NotifyItem[], source?: SourceKey): Promise<ChangeSet>;
  /** How many messages the metrics counted with `outcome`. */
  counted(outcome: string): Promise<number>;
  close(): Promise<void>;
}

/** `serviceClock`: the processor reads the rig's clock (years from the wall clock) instead of `Date.now`. */
async function rig(name: ChannelName, tuning: ChannelSendTuning = {}, serviceClock = false): Promise<Rig> {
  const prefix = uniquePrefix('channel-send');
  const keys = redisKeys(prefix);
  const outage = new RedisOutageLog(silentLogger());
  const redis = connectRedis(inject('redisUrl'), { name: 'test-channel', outage });
  const blocking = connectRedis(inject('redisUrl'), { name: 'test-channel-worker', outage, blocking: true });
  const queue = new Queue<ChannelSendJobData, ChannelSendResult>(name, { connection: redis, prefix: keys.queuePrefix });
  const outbox = new NotifyOutbox(redis, keys);
  const states = new ChannelStates(redis, keys);
  const metrics = createMetrics();
  const channel = testChannel(name);
  const logs: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line.trim() !== '') logs.push(JSON.parse(line));
      done();
    },
  });
  const logger = createLogger({ level: 'info', pretty: false, destination });
  const clock = { now: MORNING };
  const unused = { addBulk: async () => [] } as never;
  const pageUrl = 'https://timetable.example.edu/timetables/groups/4242';
  const fanout: NotifyFanoutDeps = {
    config: {
      timezone: 'Europe/Moscow',
      notifyQuietHours: { fromMinute: 23 * 60, toMinute: 7 * 60 },
      mailDigestTime: '19:00',
    },
    redis,
    keys,
    queues: { notify: unused, webhook: unused, [name]: queue },
    notify: { outbox, pageUrl: () => pageUrl, channels: [channel] },
    webhooks: { ofSource: async () => [] },
    subscriptions: { feedOptionsOf: async () => ({}) } as never,
    logger,
    now: () => clock.now,
  };
  const processor = channelSendProcessor(
    {
      logger,
      redis,
      keys,
      queues: { [name]: queue },
      notify: { outbox, states },
      metrics,
      now: serviceClock ? () => clock.now : Date.now,
    },
    channel,
    tuning,
  );
  const worker = new Worker(name, processor, {
    connection: blocking,
    prefix: keys.queuePrefix,
    concurrency: 4,
    limiter: limiterFor(50),
  });
  worker.on('error', () => undefined);
  return {
    channel,
    queue,
    outbox,
    states,
    metrics,
    logs,
    clock,
    paceTaken: async (prefix, address, ms) => {
      await redis.set(keys.channelPace(prefix, address), '1', 'PX', ms);
    },
    deliver: (address, set, jobId) => {
      const id = deliveryId('mx', address, set);
      return queue.add(
        name,
        { deliveryId: id, chatId: address, set, pageUrl },
        { jobId: jobId ?? `mx-${deliveryHash(id)}`, attempts: 3, backoff: { type: 'fixed', delay: 200 } },
      );
    },
    publish: async (stamp, items, source = SOURCE) => {
      const set: ChangeSet = { source, name: 'ИВТ-21', stamp, items, omitted: 0 };
      await outbox.write(redis.multi(), set).exec();
      await fanOutChangeSet(fanout, { source, stamp });
      return set;
    },
    counted: async (outcome) => {
      const { values } = await metrics.channelMessages.get();
      return values.find((v) => v.labels.channel === name && v.labels.outcome === outcome)?.value ?? 0;
    },
    close: async () => {
      await worker.close();
      await queue.close();
      await deletePrefix(inject('redisUrl'), prefix);
      await blocking.quit();
      await redis.quit();
    },
  };
}

function changeSet(items: NotifyItem[], stamp = 1_900_000_000_000, source = SOURCE): ChangeSet {
  return { source, name: 'ИВТ-21', stamp, items, omitted: 0 };
}

describe('the channel core', () => {
  let r: Rig;
  beforeEach(async () => {
    r = await rig('max', { disabledRetryMs: 400 });
  });
  afterEach(async () => {
    await r.close();
  });

  it('tells an address once, however often the delivery is queued', async () => {
    r.channel.subscribe('d1', SOURCE);
    const set = changeSet([moved('425', '518')]);
    const first = await jobEnded(r.queue, (await r.deliver('d1', set)).id as string);
    expect(first.job.returnvalue).toEqual({ outcome: 'sent', messageId: 'm1' });
    // The finished job trimmed, the fan-out run again (a sweep after a crash), and a doubled job of another id.
    await first.job.remove();
    const again = await jobEnded(r.queue, (await r.deliver('d1', set)).id as string);
    const doubled = await jobEnded(r.queue, (await r.deliver('d1', set, 'doubled')).id as string);
    expect(again.job.returnvalue).toEqual({ outcome: 'done-before' });
    expect(doubled.job.returnvalue).toEqual({ outcome: 'done-before' });
    expect(r.channel.sends).toHaveLength(1);
    const [message] = r.channel.told('d1');
    expect(message).toMatchObject({ address: 'd1', source: SOURCE, deliveryId: deliveryId('mx', 'd1', set) });
    expect(message?.told.items.map((item) => item.after?.location)).toEqual(['Корпус 1, 518']);
    expect(await r.outbox.state(deliveryId('mx', 'd1', set))).toBe('sent');
    expect(await r.counted('sent')).toBe(1);
  });

  it('unsubscribes a gone address from everything and drops what is held for it', async () => {
    r.channel.subscribe('d2', SOURCE);
    r.channel.subscribe('d2', OTHER);
    // Held for the other source (as the quiet hours hold it).
    const held = changeSet([moved('300', '301', 'u9')], 1_900_000_000_001, OTHER);
    await r.outbox.holdAll([{ prefix: 'mx', address: 'd2', ref: held, set: held, mode: 'always' }]);
    expect(await r.outbox.held('mx', 'd2', OTHER)).toHaveLength(1);
    r.channel.script.push({ kind: 'gone', reason: '403 chat.denied' });
    const set = changeSet([moved('425', '518')]);
    const ended = await jobEnded(r.queue, (await r.deliver('d2', set)).id as string);
    expect(ended.state).toBe('completed');
    expect(ended.job.returnvalue).toEqual({ outcome: 'dropped' });
    expect(await r.channel.ofSource(SOURCE)).toEqual([]);
    expect(await r.channel.ofSource(OTHER)).toEqual([]);
    expect(await r.outbox.held('mx', 'd2', OTHER)).toEqual([]);
    expect(await r.outbox.state(deliveryId('mx', 'd2', held))).toBe('dropped');
    expect(await r.outbox.state(deliveryId('mx', 'd2', set))).toBe('dropped');
    expect(await r.counted('gone')).toBe(1);
    expect(r.logs.filter((line) => line.msg === 'max address is gone: unsubscribed it')).toHaveLength(1);
  });

  it('disables a channel that refuses our credentials, keeps its messages, and a success puts it back on', async () => {
    for (const address of ['d3', 'd4', 'd5']) r.channel.subscribe(address, SOURCE);
    const refused: ChannelOutcome = { kind: 'misconfigured', reason: '401 verify.token: invalid token' };
    r.channel.script.push(refused, refused, refused);
    const set = changeSet([moved('425', '518')]);
    const jobs = [await r.deliver('d3', set)];
    // The first refusal disables the channel before the others start: they wait, at most one trying it at a time.
    await until(
      () => r.states.disabled('max'),
      (state) => state !== undefined,
      10_000,
    );
    expect(await r.states.disabled('max')).toMatchObject({ reason: '401 verify.token: invalid token' });
    jobs.push(await r.deliver('d4', set), await r.deliver('d5', set));
    // Nothing is dropped meanwhile: every delivery is still open.
    expect(await r.outbox.state(deliveryId('mx', 'd3', set))).toBeUndefined();
    for (const job of jobs)
      expect((await jobEnded(r.queue, job.id as string)).job.returnvalue).toMatchObject({
        outcome: 'sent',
      });
    // The answers it was given, in order: three refusals (each a try of the disabled channel), then successes.
    expect(r.channel.sends.map((each) => each.outcome.kind)).toEqual([
      'misconfigured',
      'misconfigured',
      'misconfigured',
      'sent',
      'sent',
      'sent',
    ]);
    for (const address of ['d3', 'd4', 'd5']) expect(r.channel.told(address)).toHaveLength(1);
    expect(await r.states.disabled('max')).toBeUndefined();
    // Said once each way, not once per job.
    expect(r.logs.filter((line) => String(line.msg).startsWith('max refuses our credentials'))).toHaveLength(1);
    expect(r.logs.filter((line) => line.msg === 'max works again: channel on')).toHaveLength(1);
    expect(await r.counted('misconfigured')).toBe(3);
    // Waiting for a mended channel used no attempt.
    for (const job of jobs) expect((await r.queue.getJob(job.id as string))?.attemptsMade).toBe(1);
  });

  it('waits out a rate limit on the channel queue without using an attempt', async () => {
    r.channel.subscribe('d6', SOURCE);
    r.channel.script.push({ kind: 'rate-limited', retryAfterMs: 700 });
    const ended = await jobEnded(r.queue, (await r.deliver('d6', changeSet([moved('425', '518')]))).id as string);
    expect(ended.job.returnvalue).toMatchObject({ outcome: 'sent' });
    expect(ended.job.attemptsMade).toBe(1);
    const [limited, sent] = r.channel.sends;
    expect([limited?.outcome.kind, sent?.outcome.kind]).toEqual(['rate-limited', 'sent']);
    // The queue waited as long as the channel asked.
    expect((sent?.at ?? 0) - (limited?.at ?? 0)).toBeGreaterThanOrEqual(650);
    expect(await r.counted('rate-limited')).toBe(1);
  });

  it('counts only rate limits as rate-limit rounds, however long the channel was disabled', async () => {
    // A disabled spell of 25 tries (25 minutes in production), then the mended channel asks to wait once.
    const fast = await rig('telegram', { disabledRetryMs: 50 });
    onTestFinished(() => fast.close());
    fast.channel.subscribe('d8', SOURCE);
    const refused: ChannelOutcome = { kind: 'misconfigured', reason: '401 Unauthorized' };
    fast.channel.script.push(...Array.from({ length: 25 }, () => refused), { kind: 'rate-limited', retryAfterMs: 50 });
    const job = await fast.deliver('d8', changeSet([moved('425', '518')]));
    const ended = await jobEnded(fast.queue, job.id as string, 60_000);
    expect(ended.job.returnvalue).toMatchObject({ outcome: 'sent' });
    expect(fast.channel.sends.map((each) => each.outcome.kind)).toEqual([
      ...Array.from({ length: 25 }, () => 'misconfigured'),
      'rate-limited',
      'sent',
    ]);
    expect(fast.channel.told('d8')).toHaveLength(1);
    // No attempt was used, and the job's data counted the one rate limit.
    expect(ended.job.attemptsMade).toBe(1);
    expect(ended.job.data.rateLimits).toEqual({ rounds: 1, attempt: 0 });
  }, 90_000);

  it('fails an attempt after 21 rate limits in a row, and counts afresh after it', async () => {
    r.channel.subscribe('d9', SOURCE);
    const limited: ChannelOutcome = { kind: 'rate-limited', retryAfterMs: 10 };
    r.channel.script.push(...Array.from({ length: 22 }, () => limited));
    const job = await r.deliver('d9', changeSet([moved('425', '518')]));
    const ended = await jobEnded(r.queue, job.id as string, 60_000);
    expect(ended.job.returnvalue).toMatchObject({ outcome: 'sent' });
    // The 21st used an attempt; the 22nd was the first of the next one's rounds.
    expect(ended.job.attemptsMade).toBe(2);
    expect(ended.job.data.rateLimits).toEqual({ rounds: 1, attempt: 1 });
    expect(r.channel.told('d9')).toHaveLength(1);
  }, 90_000);

  it("puts jobs back on the wall clock, whatever the service's clock says", async () => {
    // The service's clock three years ahead (as a test's simulated one may be): a wait computed from it would park
    // the job for years.
    const ahead = await rig('telegram', { disabledRetryMs: 50 }, true);
    onTestFinished(() => ahead.close());
    expect(ahead.clock.now - Date.now()).toBeGreaterThan(365 * 86_400_000);
    ahead.channel.subscribe('d10', SOURCE);
    ahead.channel.script.push({ kind: 'misconfigured', reason: '401 Unauthorized' });
    const job = await ahead.deliver('d10', changeSet([moved('425', '518')]));
    expect((await jobEnded(ahead.queue, job.id as string)).job.returnvalue).toMatchObject({ outcome: 'sent' });
    expect(ahead.channel.sends.map((each) => each.outcome.kind)).toEqual(['misconfigured', 'sent']);
  });

  it("takes the address's turn before a disabled channel's one try", async () => {
    (r.channel as { paceMs: number }).paceMs = 1_000;
    r.channel.subscribe('d11', SOURCE);
    await r.states.disable('max', '401 verify.token', Date.now());
    // The address's last message went out just now: this send waits for its turn first.
    await r.paceTaken('mx', 'd11', 600);
    const job = await r.deliver('d11', changeSet([moved('425', '518')]));
    expect(
      await until(
        () => r.queue.getJobState(job.id as string),
        (state) => state === 'delayed',
      ),
    ).toBe('delayed');
    // Waiting for its turn, it holds no try of the channel: another send or a probe may try it meanwhile.
    expect(await r.states.probeLeft('max')).toBe(0);
    expect((await jobEnded(r.queue, job.id as string)).job.returnvalue).toMatchObject({ outcome: 'sent' });
    expect(await r.states.disabled('max')).toBeUndefined();
  });

  it('drops a message refused for good, and retries one that failed for now', async () => {
    r.channel.subscribe('d7', SOURCE);
    r.channel.script.push({ kind: 'failed', permanent: true, reason: '400 text too long' });
    const set = changeSet([moved('425', '518')]);
    const refused = await jobEnded(r.queue, (await r.deliver('d7', set)).id as string);
    expect(refused.state).toBe('failed');
    expect(refused.job.attemptsMade).toBe(1);
    expect(await r.outbox.state(deliveryId('mx', 'd7', set))).toBe('dropped');
    r.channel.script.push({ kind: 'failed', permanent: false, reason: '503' });
    const next = changeSet([moved('518', '620')], 1_900_000_000_100);
    const retried = await jobEnded(r.queue, (await r.deliver('d7', next)).id as string);
    expect(retried.job.returnvalue).toMatchObject({ outcome: 'sent' });
    expect(retried.job.attemptsMade).toBe(2);
    expect(r.channel.told('d7')).toHaveLength(1);
    expect(await r.counted('dropped')).toBe(1);
    expect(await r.counted('failed')).toBe(1);
  });

  it('settles quietly a message whose address left the source while it was made', async () => {
    r.channel.subscribe('d8', SOURCE);
    const send = r.channel.send;
    // The person unsubscribes (an unsubscribe link, `/stop`) between the core's check and the send, which then
    // finds nothing to send to.
    r.channel.send = async (message) => {
      await r.channel.unsubscribe(message.address);
      r.channel.send = send;
      return { kind: 'failed', permanent: false, reason: 'the mailbox left the source while its mail was made' };
    };
    const set = changeSet([moved('425', '518')]);
    const ended = await jobEnded(r.queue, (await r.deliver('d8', set)).id as string);
    expect(ended.state).toBe('completed');
    expect(ended.job.returnvalue).toEqual({ outcome: 'unsubscribed' });
    expect(ended.job.attemptsMade).toBe(1);
    expect(await r.outbox.state(deliveryId('mx', 'd8', set))).toBe('dropped');
    expect(await r.counted('failed')).toBe(0);
  });
});

describe('daily digest', () => {
  let r: Rig;
  beforeEach(async () => {
    r = await rig('email');
    r.channel.subscribe('box-digest', SOURCE, true);
    r.channel.subscribe('box-each', SOURCE);
  });
  afterEach(async () => {
    await r.close();
  });

  it('holds a digest subscriber until MAIL_DIGEST_TIME, then tells one net change', async () => {
    await r.publish(MORNING, [moved('425', '518')]);
    r.clock.now += 3_600_000;
    const second = await r.publish(MORNING + 3_600_000, [moved('518', '620')]);
    // The subscriber of a mail per change got two; the digest waits, one send for both changes.
    await until(
      async () => r.channel.told('box-each').length,
      (count) => count === 2,
      10_000,
    );
    const waiting = await r.queue.getJobs(['delayed']);
    expect(waiting).toHaveLength(1);
    expect(waiting[0]?.data).toMatchObject({
      chatId: 'box-digest',
      collapse: true,
      deliveryId: heldDeliveryId('em', 'box-digest', SOURCE),
    });
    // 19:00 in Moscow, within the spread after it.
    const due = (waiting[0]?.data.deliverAt ?? 0) - Date.UTC(2029, 9, 2, 16, 0);
    expect(due).toBeGreaterThanOrEqual(0);
    expect(due).toBeLessThan(5 * 60_000);
    expect(r.channel.told('box-digest')).toEqual([]);
    const line = r.logs.find((each) => each.reason === 'digest');
    expect(line).toMatchObject({
      channel: 'email',
      source: SOURCE,
      held: 1,
      digestTime: '19:00',
      sendAt: '2029-10-02T16:00:00.000Z',
      setting: 'MAIL_DIGEST_TIME',
    });

    await waiting[0]?.promote();
    expect((await jobEnded(r.queue, waiting[0]?.id as string)).job.returnvalue).toMatchObject({ outcome: 'sent' });
    const digest = r.channel.told('box-digest');
    expect(digest).toHaveLength(1);
    expect(digest[0]?.told.items).toHaveLength(1);
    expect(digest[0]?.told.items[0]).toMatchObject({
      before: { location: 'Корпус 1, 425' },
      after: { location: 'Корпус 1, 620' },
    });
    // Named after the newest set it tells, as its delivery.
    expect(digest[0]?.deliveryId).toBe(deliveryId('em', 'box-digest', second));
    expect(await r.outbox.held('em', 'box-digest', SOURCE)).toEqual([]);
  });

  it('sends at once, with what waits, a change to a class that starts before the digest time', async () => {
    await r.publish(MORNING, [moved('425', '518')]);
    r.clock.now += 3_600_000;
    // 11:00: a class at 14:00 today moved: it cannot wait for 19:00.
    const today = Date.UTC(2029, 9, 2, 11, 0);
    const soon = moved('100', '101', 'u2', { date: '2029-10-02', begin: '14:00', startUtc: today });
    await r.publish(r.clock.now, [soon]);
    await until(
      async () => r.channel.told('box-digest').length,
      (count) => count === 1,
      10_000,
    );
    const [message] = r.channel.told('box-digest');
    expect(message?.told.items.map((item) => item.after?.location).sort()).toEqual(['Корпус 1, 101', 'Корпус 1, 518']);
    // The evening's send finds nothing left to tell.
    const [evening] = await r.queue.getJobs(['delayed']);
    await evening?.promote();
    expect((await jobEnded(r.queue, evening?.id as string)).job.returnvalue).toEqual({ outcome: 'empty' });
    expect(r.channel.told('box-digest')).toHaveLength(1);
  });

  it('gives each channel its own job options', () => {
    expect(channelJobOptions('email').attempts).toBeGreaterThan(channelJobOptions('telegram').attempts ?? 0);
  });
});
