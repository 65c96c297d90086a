/**
 * The Telegram routes and the pages' link, against the fake Bot API: `/telegram/start` answers 303 to t.me with a
 * payload (personal: only for the signed-in browser), the webhook route takes only Telegram's secret header and
 * answers through the bot, and the timetable page shows «Уведомления в Telegram» only when the bot is on.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { PERSONAL_COOKIE } from '../../src/http/personal-session.ts';
import { silentLogger } from '../../src/logger.ts';
import { createTelegramBot, type TelegramBot } from '../../src/notify/telegram/bot.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { freePort } from '../../src/runtime/embedded-redis.ts';
import { botContextDeps } from '../../src/runtime/telegram.ts';
import { type FakeTelegram, startFakeTelegram } from '../../testkit/fake-telegram/index.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { testContext } from '../support/service.ts';
import { storeTimetable } from './helpers.ts';

let fake: FakeTelegram;
let ctx: ServiceContext;
let closeContext: () => Promise<void>;
let telegram: TelegramBot;
let app: FastifyInstance;
let plain: FastifyInstance;
let port: number;

function botOf(context: ServiceContext): TelegramBot {
  return createTelegramBot(
    {
      telegramBotToken: fake.token,
      telegramApiRoot: fake.apiRoot,
      telegramWebhookUrl: context.config.telegramWebhookUrl,
      secretKey: context.config.secretKey,
    },
    {
      chats: context.notify.chats,
      snapshots: context.snapshots,
      subscriptions: context.subscriptions,
      config: context.config,
      redis: context.redis,
      keys: context.keys,
      logger: silentLogger(),
      now: context.now,
    },
  );
}

beforeAll(async () => {
  fake = await startFakeTelegram();
  port = await freePort();
  const opened = await testContext({
    TELEGRAM_BOT_TOKEN: fake.token,
    TELEGRAM_API_ROOT: fake.apiRoot,
    TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram/webhook`,
  });
  ctx = opened.context;
  closeContext = opened.close;
  telegram = botOf(ctx);
  app = await buildApp(ctx, { logger: silentLogger(), telegram });
  await app.listen({ port, host: '127.0.0.1' });
  // The same service without a bot.
  plain = await buildApp(ctx, { logger: silentLogger() });
  await storeTimetable(ctx, 'group:4242');
});

/** Every key of this test's prefix (SCAN). */
async function prefixKeys(): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await ctx.redis.scan(cursor, 'MATCH', `${ctx.config.redisPrefix}:*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

/** The stored `/start` payloads. */
async function linkKeys(): Promise<string[]> {
  return (await prefixKeys()).filter((key) => key.includes(':tg:link:'));
}

afterAll(async () => {
  await app?.close();
  await plain?.close();
  await closeContext?.();
  await fake?.close();
});

describe('GET /telegram/start', () => {
  it('sends a public page to the bot with a readable payload, or a stored one for an unlisted kind', async () => {
    const readable = await app.inject({ url: '/telegram/start?source=group:4242&subgroup=1' });
    expect(readable.statusCode).toBe(303);
    expect(readable.headers.location).toBe('https://t.me/timetable_test_bot?start=g4242_s1');
    expect(readable.headers['cache-control']).toBe('no-store');

    const kinds = await app.inject({
      url: `/telegram/start?source=group:4242&subgroup=2&exclude=${encodeURIComponent('Лекция,лабораторная работа')}`,
    });
    expect(kinds.headers.location).toBe('https://t.me/timetable_test_bot?start=g4242_s2_x5');
    expect(await linkKeys()).toEqual([]);

    const hidden = await app.inject({
      url: `/telegram/start?source=group:4242&exclude=${encodeURIComponent('Практика (семинар)')}`,
    });
    expect(hidden.statusCode).toBe(303);
    const payload = new URL(String(hidden.headers.location)).searchParams.get('start') ?? '';
    expect(payload).toMatch(/^o[A-Za-z0-9_-]{16}$/);
    expect(await ctx.redis.ttl(ctx.keys.tgLink(payload))).toBeLessThanOrEqual(3600);
    expect(await ctx.notify.chats.resolvePayload(payload)).toEqual({
      kind: 'source',
      source: 'group:4242',
      options: { excludeKinds: ['практика (семинар)'] },
    });
    await ctx.redis.del(ctx.keys.tgLink(payload));
  });

  it('leaves no key for 1,000 links of made-up groups, and limits each address', async () => {
    const before = await prefixKeys();
    const started = performance.now();
    const answers: number[] = [];
    for (let index = 0; index < 1000; index += 1) {
      const exclude = encodeURIComponent('Практика (семинар)');
      const response = await app.inject({
        url: `/telegram/start?source=group:${80_000_000 + index}&exclude=${exclude}`,
        remoteAddress: `198.51.100.${index % 100}`,
      });
      answers.push(response.statusCode);
    }
    const seconds = (performance.now() - started) / 1000;
    expect(new Set(answers)).toEqual(new Set([404]));
    const added = (await prefixKeys()).filter((key) => !before.includes(key));
    // Only the addresses' rate-limit buckets, which expire within their minute.
    expect(added.every((key) => key.includes(':rate:telegram-link:'))).toBe(true);
    for (const key of added) expect(await ctx.redis.pttl(key)).toBeLessThanOrEqual(60_000);
    console.log(`[figure] 1,000 links of made-up groups in ${seconds.toFixed(1)} s: ${added.length} keys, all buckets`);

    const limited: number[] = [];
    for (let index = 0; index < 61; index += 1)
      limited.push(
        (await app.inject({ url: '/telegram/start?source=group:4242', remoteAddress: '203.0.113.9' })).statusCode,
      );
    expect(limited.slice(0, 60).every((status) => status === 303)).toBe(true);
    const refused = await app.inject({ url: '/telegram/start?source=group:4242', remoteAddress: '203.0.113.9' });
    expect(refused.statusCode).toBe(429);
    expect(refused.json().code).toBe('RATE_LIMITED');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('links a group nobody opened yet with a readable payload, storing nothing', async () => {
    const before = await prefixKeys();
    const response = await app.inject({
      url: `/telegram/start?source=group:77001&subgroup=2&exclude=${encodeURIComponent('лекция')}`,
      remoteAddress: '192.0.2.77',
    });
    expect(response.statusCode).toBe(303);
    expect(response.headers.location).toBe('https://t.me/timetable_test_bot?start=g77001_s2_x1');
    const added = (await prefixKeys()).filter((key) => !before.includes(key));
    expect(added.every((key) => key.includes(':rate:telegram-link:'))).toBe(true);
  });

  it('still resolves a payload stored by an older version', async () => {
    // What the version before stored for a page with hidden kinds: a year-long key.
    await ctx.redis.set(
      ctx.keys.tgLink('oOLDoldOLDold1234'),
      JSON.stringify({ source: 'group:4242', options: { excludeKinds: ['лекция'] } }),
      'EX',
      365 * 24 * 3600,
    );
    expect(await ctx.notify.chats.resolvePayload('oOLDoldOLDold1234')).toEqual({
      kind: 'source',
      source: 'group:4242',
      options: { excludeKinds: ['лекция'] },
    });
  });

  it('links to the bot of the token in use, not to the one cached for the token before', async () => {
    expect(await telegram.username()).toBe('timetable_test_bot');
    const other = await startFakeTelegram({ token: '987654321:another-token', username: 'timetable_new_bot' });
    try {
      const renamed = createTelegramBot(
        { telegramBotToken: other.token, telegramApiRoot: other.apiRoot },
        {
          ...botContextDeps(ctx),
          logger: silentLogger(),
        },
      );
      const second = await buildApp(ctx, { logger: silentLogger(), telegram: renamed });
      try {
        const response = await second.inject({ url: '/telegram/start?source=group:4242' });
        expect(response.headers.location).toBe('https://t.me/timetable_new_bot?start=g4242');
      } finally {
        await second.close();
      }
      const cached = await prefixKeys();
      expect(cached.filter((key) => key.includes(':tg:bot-info:'))).toHaveLength(2);
      expect(cached.some((key) => key.includes(other.token) || key.includes(fake.token))).toBe(false);
    } finally {
      await other.close();
    }
  });

  it('refuses a bad source or option, and answers 503 without a bot', async () => {
    const bad = await app.inject({ url: '/telegram/start?source=group:abc' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe('INVALID_SOURCE');
    const option = await app.inject({ url: '/telegram/start?source=group:4242&subgroup=zero' });
    expect(option.statusCode).toBe(400);
    expect(option.json().code).toBe('INVALID_QUERY');
    const off = await plain.inject({ url: '/telegram/start?source=group:4242' });
    expect(off.statusCode).toBe(503);
    expect(off.json().code).toBe('TELEGRAM_NOT_CONFIGURED');
  });

  it('gives a personal timetable a one-time payload only in its signed-in browser', async () => {
    const { subscription, token } = await ctx.subscriptions.create({
      credential: 'student-2:secret',
      name: 'Сидорова А. А.',
      upstreamUserId: 9002,
      now: Date.now(),
    });
    const url = `/telegram/start?source=${subscription.source}`;
    const anonymous = await app.inject({ url });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().code).toBe('SIGN_IN_REQUIRED');

    const cookie = `${PERSONAL_COOKIE}=${subscription.id}.${token}`;
    const signedIn = await app.inject({ url, headers: { cookie } });
    expect(signedIn.statusCode).toBe(303);
    const location = String(signedIn.headers.location);
    expect(location).not.toContain(token);
    const payload = new URL(location).searchParams.get('start') ?? '';
    expect(payload).toMatch(/^p[A-Za-z0-9_-]{22}$/);
    expect(await ctx.notify.chats.resolvePayload(payload)).toMatchObject({
      kind: 'source',
      source: subscription.source,
      options: {},
    });
    // Another person's timetable is not this browser's.
    const other = await app.inject({
      url: '/telegram/start?source=personal:AAAAAAAAAAAAAAAAAAAAAA',
      headers: { cookie },
    });
    expect(other.statusCode).toBe(401);
  });
});

describe('POST /telegram/webhook', () => {
  const update = (id: number, chatId: number, text: string) => ({
    update_id: id,
    message: {
      message_id: id,
      date: Math.floor(Date.now() / 1000),
      chat: { id: chatId, type: 'private', first_name: 'Студент' },
      from: { id: chatId, is_bot: false, first_name: 'Студент' },
      text,
      entities: [{ type: 'bot_command', offset: 0, length: text.split(' ')[0]?.length ?? 0 }],
    },
  });

  it('refuses a request without the secret header or with a wrong one, before reading it', async () => {
    fake.addChat(8101);
    for (const headers of [{}, { 'x-telegram-bot-api-secret-token': 'wrong' }]) {
      const answer = await app.inject({
        method: 'POST',
        url: '/telegram/webhook',
        headers,
        payload: update(1, 8101, '/help'),
      });
      expect(answer.statusCode).toBe(401);
      expect(answer.json().code).toBe('TELEGRAM_WEBHOOK_UNAUTHORIZED');
    }
    // With the right secret: the update is handled (its reply sent), once, however often it arrives.
    const headers = { 'x-telegram-bot-api-secret-token': telegram.webhookSecret };
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const answer = await app.inject({
        method: 'POST',
        url: '/telegram/webhook',
        headers,
        payload: update(2, 8101, '/help'),
      });
      expect(answer.statusCode).toBe(200);
    }
    // The route answers once the update is queued in its chat's lane; the reply follows.
    await telegram.idle();
    expect(fake.messages(8101)).toHaveLength(1);
    expect(fake.messages(8101)[0]?.text).toContain('/today — занятия сегодня');
    // Without a bot the route is off.
    const off = await plain.inject({
      method: 'POST',
      url: '/telegram/webhook',
      headers,
      payload: update(3, 8101, '/help'),
    });
    expect(off.statusCode).toBe(503);
  });

  it('receives what Telegram sends once the webhook is set', async () => {
    await telegram.setWebhook();
    expect(fake.webhook()).toEqual({
      url: `http://127.0.0.1:${port}/telegram/webhook`,
      secretToken: telegram.webhookSecret,
    });
    expect(telegram.webhookSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    fake.userSays(8102, '/start g4242_s2');
    await waitUntil(() => fake.messages(8102).length > 0, 'the reply');
    expect(fake.messages(8102)[0]?.text).toContain('Вы подписаны: ИВТ-21 (подгруппа 2).');
    expect(await ctx.notify.chats.ofChat('8102')).toEqual([{ source: 'group:4242', options: { subgroup: 2 } }]);
    expect(fake.webhookPosts().every((post) => post.outcome === 200)).toBe(true);
  });
});

describe('the timetable page', () => {
  it('links to the bot with the page options only when the bot is on', async () => {
    const page = await app.inject({ url: '/timetables/groups/4242?subgroup=1' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Уведомления в Telegram');
    const href = /href="([^"]*)" data-link="telegram"/.exec(page.body)?.[1] ?? '';
    expect(href.replaceAll('&#61;', '=').replaceAll('&#38;', '&')).toBe(
      '/telegram/start?source=group%3A4242&subgroup=1',
    );

    const preview = await app.inject({ url: '/timetables/groups/4242/preview?subgroup=2' });
    expect(preview.json().telegram).toBe('/telegram/start?source=group%3A4242&subgroup=2');

    const off = await plain.inject({ url: '/timetables/groups/4242' });
    expect(off.statusCode).toBe(200);
    expect(off.body).not.toContain('Уведомления в Telegram');
    expect((await plain.inject({ url: '/timetables/groups/4242/preview' })).json().telegram).toBeUndefined();
  });
});
