/**
 * A channel disabled for its credentials is asked whether it is mended without any message waiting: Telegram's
 * `getMe` and MAX's `GET /me` against the fakes, on real Redis. A refused token keeps it disabled; a mended one puts
 * it on, said once; the ask takes the channel's one try, so that sends and asks of the whole deployment try it
 * once at a time; a MAX wave of refusals is not ended by `GET /me`; and a worker's asks start with it and stop
 * when it closes.
 */
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it, onTestFinished } from 'vitest';
import { ChannelProbes, probeChannel } from '../../src/jobs/channel-probe.ts';
import { createLogger, type Logger } from '../../src/logger.ts';
import { maxChannel } from '../../src/notify/max/channel.ts';
import { MaxClient } from '../../src/notify/max/client.ts';
import { telegramChannel } from '../../src/notify/telegram/channel.ts';
import { ChannelStates } from '../../src/store/channel-states.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { MaxChats } from '../../src/store/max-chats.ts';
import { TelegramChats } from '../../src/store/telegram-chats.ts';
import { startFakeMax } from '../../testkit/fake-max/index.ts';
import { startFakeTelegram } from '../../testkit/fake-telegram/index.ts';
import { until } from '../../testkit/poll.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

const prefix = uniquePrefix('channel-probe');
const keys = redisKeys(prefix);
/** The channel's one try lasts this long: short, so that a test can wait it out. */
const TRY_MS = 200;
/** A try that must still be held at the next ask, whatever the machine's load: long enough, then waited out. */
const HELD_TRY_MS = 2_000;
let redis: Redis;
let states: ChannelStates;
let logs: Record<string, unknown>[];
let logger: Logger;

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
  states = new ChannelStates(redis, keys);
});

afterAll(async () => {
  redis.disconnect();
  await deletePrefix(inject('redisUrl'), prefix);
});

beforeEach(async () => {
  await redis.del(keys.channelState('telegram'), keys.channelState('max'), keys.mxRefusalsInARow);
  await redis.del(keys.channelProbe('telegram'), keys.channelProbe('max'));
  logs = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line.trim() !== '') logs.push(JSON.parse(line));
      done();
    },
  });
  logger = createLogger({ level: 'info', pretty: false, destination });
});

/** Waits until the channel's one try has run out (nobody holds it). */
async function tryOver(channel: string): Promise<void> {
  expect(
    await until(
      () => states.probeLeft(channel),
      (left) => left === 0,
    ),
  ).toBe(0);
}

const ctx = () => ({ logger, notify: { states } });
const worksAgain = (channel: string) => logs.filter((line) => line.msg === `${channel} works again: channel on`);

describe('asking a disabled channel', () => {
  it('puts Telegram on again once its token is mended, with no message waiting', async () => {
    const telegram = await startFakeTelegram();
    onTestFinished(() => telegram.close());
    const chats = new TelegramChats(redis, keys);
    const withToken = (token: string) =>
      telegramChannel({ config: { telegramBotToken: token, telegramApiRoot: telegram.apiRoot }, chats });
    await states.disable('telegram', 'Telegram refuses the bot: 401 Unauthorized', Date.now());

    // Still the revoked token: it stays disabled.
    expect(await probeChannel(ctx(), withToken('123456789:revoked'), { disabledRetryMs: HELD_TRY_MS })).toBe(
      'disabled',
    );
    expect(await states.disabled('telegram')).toMatchObject({ reason: 'Telegram refuses the bot: 401 Unauthorized' });
    // The mended token waits for the channel's one try, as a send would.
    const mended = withToken(telegram.token);
    expect(await probeChannel(ctx(), mended, { disabledRetryMs: TRY_MS })).toBe('busy');
    await tryOver('telegram');
    expect(await probeChannel(ctx(), mended, { disabledRetryMs: TRY_MS })).toBe('on');
    expect(await states.disabled('telegram')).toBeUndefined();
    expect(worksAgain('telegram')).toHaveLength(1);
    // Asked with getMe, through the API root of the settings (the fake records the calls of its own token only);
    // nobody was written to.
    expect(telegram.calls('getMe')).toHaveLength(1);
    expect(telegram.calls('sendMessage')).toEqual([]);
    // On: nothing more is asked.
    expect(await probeChannel(ctx(), mended, { disabledRetryMs: TRY_MS })).toBe('on');
    expect(telegram.calls('getMe')).toHaveLength(1);
  });

  it('puts MAX on again once its token is mended, but not during a wave of refusals', async () => {
    const max = await startFakeMax();
    onTestFinished(() => max.close());
    const withToken = (token: string) => {
      const client = new MaxClient({ token, apiRoot: max.apiRoot });
      onTestFinished(() => client.close());
      return maxChannel({
        config: { maxBotToken: token, maxApiRoot: max.apiRoot, maxRateLimit: 30 },
        chats: new MaxChats(redis, keys),
        redis,
        keys,
        client: () => client,
      });
    };
    await states.disable('max', 'MAX refuses the bot token (MAX_BOT_TOKEN): 401 verify.token', Date.now());

    expect(await probeChannel(ctx(), withToken('revoked-token'), { disabledRetryMs: TRY_MS })).toBe('disabled');
    expect(await states.disabled('max')).toBeDefined();
    await tryOver('max');
    // A wave (the bot refused dialog after dialog): `GET /me` would answer a suspended bot too.
    const mended = withToken(max.token);
    await redis.set(keys.mxRefusalsInARow, '9');
    expect(await probeChannel(ctx(), mended, { disabledRetryMs: TRY_MS })).toBe('unknown');
    expect(await states.disabled('max')).toBeDefined();
    await tryOver('max');
    await redis.del(keys.mxRefusalsInARow);
    expect(await probeChannel(ctx(), mended, { disabledRetryMs: TRY_MS })).toBe('on');
    expect(await states.disabled('max')).toBeUndefined();
    expect(worksAgain('max')).toHaveLength(1);
    expect(max.calls('me')).toHaveLength(2);
    expect(max.calls('messages')).toEqual([]);
  });

  it("asks at a worker's start and stops asking when it closes", async () => {
    const telegram = await startFakeTelegram();
    onTestFinished(() => telegram.close());
    const channel = telegramChannel({
      config: { telegramBotToken: telegram.token, telegramApiRoot: telegram.apiRoot },
      chats: new TelegramChats(redis, keys),
    });
    await states.disable('telegram', 'Telegram refuses the bot: 401 Unauthorized', Date.now());
    const off = { ...channel, on: false };
    const probes = new ChannelProbes(ctx(), [channel, off], { disabledRetryMs: TRY_MS });
    probes.start();
    onTestFinished(() => probes.close());
    expect(
      await until(
        () => states.disabled('telegram'),
        (state) => state === undefined,
      ),
    ).toBeUndefined();
    await probes.close();
    // Asked once for the channel that is on; the one this deployment did not configure is never asked.
    const asked = telegram.calls('getMe').length;
    expect(asked).toBe(1);
    await states.disable('telegram', 'again', Date.now());
    await tryOver('telegram');
    await new Promise((resolve) => setTimeout(resolve, TRY_MS * 2));
    expect(telegram.calls('getMe')).toHaveLength(asked);
  });
});
