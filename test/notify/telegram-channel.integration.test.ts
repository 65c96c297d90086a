/**
 * Telegram as a channel of the core, against the fake Bot API: a message is one HTML message; a chat that blocked
 * the bot is `gone`; a revoked or wrong token is `misconfigured` (the channel is disabled, the message kept),
 * never a failure of one message; 429 is `rate-limited` for its `retry_after`; a refused request fails for good.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectRedis } from '../../src/lib/redis-connection.ts';
import { RedisOutageLog } from '../../src/lib/redis-outage.ts';
import type { RedisClient } from '../../src/lib/redis-target.ts';
import { silentLogger } from '../../src/logger.ts';
import type { ChannelMessage } from '../../src/notify/channel.ts';
import { telegramChannel } from '../../src/notify/telegram/channel.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { TelegramChats } from '../../src/store/telegram-chats.ts';
import { type FakeTelegram, startFakeTelegram } from '../../testkit/fake-telegram/index.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

let telegram: FakeTelegram;
let redis: RedisClient;
let chats: TelegramChats;
const prefix = uniquePrefix('tg-channel');

beforeAll(async () => {
  telegram = await startFakeTelegram();
  redis = connectRedis(inject('redisUrl'), { name: 'test-tg-channel', outage: new RedisOutageLog(silentLogger()) });
  chats = new TelegramChats(redis, redisKeys(prefix));
});
afterAll(async () => {
  await telegram?.close();
  await deletePrefix(inject('redisUrl'), prefix);
  await redis?.quit();
});

function message(address: string): ChannelMessage {
  const startsAt = Date.now() + 3_600_000;
  const side = { date: '2030-10-02', begin: '10:10', end: '11:40', startUtc: startsAt, summary: 'Физика', teacher: '' };
  return {
    address,
    deliveryId: `tg:${address}:group:4242:1`,
    source: 'group:4242',
    pageUrl: 'https://timetable.example.edu/timetables/groups/4242',
    told: {
      source: 'group:4242',
      name: 'ИВТ-21',
      stamp: 1,
      omitted: 0,
      items: [
        {
          kind: 'moved',
          uid: 'u1',
          before: { ...side, location: 'ауд. 1008' },
          after: { ...side, location: 'ауд. 2207' },
          startsAt,
          lessonKind: 'практика',
          note: '',
        },
      ],
    },
  };
}

describe('the Telegram channel', () => {
  it('is on with a token, and knows the chats that follow a source', async () => {
    const config = { telegramBotToken: telegram.token, telegramApiRoot: telegram.apiRoot };
    const channel = telegramChannel({ config, chats });
    expect(telegramChannel({ config: { ...config, telegramBotToken: undefined }, chats }).on).toBe(false);
    expect([channel.on, channel.name, channel.paceMs]).toEqual([true, 'telegram', 1_000]);
    await chats.subscribe({ chatId: '31', source: 'group:4242', options: { subgroup: 2 } });
    expect(await channel.ofSource('group:4242')).toEqual([{ address: '31', options: { subgroup: 2 } }]);
    expect(await channel.hasAny('group:4242')).toBe(true);
    expect(await channel.follows('31', 'group:4242')).toBe(true);
    expect(await channel.unsubscribe('31')).toEqual(['group:4242']);
    expect(await channel.follows('31', 'group:4242')).toBe(false);
  });

  it('tells what each Bot API answer means for the core', async () => {
    const channel = telegramChannel({
      config: { telegramBotToken: telegram.token, telegramApiRoot: telegram.apiRoot },
      chats,
    });
    telegram.addChat(32);
    const sent = await channel.send(message('32'));
    expect(sent).toEqual({ kind: 'sent', messageId: expect.stringMatching(/^\d+$/) });
    expect(telegram.messages(32)[0]?.text).toContain('10:10 Физика: ауд. 1008 → ауд. 2207');

    telegram.blockChat(33);
    expect(await channel.send(message('33'))).toMatchObject({ kind: 'gone' });

    telegram.addChat(34);
    telegram.fault({ method: 'sendMessage', kind: '429', retryAfter: 3 });
    expect(await channel.send(message('34'))).toEqual({ kind: 'rate-limited', retryAfterMs: 3_000 });
    telegram.fault({ method: 'sendMessage', kind: '400', description: "Bad Request: can't parse entities" });
    expect(await channel.send(message('34'))).toMatchObject({ kind: 'failed', permanent: true });
    telegram.fault({ method: 'sendMessage', kind: '500' });
    expect(await channel.send(message('34'))).toMatchObject({ kind: 'failed', permanent: false });
  });

  it('says a refused token is the channel misconfigured, without the token', async () => {
    const wrong = '123456789:revoked-token-0000';
    const channel = telegramChannel({ config: { telegramBotToken: wrong, telegramApiRoot: telegram.apiRoot }, chats });
    telegram.addChat(35);
    const outcome = await channel.send(message('35'));
    expect(outcome).toMatchObject({ kind: 'misconfigured', reason: expect.stringContaining('401') });
    expect(JSON.stringify(outcome)).not.toContain('revoked-token');
    expect(telegram.messages(35)).toEqual([]);
  });
});
