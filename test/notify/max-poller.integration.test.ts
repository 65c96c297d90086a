/**
 * The one MAX poller of a deployment, against the fake MAX Bot API: of two worker-like processes only the lock's
 * holder polls (never two polls at once: MAX would hand both the same updates); SIGTERM stops the holder (its
 * pending poll aborted, the lock released, exit code 0) and the other takes over before the lock would have
 * expired; a holder killed with SIGKILL is taken over once its lock expires. The marker lives in Redis: updates sent while no process polls are answered by the next one, each
 * once, and nothing answered before is answered again. A holder that loses the lock stops and stores no marker; a
 * webhook subscription left over is taken away so that polling works.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { createMaxBot, maxTokenDigest } from '../../src/notify/max/bot.ts';
import { MaxClient } from '../../src/notify/max/client.ts';
import { MaxPoller, POLL_TIMEOUT_SECONDS } from '../../src/notify/max/poller.ts';
import { botContextDeps } from '../../src/runtime/telegram.ts';
import { MaxChats } from '../../src/store/max-chats.ts';
import { type FakeMax, startFakeMax } from '../../testkit/fake-max/index.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { NODE_CACHE_ENV } from '../../testkit/processes.ts';
import { deletePrefix, TEST_SECRET_KEY, testContext, uniquePrefix } from '../support/service.ts';

const SCRIPT = resolve(import.meta.dirname, 'max-poller-process.ts');
/** The smallest lock MAX_POLL_LOCK allows: a third of it is a second. */
const LOCK_MS = 3_000;

let fake: FakeMax;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  fake = await startFakeMax({ chatRate: 0 });
});

afterEach(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await new Promise((done) => child.once('exit', done));
    }
  }
  children.clear();
});

afterAll(async () => {
  await fake?.close();
});

/** A poller process with its log lines, and when it exited. */
interface PollerProcess {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number>;
}

