/**
 * The MAX channel's sends against the fake MAX Bot API and real Redis: the change message in MAX's HTML within
 * 4000 characters, and what each answer means for the channel core: sent, gone (403 chat.denied, 404
 * chat.not.found), misconfigured (401 verify.token), rate-limited (429), failed for good (400) or for now (5xx,
 * no answer). A wave of refusals (a bot not through moderation) unsubscribes a handful of dialogs at most: the
 * rest are `misconfigured` until MAX takes a message again.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import type { ChannelAdapter, ChannelMessage } from '../../src/notify/channel.ts';
import { maxChannel, WAVE_REFUSALS } from '../../src/notify/max/channel.ts';
import { MaxClient } from '../../src/notify/max/client.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { MaxChats } from '../../src/store/max-chats.ts';
import type { ChangeSet, NotifyItem } from '../../src/timetable/notify-change.ts';
import { type FakeMax, htmlLinks, startFakeMax } from '../../testkit/fake-max/index.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

const prefix = uniquePrefix('max-channel');
const keys = redisKeys(prefix);
let redis: Redis;

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
});

afterAll(async () => {
  redis.disconnect();
  await deletePrefix(inject('redisUrl'), prefix);
});

const SIDE = {
  date: '2025-10-08',
  begin: '10:10',
  end: '11:40',
  summary: 'Физика & химия (практика)',
  location: 'Корпус 1, 1008',
  teacher: 'Иванов И. И.',
};

function item(index: number, room = '2207'): NotifyItem {
  return {
    uid: `u${index}`,
    kind: 'moved',
    note: '',
    startsAt: Date.parse('2025-10-08T07:10:00Z') + index * 60_000,
    before: SIDE,
    after: { ...SIDE, location: `Корпус 1, ${room}` },
  } as NotifyItem;
}

function message(address: string, items: NotifyItem[]): ChannelMessage {
  const told = { source: 'group:4242', stamp: 1, name: 'ИВТ-21 <б>', items, omitted: 0 } as unknown as ChangeSet;
  return {
    address,
    deliveryId: `mx:${address}:group:4242:1`,
    source: 'group:4242',
    told,
    pageUrl: 'https://timetable.example.edu/timetables/groups/4242?a=1&b=2',
  };
}

async function setUp(
  options: { token?: string; chatRate?: number } = {},
): Promise<{ max: FakeMax; channel: ChannelAdapter }> {
  const max = await startFakeMax({ chatRate: options.chatRate ?? 0 });
  onTestFinished(() => max.close());
  const client = new MaxClient({ token: options.token ?? max.token, apiRoot: max.apiRoot });
  onTestFinished(() => client.close());
  await redis.del(keys.mxRefusalsInARow);
  const channel = maxChannel({
    config: { maxBotToken: max.token, maxApiRoot: max.apiRoot, maxRateLimit: 30 },
    chats: new MaxChats(redis, keys),
    redis,
    keys,
    client: () => client,
  });
  return { max, channel };
}

describe('MAX channel', () => {
  it('is on with a token, paces a dialog at two messages a second, and sends HTML within 4000 characters', async () => {
    const { max, channel } = await setUp();
    expect([channel.name, channel.on, channel.paceMs]).toEqual(['max', true, 500]);
    const chatId = max.userStarts('100', 'g4242');
    const sent = await channel.send(message(chatId, [item(1)]));
    expect(sent).toEqual({ kind: 'sent', messageId: expect.stringMatching(/^mid\./) });
    const [told] = max.messages(chatId);
    expect(told?.format).toBe('html');
    expect(told?.text).toContain('ИВТ-21 <б>: изменения в расписании');
    expect(told?.text).toContain('Физика & химия (практика): ауд. 1008 → 2207');
    expect(htmlLinks(told?.raw ?? '')).toEqual(['https://timetable.example.edu/timetables/groups/4242?a=1&b=2']);
    // Many changes: cut to MAX's 4000, saying how many were left out.
    await channel.send(
      message(
        chatId,
        Array.from({ length: 200 }, (_, index) => item(index, String(3000 + index))),
      ),
    );
    const long = max.messages(chatId)[1];
    expect(long?.raw.length).toBeLessThanOrEqual(4000);
    expect(long?.text).toMatch(/…и ещё \d+ изменени/);
  });

  it('says gone for a stopped bot (403) and a deleted dialog (404), and the channel unsubscribes', async () => {
    const { max, channel } = await setUp();
    const chats = new MaxChats(redis, keys);
    const stopped = max.userStarts('201');
    const removed = max.userStarts('202');
    await chats.subscribe({ chatId: stopped, source: 'group:4242', options: {} });
    max.userStops('201');
    max.userRemovesDialog('202');
    expect(await channel.send(message(stopped, [item(1)]))).toEqual({
      kind: 'gone',
      reason: expect.stringContaining('403 chat.denied'),
    });
    expect(await channel.send(message(removed, [item(1)]))).toEqual({
      kind: 'gone',
      reason: expect.stringContaining('404 chat.not.found'),
    });
    expect(await channel.follows(stopped, 'group:4242')).toBe(true);
    expect(await channel.unsubscribe(stopped)).toEqual(['group:4242']);
    expect(await channel.hasAny('group:4242')).toBe(false);
  });

  it('says misconfigured for a refused token, rate-limited for 429, and failed for good or for now', async () => {
    const { max, channel } = await setUp({ token: 'revoked-token-000' });
    const chatId = max.userStarts('300');
    const refused = await channel.send(message(chatId, [item(1)]));
    expect(refused).toEqual({ kind: 'misconfigured', reason: expect.stringContaining('verify.token') });
    expect(JSON.stringify(refused)).not.toContain('revoked-token-000');

    const working = await setUp({ chatRate: 2 });
    const dialog = working.max.userStarts('301');
    working.max.fault({ path: 'messages', kind: '429', retryAfter: 3 });
    expect(await working.channel.send(message(dialog, [item(1)]))).toEqual({
      kind: 'rate-limited',
      retryAfterMs: 3_000,
    });
    working.max.fault({ path: 'messages', kind: '500' });
    expect(await working.channel.send(message(dialog, [item(1)]))).toMatchObject({ kind: 'failed', permanent: false });
    working.max.fault({ path: 'messages', kind: 'reset' });
    expect(await working.channel.send(message(dialog, [item(1)]))).toMatchObject({ kind: 'failed', permanent: false });
    // The dialog's own two a second: a third message at once is MAX's 429, waited out by the core.
    await working.channel.send(message(dialog, [item(1)]));
    await working.channel.send(message(dialog, [item(2)]));
    expect(await working.channel.send(message(dialog, [item(3)]))).toEqual({
      kind: 'rate-limited',
      retryAfterMs: 1_000,
    });
  });

  it('unsubscribes a handful at most when MAX refuses every dialog, and trusts refusals again once it takes one', async () => {
    const { max, channel } = await setUp();
    const dialogs = Array.from({ length: 12 }, (_, index) => max.userStarts(String(400 + index)));
    max.suspend(true);
    const outcomes = [];
    for (const chatId of dialogs) outcomes.push((await channel.send(message(chatId, [item(1)]))).kind);
    expect(outcomes).toEqual([
      ...Array.from({ length: WAVE_REFUSALS }, () => 'gone'),
      ...Array.from({ length: 12 - WAVE_REFUSALS }, () => 'misconfigured'),
    ]);
    const last = await channel.send(message(dialogs[11] as string, [item(1)]));
    expect(last).toEqual({ kind: 'misconfigured', reason: expect.stringContaining('moderation') });
    // Moderation passed: a message is taken, and one person's refusal is theirs again.
    max.suspend(false);
    expect((await channel.send(message(dialogs[0] as string, [item(1)]))).kind).toBe('sent');
    max.userStops('400');
    expect((await channel.send(message(dialogs[0] as string, [item(1)]))).kind).toBe('gone');
  });
});
