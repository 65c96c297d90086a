/**
 * The one poller of a deployment, against the fake Bot API: of two worker-like processes only the lock's holder
 * calls getUpdates (Telegram would answer a second one 409), SIGTERM stops the holder within seconds and the other
 * takes over within a third of the lock's lifetime; a holder that loses the lock stops polling.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { createTelegramBot } from '../../src/notify/telegram/bot.ts';
import { TelegramPoller } from '../../src/notify/telegram/poller.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { TelegramChats } from '../../src/store/telegram-chats.ts';
import { type FakeTelegram, startFakeTelegram } from '../../testkit/fake-telegram/index.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { NODE_CACHE_ENV } from '../../testkit/processes.ts';
import { deletePrefix, TEST_SECRET_KEY, testContext, uniquePrefix } from '../support/service.ts';

const SCRIPT = resolve(import.meta.dirname, 'telegram-poller-process.ts');
/** The smallest lock TELEGRAM_POLL_LOCK allows: a third of it is a second. */
const LOCK_MS = 3_000;

let fake: FakeTelegram;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  fake = await startFakeTelegram();
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
      TELEGRAM_BOT_TOKEN: fake.token,
      TELEGRAM_API_ROOT: fake.apiRoot,
      TELEGRAM_POLL_LOCK: `${LOCK_MS}ms`,
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
  process.lines.filter((line) => line.includes('polling Telegram for updates')).length;
const conflicts = () => fake.calls('getUpdates').filter((call) => call.status === 409);

describe('Telegram poller', () => {
  it('polls from one process of two, and hands over within a third of the lock after SIGTERM', async () => {
    const prefix = uniquePrefix('tg-poller');
    try {
      const first = await startPoller(prefix);
      const second = await startPoller(prefix);
      const both = [first, second];
      await waitUntil(() => both.some((each) => polls(each) > 0), 'a poller', 10_000);
      // Two lock periods: the standby asked for the lock six times meanwhile.
      await new Promise((done) => setTimeout(done, 2 * LOCK_MS));
      expect(both.map(polls).sort()).toEqual([0, 1]);
      expect(conflicts()).toEqual([]);

      // The holder answers; once.
      fake.userSays(7001, '/help');
      await waitUntil(() => fake.messages(7001).length > 0, 'the reply', 10_000);
      const [holder, standby] = polls(first) === 1 ? [first, second] : [second, first];
      if (!holder || !standby) throw new Error('no holder');

      const calledBefore = fake.calls('getUpdates').length;
      const signalled = performance.now();
      holder.child.kill('SIGTERM');
      const exitedAt = await holder.exited;
      // The pending long poll (30 s) is aborted, not waited out.
      expect(exitedAt - signalled).toBeLessThan(3_000);
      expect(holder.child.exitCode).toBe(0);
      await waitUntil(() => polls(standby) > 0, 'the takeover', 10_000);
      const tookOverAt = performance.now();
      // Within a third of the lock (1 s), with a margin for two shared cores.
      expect(tookOverAt - exitedAt).toBeLessThan(LOCK_MS / 3 + 1_500);
      await waitUntil(() => fake.calls('getUpdates').length > calledBefore + 1, 'the next getUpdates', 5_000);

      fake.userSays(7001, '/list');
      await waitUntil(() => fake.messages(7001).length > 1, 'the second reply', 10_000);
      await new Promise((done) => setTimeout(done, 500));
      expect(fake.messages(7001)).toHaveLength(2);
      expect(fake.messages(7001)[1]?.text).toContain('Подписок нет');
      expect(conflicts()).toEqual([]);

      standby.child.kill('SIGTERM');
      await standby.exited;
      expect(standby.child.exitCode).toBe(0);
    } finally {
      await deletePrefix(inject('redisUrl'), prefix);
    }
  }, 60_000);

  it('stops polling at once when another process took the lock', async () => {
    const { context, close } = await testContext({
      TELEGRAM_BOT_TOKEN: fake.token,
      TELEGRAM_API_ROOT: fake.apiRoot,
    });
    const redis = new Redis(inject('redisUrl'));
    const keys = redisKeys(context.config.redisPrefix);
    const telegram = createTelegramBot(
      { telegramBotToken: fake.token, telegramApiRoot: fake.apiRoot },
      {
        chats: new TelegramChats(context.redis, context.keys),
        snapshots: context.snapshots,
        subscriptions: context.subscriptions,
        config: context.config,
        redis: context.redis,
        keys: context.keys,
        logger: silentLogger(),
        now: context.now,
      },
    );
    const poller = new TelegramPoller({
      telegram,
      redis: context.redis,
      lockKey: keys.tgPollLock,
      lockMs: LOCK_MS,
      logger: silentLogger(),
      backoffMs: 200,
    });
    try {
      poller.start();
      await waitUntil(() => poller.polling && telegram.bot.isRunning(), 'polling', 10_000);
      // Another process's lock, as after an expiry during a long pause of this one.
      await redis.set(keys.tgPollLock, 'someone-else', 'PX', 60_000);
      const changed = performance.now();
      await waitUntil(() => !telegram.bot.isRunning(), 'the poller to stop', 5_000);
      expect(performance.now() - changed).toBeLessThan(LOCK_MS / 3 + 1_000);
      expect(await redis.get(keys.tgPollLock)).toBe('someone-else');
      // Not polling again while the other holds it.
      await new Promise((done) => setTimeout(done, LOCK_MS / 2));
      expect(telegram.bot.isRunning()).toBe(false);
    } finally {
      await poller.stop();
      redis.disconnect();
      await close();
    }
  }, 30_000);
});
