/**
 * What a process does with the MAX bot, against the fake MAX Bot API: nothing without a token; in webhook mode an
 * api process subscribes `MAX_WEBHOOK_URL` with the bot's secret and every update type the bot reads (and no
 * worker polls); in polling mode a worker polls, and the process's shutdown aborts its held poll and releases the lock.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { maxWebhookSecret } from '../../src/notify/max/bot.ts';
import { POLL_TIMEOUT_SECONDS } from '../../src/notify/max/poller.ts';
import { UPDATE_TYPES } from '../../src/notify/max/updates.ts';
import { openMax, startMax } from '../../src/runtime/max.ts';
import { Shutdown } from '../../src/runtime/shutdown.ts';
import { startFakeMax } from '../../testkit/fake-max/index.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { testContext } from '../support/service.ts';

const WEBHOOK = 'https://timetable.example.edu/max/webhook';

async function setUp(env: Record<string, string>) {
  const max = await startFakeMax();
  onTestFinished(() => max.close());
  const { context, close } = await testContext({ MAX_API_ROOT: max.apiRoot, MAX_POLL_LOCK: '3s', ...env });
  onTestFinished(close);
  return { max, context };
}

describe('the MAX bot of a process', () => {
  it('is off without MAX_BOT_TOKEN', async () => {
    const { context } = await setUp({});
    expect(openMax(context)).toBeUndefined();
  });

  it('subscribes the webhook from an api process, with the secret, and polls from no worker', async () => {
    const { max, context } = await setUp({ MAX_BOT_TOKEN: 'webhook-mode-token-01', MAX_WEBHOOK_URL: WEBHOOK });
    const fakeToken = { ...context.config, maxBotToken: max.token };
    const opened = openMax({ ...context, config: fakeToken });
    if (opened === undefined) throw new Error('no bot');
    const shutdown = new Shutdown(silentLogger());
    startMax({ ...context, config: fakeToken }, opened, { api: false, worker: true }, shutdown);
    startMax({ ...context, config: fakeToken }, opened, { api: true, worker: false }, shutdown);
    await waitUntil(() => max.subscriptions().length === 1, 'the subscription', 5_000);
    expect(max.subscriptions()[0]).toMatchObject({
      url: WEBHOOK,
      types: [...UPDATE_TYPES],
      secret: maxWebhookSecret({ maxBotToken: max.token, secretKey: context.config.secretKey }),
    });
    await new Promise((wake) => setTimeout(wake, 500));
    expect(max.calls('updates')).toEqual([]);
    await shutdown.run('test');
  });

  it('polls from a worker in polling mode, and stops by aborting the held poll', async () => {
    const { max, context } = await setUp({ MAX_BOT_TOKEN: 'polling-mode-token-01' });
    const config = { ...context.config, maxBotToken: max.token };
    const opened = openMax({ ...context, config });
    if (opened === undefined) throw new Error('no bot');
    const shutdown = new Shutdown(silentLogger());
    startMax({ ...context, config }, opened, { api: true, worker: true }, shutdown);
    await waitUntil(() => max.calls('updates').some((call) => call.endedAt === undefined), 'a held poll', 5_000);
    // The fake's calls are copies, in the order they came: the held one is found again by its place.
    const held = max.calls('updates').findIndex((call) => call.endedAt === undefined);
    const started = performance.now();
    await shutdown.run('test');
    // The held poll (30 s at MAX) was aborted, ended without an answer, not waited out; the lock is released.
    const ended = max.calls('updates')[held];
    expect(ended?.endedAt).toBeDefined();
    expect(ended?.status).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(POLL_TIMEOUT_SECONDS * 1000);
    expect(max.calls('updates').every((call) => call.endedAt !== undefined)).toBe(true);
    expect(await context.redis.get(context.keys.mxPollLock)).toBeNull();
  });
});