function startPoller(prefix: string): Promise<PollerProcess> {
  const child = spawn(process.execPath, [SCRIPT], {
    env: {
      PATH: process.env.PATH ?? '',
      ...NODE_CACHE_ENV,
      REDIS_URL: inject('redisUrl'),
      REDIS_PREFIX: prefix,
      SECRET_KEY: TEST_SECRET_KEY,
      MAX_BOT_TOKEN: fake.token,
      MAX_API_ROOT: fake.apiRoot,
      MAX_POLL_LOCK: `${LOCK_MS}ms`,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const lines: string[] = [];
  let errors = '';
  const exited = new Promise<number>((done) => child.once('exit', () => done(performance.now())));
  return new Promise((done, fail) => {
    let buffered = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        if (line.includes('"msg":"ready"')) done({ child, lines, exited });
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    child.once('exit', (code) => fail(new Error(`poller exited with ${code}: ${errors}${lines.join('\n')}`)));
  });
}

const polls = (process: PollerProcess) =>
  process.lines.filter((line) => line.includes('polling MAX for updates')).length;

/** Whether two polls were ever open at once (two processes polling). */
function overlappingPolls(since: number): boolean {
  const calls = fake.calls('updates').filter((call) => call.at >= since);
  return calls.some((call, index) =>
    calls
      .slice(index + 1)
      .some((other) => other.at < (call.endedAt ?? Date.now()) && call.at < (other.endedAt ?? Date.now())),
  );
}

/** The bot's messages to a person's dialog. */
function texts(userId: string): string[] {
  const chatId = fake.chatIdOf(userId);
  return chatId === undefined ? [] : fake.messages(chatId).map((message) => message.text);
}

describe('MAX poller', () => {
  it('polls from one process of two, and hands over before the lock expires after SIGTERM', async () => {
    const prefix = uniquePrefix('max-poller');
    const { context, close } = await testContext({ REDIS_PREFIX: prefix });
    const since = Date.now();
    const heldPolls = () => fake.calls('updates').filter((call) => call.at >= since && call.endedAt === undefined);
    try {
      const first = await startPoller(prefix);
      const second = await startPoller(prefix);
      const both = [first, second];
      await waitUntil(() => both.some((each) => polls(each) > 0), 'a poller', 10_000);
      await new Promise((done) => setTimeout(done, 2 * LOCK_MS));
      expect(both.map(polls).sort()).toEqual([0, 1]);

      fake.userSays('7001', '/help');
      await waitUntil(() => texts('7001').length > 0, 'the reply', 10_000);
      const [holder, standby] = polls(first) === 1 ? [first, second] : [second, first];
      if (!holder || !standby) throw new Error('no holder');

      await waitUntil(() => heldPolls().length === 1, "the holder's pending poll", 10_000);
      // The fake's calls are copies, in the order they came: the pending one is found again by its place.
      const pendingAt = fake.calls('updates').findIndex((call) => call.at >= since && call.endedAt === undefined);
      const owner = await context.redis.get(context.keys.mxPollLock);
      expect(owner).not.toBeNull();
      const signalled = performance.now();
      holder.child.kill('SIGTERM');
      const exitedAt = await holder.exited;
      expect(holder.child.exitCode).toBe(0);
      // The pending long poll was aborted (ended without an answer), not waited out, and the lock released.
      const pending = fake.calls('updates')[pendingAt];
      expect(pending?.endedAt).toBeDefined();
      expect(pending?.status).toBeUndefined();
      expect(exitedAt - signalled).toBeLessThan(POLL_TIMEOUT_SECONDS * 1000);
      expect(await context.redis.get(context.keys.mxPollLock)).not.toBe(owner);
      // So the other process takes over before the lock would have expired.
      await waitUntil(() => polls(standby) > 0, 'the takeover', 10_000);
      expect(performance.now() - exitedAt).toBeLessThan(LOCK_MS);

      fake.userSays('7001', '/list');
      await waitUntil(() => texts('7001').length > 1, 'the second reply', 10_000);
      await new Promise((done) => setTimeout(done, 500));
      expect(texts('7001')).toHaveLength(2);
      expect(texts('7001')[1]).toContain('Подписок нет');
      expect(overlappingPolls(since)).toBe(false);
      standby.child.kill('SIGTERM');
      await standby.exited;
      expect(standby.child.exitCode).toBe(0);
    } finally {
      await close();
    }
  }, 60_000);

  it('keeps its marker: a restart answers what came meanwhile once, and nothing twice', async () => {
    const prefix = uniquePrefix('max-marker');
    try {
      const first = await startPoller(prefix);
      await waitUntil(() => polls(first) > 0, 'polling', 10_000);
      fake.userSays('7101', '/help');
      await waitUntil(() => texts('7101').length === 1, 'the first reply', 10_000);
      first.child.kill('SIGTERM');
      await first.exited;
      // Nobody polls: these wait at MAX. Without the stored marker a new poller would get only the last one.
      fake.userSays('7101', '/list');
      fake.userSays('7101', '/today');
      fake.userSays('7101', '/subgroup');
      fake.userStarts('7102', 'g4242_s1_x5');
      const second = await startPoller(prefix);
      await waitUntil(() => texts('7101').length === 4, 'the replies after the restart', 15_000);
      await waitUntil(() => texts('7102').length === 1, 'the start after the restart', 15_000);
      second.child.kill('SIGTERM');
      await second.exited;
      const third = await startPoller(prefix);
      await waitUntil(() => polls(third) > 0, 'polling again', 10_000);
      await new Promise((done) => setTimeout(done, 1_500));
      const said = texts('7101');
      expect(said).toHaveLength(4);
      expect(said[1]).toContain('Подписок нет');
      expect(said[3]).toContain('Подгруппу выбирают');
      expect(fake.pendingUpdates()).toBe(0);
    } finally {
      await deletePrefix(inject('redisUrl'), prefix);
    }
  }, 60_000);

  it('is taken over once the lock of a holder killed with SIGKILL expires', async () => {
    const prefix = uniquePrefix('max-kill');
    try {
      const first = await startPoller(prefix);
      const second = await startPoller(prefix);
      await waitUntil(() => polls(first) + polls(second) > 0, 'a poller', 10_000);
      const [holder, standby] = polls(first) === 1 ? [first, second] : [second, first];
      if (!holder || !standby) throw new Error('no holder');
      holder.child.kill('SIGKILL');
      await holder.exited;
      fake.userSays('7201', '/help');
      await waitUntil(() => polls(standby) > 0, 'the takeover', LOCK_MS + 5_000);
      await waitUntil(() => texts('7201').length === 1, 'the reply', 10_000);
      await new Promise((done) => setTimeout(done, 500));
      expect(texts('7201')).toHaveLength(1);
    } finally {
      await deletePrefix(inject('redisUrl'), prefix);
    }
  }, 60_000);

  it('stops at once when another process took the lock, storing no marker; takes a webhook away to poll', async () => {
    const { context, close } = await testContext({ MAX_BOT_TOKEN: fake.token, MAX_API_ROOT: fake.apiRoot });
    const client = new MaxClient({ token: fake.token, apiRoot: fake.apiRoot });
    const bot = createMaxBot(
      { maxBotToken: fake.token },
      {
        ...botContextDeps(context),
        chats: new MaxChats(context.redis, context.keys),
        keys: context.keys,
        client,
        logger: silentLogger(),
        reply: undefined,
      },
    );
    const keys = { lock: context.keys.mxPollLock, marker: context.keys.mxPollMarker(maxTokenDigest(fake.token)) };
    await client.subscribe('https://old.example.edu/max/webhook', ['message_created'], 'left-over-secret');
    const poller = new MaxPoller({
      bot,
      client,
      redis: context.redis,
      keys,
      lockMs: LOCK_MS,
      logger: silentLogger(),
      backoffMs: 200,
      timeoutSeconds: 1,
    });
    try {
      poller.start();
      await waitUntil(() => poller.polling, 'polling', 10_000);
      await waitUntil(() => fake.subscriptions().length === 0, 'the webhook to be taken away', 5_000);
      fake.userSays('7301', '/help');
      await waitUntil(async () => (await context.redis.get(keys.marker)) !== null, 'a stored marker', 5_000);
      // Another process's lock, as after an expiry during a long pause of this one.
      await context.redis.set(keys.lock, 'someone-else', 'PX', 60_000);
      await waitUntil(() => !poller.polling, 'the poller to stop', LOCK_MS);
      const marker = await context.redis.get(keys.marker);
      fake.userSays('7301', '/list');
      await new Promise((done) => setTimeout(done, LOCK_MS / 2));
      expect(poller.polling).toBe(false);
      expect(await context.redis.get(keys.marker)).toBe(marker);
      expect(texts('7301')).toHaveLength(1);
    } finally {
      await poller.stop();
      await client.close();
      await close();
    }
  }, 30_000);
});
