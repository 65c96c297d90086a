/** Telegram chats' subscriptions and `/start` payloads on a real Redis. */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { redisKeys } from '../../src/store/keys.ts';
import {
  LEGACY_LINK_TTL_SECONDS,
  LINK_TTL_SECONDS,
  notifyOptionsOf,
  PAYLOAD,
  parsePublicPayload,
  publicPayload,
  TelegramChats,
} from '../../src/store/telegram-chats.ts';
import { KIND_CODES } from '../../src/timetable/kind-codes.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

const SUBSCRIPTION = 'AAAAAAAAAAAAAAAAAAAAAA';
let redis: Redis;
const prefix = uniquePrefix('tg-chats');
const keys = redisKeys(prefix);
let chats: TelegramChats;

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
  chats = new TelegramChats(redis, keys);
});

afterAll(async () => {
  await deletePrefix(inject('redisUrl'), prefix);
  redis.disconnect();
});

describe('readable payloads', () => {
  it('names a public source and its subgroup, and reads back the same', () => {
    expect(publicPayload('group:4242', {})).toBe('g4242');
    expect(publicPayload('group:4242', { subgroup: 1 })).toBe('g4242_s1');
    expect(publicPayload('employee:123', { subgroup: 2 })).toBe('e123_s2');
    for (const payload of ['g4242', 'g4242_s1', 'e123_s2', 'g9007199254740991_s99']) {
      const parsed = parsePublicPayload(payload);
      expect(parsed).toBeDefined();
      expect(publicPayload(parsed?.source ?? '', parsed?.options ?? {})).toBe(payload);
    }
  });

  it('says hidden kinds of its list as bits, and reads them back sorted', () => {
    expect(publicPayload('group:4005', { subgroup: 2, excludeKinds: ['Лекция', 'лабораторная работа'] })).toBe(
      'g4005_s2_x5',
    );
    expect(parsePublicPayload('g4005_s2_x5')).toEqual({
      source: 'group:4005',
      options: { subgroup: 2, excludeKinds: ['лабораторная работа', 'лекция'] },
    });
    const all = publicPayload('employee:9007199254740991', { subgroup: 99, excludeKinds: [...KIND_CODES] }) ?? '';
    expect(all).toMatch(PAYLOAD);
    expect(parsePublicPayload(all)?.options.excludeKinds).toHaveLength(KIND_CODES.length);
  });

  it('leaves unlisted kinds, personal sources and odd subgroups to stored payloads', () => {
    expect(publicPayload('group:4242', { excludeKinds: ['лекция', 'практика (семинар)'] })).toBeUndefined();
    expect(publicPayload(`personal:${SUBSCRIPTION}`, {})).toBeUndefined();
    expect(publicPayload('group:4242', { subgroup: 100 })).toBeUndefined();
  });

  it('refuses what is not one', () => {
    for (const payload of [
      'g0',
      'g01',
      'x4242',
      'g4242_s0',
      'g4242_s',
      'g4242_x',
      'g4242_x0',
      'g4242_xzzzz',
      'g12345678901234567',
      '',
    ])
      expect(parsePublicPayload(payload)).toBeUndefined();
  });

  it('normalises the options a notification reads', () => {
    expect(notifyOptionsOf({ subgroup: 1, excludeKinds: ['Лекция', 'практика', 'лекция'] })).toEqual({
      subgroup: 1,
      excludeKinds: ['лекция', 'практика'],
    });
    expect(notifyOptionsOf({ excludeKinds: [] })).toEqual({});
  });
});

