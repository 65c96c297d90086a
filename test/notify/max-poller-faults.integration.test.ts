/**
 * The MAX poller goes on through failures, against the fake MAX Bot API and real Redis: MAX refusing the answer to
 * a press whose dialog is not known, and a Redis of the test's own paused for longer than a command may wait, do
 * not stop it (the outage is logged once, not at each try), and later updates are answered. A page whose update
 * failed in its lane is not committed: it comes again, the failed update is answered then, and the others of the
 * page are not answered twice; updates that fail at every try are given up after a bounded number of tries, so
 * that they cannot hold back the updates after them.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createLogger, type Logger } from '../../src/logger.ts';
import { createMaxBot, type MaxBot } from '../../src/notify/max/bot.ts';
import { MaxClient } from '../../src/notify/max/client.ts';
import { MaxPoller, MOST_PAGE_TRIES } from '../../src/notify/max/poller.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { botContextDeps } from '../../src/runtime/telegram.ts';
import { MaxChats } from '../../src/store/max-chats.ts';
import { type FakeMax, startFakeMax } from '../../testkit/fake-max/index.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { startRedisProcess } from '../../testkit/redis-process.ts';
import { testContext } from '../support/service.ts';

const LOCK_MS = 3_000;

let fake: FakeMax;

beforeAll(async () => {
  fake = await startFakeMax({ chatRate: 0 });
});

afterAll(async () => {
  await fake?.close();
});

/** A logger whose JSON lines the test reads. */
function capturedLogger(): { logger: Logger; lines: { msg: string; [field: string]: unknown }[] } {
  const lines: { msg: string }[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger({ level: 'info', pretty: false, destination }), lines };
}

/** The bot and its poller over `context`, answering at once (no reply queue), stopped when the test ends. */
function startPolling(context: ServiceContext, logger: Logger): { bot: MaxBot; poller: MaxPoller; marker: string } {
  const client = new MaxClient({ token: fake.token, apiRoot: fake.apiRoot });
  const bot = createMaxBot(
    { maxBotToken: fake.token },
    {
      ...botContextDeps(context),
      chats: new MaxChats(context.redis, context.keys),
      keys: context.keys,
      client,
      logger,
      reply: undefined,
    },
  );
  const marker = context.keys.mxPollMarker('faults');
  const poller = new MaxPoller({
    bot,
    client,
    redis: context.redis,
    keys: { lock: context.keys.mxPollLock, marker },
    lockMs: LOCK_MS,
    logger,
    redisOutage: context.redisOutage,
    backoffMs: 200,
    timeoutSeconds: 1,
  });
  poller.start();
  onTestFinished(async () => {
    await poller.stop();
    await bot.idle();
    await client.close();
  });
  return { bot, poller, marker };
}

/** The bot's messages to a person's dialog. */
function texts(userId: string): string[] {
  const chatId = fake.chatIdOf(userId);
  return chatId === undefined ? [] : fake.messages(chatId).map((message) => message.text);
}

/** A message of the bot with one button in the person's dialog (as a subgroup question is); its `mid`. */
async function buttonFor(userId: string, payload: string): Promise<string> {
  const client = new MaxClient({ token: fake.token, apiRoot: fake.apiRoot });
  try {
    const chatId = fake.addDialog(userId);
    return (await client.send(chatId, { text: 'Из какой вы подгруппы?', buttons: [[{ text: 'Все', payload }]] })).mid;
  } finally {
    await client.close();
  }
}