describe('TelegramChats', () => {
  it('subscribes a chat, lists it both ways, and unsubscribes one source or all', async () => {
    expect(await chats.subscribe({ chatId: '101', source: 'group:1', options: { subgroup: 2 } })).toBe(true);
    expect(await chats.subscribe({ chatId: '101', source: 'group:1', options: { subgroup: 1 } })).toBe(false);
    await chats.subscribe({ chatId: '101', source: 'employee:7', options: { excludeKinds: ['Лекция'] } });
    await chats.subscribe({ chatId: '-202', source: 'group:1', options: {} });
    await chats.subscribe({ chatId: '101', source: `personal:${SUBSCRIPTION}`, options: { subgroup: 1 } });

    expect(await chats.ofChat('101')).toEqual([
      { source: 'employee:7', options: { excludeKinds: ['лекция'] } },
      { source: 'group:1', options: { subgroup: 1 } },
      // A personal chat follows its subscription's own options.
      { source: `personal:${SUBSCRIPTION}`, options: {} },
    ]);
    const ofGroup = await chats.ofSource('group:1');
    expect(ofGroup.sort((a, b) => a.chatId.localeCompare(b.chatId))).toEqual([
      { chatId: '-202', options: {} },
      { chatId: '101', options: { subgroup: 1 } },
    ]);
    expect(await chats.hasAny('group:1')).toBe(true);
    expect(await chats.hasAny('group:2')).toBe(false);

    expect(await chats.unsubscribe('101', 'group:1')).toEqual(['group:1']);
    expect(await chats.unsubscribe('101', 'group:1')).toEqual([]);
    expect(await chats.ofSource('group:1')).toEqual([{ chatId: '-202', options: {} }]);

    expect((await chats.unsubscribe('101')).sort()).toEqual(['employee:7', `personal:${SUBSCRIPTION}`]);
    expect(await chats.ofChat('101')).toEqual([]);
    expect(await chats.hasAny('employee:7')).toBe(false);
    expect(await redis.exists(keys.tgChat('101'), keys.tgSourceChats('employee:7'))).toBe(0);
    expect(await chats.unsubscribe('101')).toEqual([]);
  });

  it('reads a large source in batches', async () => {
    for (let chat = 0; chat < 1200; chat += 1)
      await chats.subscribe({ chatId: String(10_000 + chat), source: 'group:55', options: {} });
    const all = await chats.ofSource('group:55');
    expect(new Set(all.map((chat) => chat.chatId)).size).toBe(1200);
  });

  it('gives readable payloads without storing them', async () => {
    expect(await chats.linkPayload('group:4242', { subgroup: 1, alarmMinutes: 5 } as never)).toBe('g4242_s1');
    expect(await chats.resolvePayload('g4242_s1')).toEqual({
      kind: 'source',
      source: 'group:4242',
      options: { subgroup: 1 },
    });
  });

  it('stores a payload of hidden kinds: the same choice gives the same short id, within the limits', async () => {
    const options = { subgroup: 1, excludeKinds: ['Лабораторная работа', 'лекция', 'Практика (семинар)'] };
    const payload = await chats.linkPayload('group:4242', options);
    expect(payload).toMatch(PAYLOAD);
    expect(payload).toMatch(/^o/);
    expect(payload.length).toBeLessThanOrEqual(64);
    expect(
      await chats.linkPayload('group:4242', {
        excludeKinds: ['лекция', 'Практика (семинар)', 'лабораторная работа'],
        subgroup: 1,
      }),
    ).toBe(payload);
    expect(await chats.linkPayload('group:4242', { excludeKinds: ['лекция'] })).not.toBe(payload);
    // An hour: the link is followed at once; older versions' year-long ones still resolve while they live.
    expect(await redis.ttl(keys.tgLink(payload))).toBeGreaterThan(3590);
    expect(await redis.ttl(keys.tgLink(payload))).toBeLessThanOrEqual(LINK_TTL_SECONDS);
    expect(await chats.resolvePayload(payload)).toEqual({
      kind: 'source',
      source: 'group:4242',
      options: { subgroup: 1, excludeKinds: ['лабораторная работа', 'лекция', 'практика (семинар)'] },
    });
    // Resolving it again still works: it is a page's link, used by many.
    expect((await chats.resolvePayload(payload)).kind).toBe('source');
    expect(await chats.resolvePayload('oAAAAAAAAAAAAAAAA')).toEqual({ kind: 'expired' });
  });

  it('keeps the year of a payload an older version stored, and renews it on use', async () => {
    const options = { excludeKinds: ['практика (семинар)'] };
    const payload = await chats.linkPayload('group:5151', options);
    const key = keys.tgLink(payload);
    // As an older version left it: the same digest id and value, living a year, some of it gone.
    const value = await redis.get(key);
    await redis.set(key, value ?? '', 'EX', 300 * 24 * 3600);
    expect(await chats.linkPayload('group:5151', options)).toBe(payload);
    expect(await redis.ttl(key)).toBeGreaterThan(LEGACY_LINK_TTL_SECONDS - 10);
    await redis.expire(key, 200 * 24 * 3600);
    expect((await chats.resolvePayload(payload)).kind).toBe('source');
    expect(await redis.ttl(key)).toBeGreaterThan(LEGACY_LINK_TTL_SECONDS - 10);
    // One of this version's is only read: it stays an hour's.
    const fresh = await chats.linkPayload('group:5152', options);
    expect((await chats.resolvePayload(fresh)).kind).toBe('source');
    expect(await redis.ttl(keys.tgLink(fresh))).toBeLessThanOrEqual(LINK_TTL_SECONDS);
  });

  it('gives a personal page a one-time payload that names no feed token and works once', async () => {
    const payload = await chats.oncePayload(SUBSCRIPTION);
    expect(payload).toMatch(/^p[A-Za-z0-9_-]{22}$/);
    expect(payload).not.toContain(SUBSCRIPTION);
    const ttl = await redis.ttl(keys.tgOnce(payload));
    expect(ttl).toBeGreaterThan(3500);
    expect(ttl).toBeLessThanOrEqual(3600);
    const resolved = await chats.resolvePayload(payload);
    expect(resolved).toEqual({
      kind: 'source',
      source: `personal:${SUBSCRIPTION}`,
      options: {},
      once: { code: payload, subscriptionId: SUBSCRIPTION, leftMs: expect.any(Number) },
    });
    expect(resolved.kind === 'source' ? resolved.once?.leftMs : 0).toBeGreaterThan(3_500_000);
    expect(await chats.resolvePayload(payload)).toEqual({ kind: 'expired' });
    expect(await chats.oncePayload(SUBSCRIPTION)).not.toBe(payload);
    await expect(chats.oncePayload('not-an-id')).rejects.toThrow();
  });

  it('calls anything else invalid', async () => {
    for (const payload of ['', 'hello world', 'x'.repeat(65), 'g0', 'zzz', 'p-short'])
      expect(await chats.resolvePayload(payload)).toEqual({ kind: 'invalid' });
  });
});