describe('the MAX poller through failures', () => {
  it('goes on after MAX refuses a stale press and after Redis paused, logging the outage once', async () => {
    const redis = await startRedisProcess();
    onTestFinished(() => redis.close());
    const { logger, lines } = capturedLogger();
    const { context, close } = await testContext({ REDIS_URL: redis.url }, { logger });
    onTestFinished(close);
    const { poller } = startPolling(context, logger);
    await waitUntil(() => poller.polling, 'polling', 10_000);

    // A press MAX sends without the dialog's id, of a person whose dialog the bot does not know: answered
    // «Эта кнопка больше не работает.», which MAX refuses with 400.
    const mid = await buttonFor('7401', 'sg:group:1:all');
    fake.fault({ path: 'answers', kind: '400' });
    fake.userPresses('7401', mid, 'sg:group:1:all', { withoutChatId: true });
    await waitUntil(() => fake.calls('answers').some((call) => call.status === 400), 'the refused answer', 10_000);
    fake.userSays('7402', '/help');
    await waitUntil(() => texts('7402').length === 1, 'the next reply', 10_000);
    expect(poller.polling).toBe(true);

    // Longer than a command waits (3 s) and than the lock lives: several pages fail, and the lock expires.
    redis.pause();
    await new Promise((wake) => setTimeout(wake, 7_500));
    fake.userSays('7403', '/help');
    redis.resume();
    await waitUntil(() => texts('7403').length === 1, 'the reply after the outage', 20_000);
    fake.userSays('7404', '/help');
    await waitUntil(() => texts('7404').length === 1, 'a later reply', 10_000);

    const recovered = lines.filter((line) => line.msg === 'MAX polling works again');
    expect(recovered).toHaveLength(1);
    expect(recovered[0]?.failedPages).toBeGreaterThanOrEqual(2);
    expect(lines.filter((line) => line.msg.startsWith('Redis outage started'))).toHaveLength(1);
    expect(lines.filter((line) => line.msg.includes('page of MAX updates failed'))).toEqual([]);
    expect(lines.filter((line) => line.msg.includes('stopped on an error'))).toEqual([]);
    expect(lines.filter((line) => line.msg.includes('poll lock') && !line.msg.startsWith('lost'))).toEqual([]);
    expect(texts('7402')).toHaveLength(1);
  }, 60_000);

  it('asks again for a page whose update failed, answering the others of it once', async () => {
    const { logger, lines } = capturedLogger();
    const { context, close } = await testContext({}, { logger });
    onTestFinished(close);
    const first = startPolling(context, logger);
    fake.userSays('7501', '/help');
    await waitUntil(() => texts('7501').length === 1, 'a first reply', 10_000);
    await waitUntil(async () => (await context.redis.get(first.marker)) !== null, 'a stored marker', 10_000);
    await first.poller.stop();

    // Both wait at MAX for the next poller: one page. The press's answer fails once (500), in its dialog's lane.
    const mid = await buttonFor('7502', 'sg:group:1:all');
    const callbackId = fake.userPresses('7502', mid, 'sg:group:1:all');
    fake.userSays('7503', '/help');
    fake.fault({ path: 'answers', kind: '500' });
    const answersBefore = fake.calls('answers').length;
    startPolling(context, logger);
    await waitUntil(() => fake.answers().some((answer) => answer.callbackId === callbackId), 'the answer', 10_000);
    await waitUntil(() => fake.pendingUpdates() === 0, 'the page committed', 10_000);
    expect(
      fake
        .calls('answers')
        .slice(answersBefore)
        .map((call) => call.status),
    ).toEqual([500, 200]);
    expect(texts('7502').at(-1)).toContain('Вы не подписаны на эту группу');
    expect(texts('7503')).toHaveLength(1);
    expect(lines.filter((line) => line.msg.includes('their page is asked for again'))).toHaveLength(1);
  }, 30_000);

  it('gives up on updates that fail at every try, and goes on with the ones after them', async () => {
    const { logger, lines } = capturedLogger();
    const { context, close } = await testContext({}, { logger });
    onTestFinished(close);
    const { poller } = startPolling(context, logger);
    await waitUntil(() => poller.polling, 'polling', 10_000);
    fake.userSays('7601', '/help');
    await waitUntil(() => texts('7601').length === 1, 'a first reply', 10_000);

    const mid = await buttonFor('7602', 'sg:group:1:all');
    fake.fault({ path: 'answers', kind: '500', times: Number.POSITIVE_INFINITY });
    onTestFinished(() => fake.clearFaults());
    const answersBefore = fake.calls('answers').length;
    fake.userPresses('7602', mid, 'sg:group:1:all');
    await waitUntil(() => lines.some((line) => line.msg.includes('given up')), 'the update given up', 15_000);
    expect(fake.calls('answers').length - answersBefore).toBe(MOST_PAGE_TRIES);
    fake.userSays('7603', '/help');
    await waitUntil(() => texts('7603').length === 1, 'the next reply', 10_000);
    await waitUntil(() => fake.pendingUpdates() === 0, 'everything committed', 10_000);
    expect(fake.calls('answers').length - answersBefore).toBe(MOST_PAGE_TRIES);
  }, 30_000);
});
