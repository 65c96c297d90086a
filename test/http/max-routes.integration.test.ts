/**
 * The MAX routes against the fake MAX Bot API: `/max/start` answers 303 to `https://max.ru/<bot>?start=<payload>`
 * with the Telegram link's payloads (personal: a one-time one, only for the signed-in browser), within its own
 * per-address limit, and refuses a bad source naming every form a source takes; `/max/webhook` takes only MAX's
 * secret header (checked before the body is read), reads a 64-bit id to its last digit, and the bot answers what
 * MAX posts to it after the fake was subscribed; an update that could not be taken (Redis paused) answers 503, so
 * that MAX sends it again, and it is answered once then.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { PERSONAL_COOKIE } from '../../src/http/personal-session.ts';
import { silentLogger } from '../../src/logger.ts';
import { createMaxBot, type MaxBot } from '../../src/notify/max/bot.ts';
import { MaxClient } from '../../src/notify/max/client.ts';
import { UPDATE_TYPES } from '../../src/notify/max/updates.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { freePort } from '../../src/runtime/embedded-redis.ts';
import { botContextDeps } from '../../src/runtime/telegram.ts';
import { MaxChats } from '../../src/store/max-chats.ts';
import { type FakeMax, startFakeMax } from '../../testkit/fake-max/index.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { startRedisProcess } from '../../testkit/redis-process.ts';
import { testContext } from '../support/service.ts';
import { storeTimetable } from './helpers.ts';

let fake: FakeMax;
let ctx: ServiceContext;
let closeContext: () => Promise<void>;
let client: MaxClient;
let max: MaxBot;
let chats: MaxChats;
let app: FastifyInstance;
let plain: FastifyInstance;
let port: number;

beforeAll(async () => {
  fake = await startFakeMax({ username: 'id7700000042_bot', chatRate: 0 });
  port = await freePort();
  const opened = await testContext({
    MAX_BOT_TOKEN: fake.token,
    MAX_API_ROOT: fake.apiRoot,
    MAX_WEBHOOK_URL: 'https://timetable.example.edu/max/webhook',
  });
  ctx = opened.context;
  closeContext = opened.close;
  client = new MaxClient({ token: fake.token, apiRoot: fake.apiRoot });
  chats = new MaxChats(ctx.redis, ctx.keys);
  max = createMaxBot(
    { maxBotToken: fake.token, maxWebhookUrl: ctx.config.maxWebhookUrl, secretKey: ctx.config.secretKey },
    {
      ...botContextDeps(ctx),
      chats,
      keys: ctx.keys,
      client,
      logger: silentLogger(),
      reply: undefined,
    },
  );
  app = await buildApp(ctx, { logger: silentLogger(), max });
  await app.listen({ port, host: '127.0.0.1' });
  plain = await buildApp(ctx, { logger: silentLogger() });
  await storeTimetable(ctx, 'group:4242');
});

afterAll(async () => {
  await app?.close();
  await plain?.close();
  await client?.close();
  await closeContext?.();
  await fake?.close();
});

describe('GET /max/start', () => {
  it("sends a page to the MAX bot with the Telegram link's payload", async () => {
    const readable = await app.inject({ url: '/max/start?source=group:4242&subgroup=1' });
    expect(readable.statusCode).toBe(303);
    expect(readable.headers.location).toBe('https://max.ru/id7700000042_bot?start=g4242_s1');
    expect(readable.headers['cache-control']).toBe('no-store');
    const hidden = await app.inject({
      url: `/max/start?source=group:4242&exclude=${encodeURIComponent('Практика (семинар)')}`,
    });
    const payload = new URL(String(hidden.headers.location)).searchParams.get('start') ?? '';
    expect(payload).toMatch(/^o[A-Za-z0-9_-]{16}$/);
    // One payload, both messengers: the Telegram bot's store reads it too.
    expect(await ctx.notify.chats.resolvePayload(payload)).toEqual({
      kind: 'source',
      source: 'group:4242',
      options: { excludeKinds: ['практика (семинар)'] },
    });
    expect(await chats.resolvePayload(payload)).toMatchObject({ kind: 'source', source: 'group:4242' });
  });

  it('gives a personal timetable a one-time payload only in its signed-in browser', async () => {
    const { subscription, token } = await ctx.subscriptions.create({
      credential: 'student-3:secret',
      name: 'Петрова В. В.',
      upstreamUserId: 9003,
      now: Date.now(),
    });
    const url = `/max/start?source=${subscription.source}`;
    expect((await app.inject({ url })).json().code).toBe('SIGN_IN_REQUIRED');
    const signedIn = await app.inject({ url, headers: { cookie: `${PERSONAL_COOKIE}=${subscription.id}.${token}` } });
    expect(signedIn.statusCode).toBe(303);
    const location = String(signedIn.headers.location);
    expect(location).not.toContain(token);
    expect(new URL(location).searchParams.get('start')).toMatch(/^p[A-Za-z0-9_-]{22}$/);
  });

  it('refuses a source of no known form, naming every form it may take, in Russian too', async () => {
    for (const lang of ['en', 'ru']) {
      const bad = await app.inject({ url: '/max/start?source=teacher:17', headers: { 'accept-language': lang } });
      expect([bad.statusCode, bad.json().code]).toEqual([400, 'INVALID_SOURCE']);
      const { error } = bad.json() as { error: string };
      for (const form of ['group:', 'employee:', 'personal:']) expect(error, lang).toContain(form);
    }
  });

  it('limits each address apart from the Telegram link, and answers 503 without a bot', async () => {
    const statuses: number[] = [];
    for (let index = 0; index < 61; index += 1)
      statuses.push(
        (await app.inject({ url: '/max/start?source=group:4242', remoteAddress: '203.0.113.19' })).statusCode,
      );
    expect(statuses.slice(0, 60).every((status) => status === 303)).toBe(true);
    expect(statuses[60]).toBe(429);
    const telegram = await app.inject({ url: '/telegram/start?source=group:4242', remoteAddress: '203.0.113.19' });
    expect(telegram.json().code).toBe('TELEGRAM_NOT_CONFIGURED');
    const off = await plain.inject({ url: '/max/start?source=group:4242' });
    expect([off.statusCode, off.json().code]).toEqual([503, 'MAX_NOT_CONFIGURED']);
  });
});

describe('POST /max/webhook', () => {
  const update = (chatId: string, text: string) =>
    `{"update_type":"message_created","timestamp":${Date.now()},"message":{"recipient":{"chat_id":${chatId},` +
    `"chat_type":"dialog"},"timestamp":${Date.now()},"body":{"mid":"mid.${chatId}.${text.length}","seq":1,` +
    `"text":"${text}"},"sender":{"user_id":5551,"name":"Студент","is_bot":false}}}`;

  it('refuses a request without the secret header, or with a wrong one, before reading it', async () => {
    const none = await app.inject({
      method: 'POST',
      url: '/max/webhook',
      payload: 'not json at all',
      headers: { 'content-type': 'application/json' },
    });
    expect([none.statusCode, none.json().code]).toEqual([401, 'MAX_WEBHOOK_UNAUTHORIZED']);
    const wrong = await app.inject({
      method: 'POST',
      url: '/max/webhook',
      payload: update('1', '/help'),
      headers: { 'content-type': 'application/json', 'x-max-bot-api-secret': `${max.webhookSecret.slice(0, -1)}x` },
    });
    expect(wrong.statusCode).toBe(401);
    const off = await plain.inject({ method: 'POST', url: '/max/webhook', payload: update('1', '/help') });
    expect(off.statusCode).toBe(503);
    const junk = await app.inject({
      method: 'POST',
      url: '/max/webhook',
      payload: '{"no":"update"}',
      headers: { 'content-type': 'application/json', 'x-max-bot-api-secret': max.webhookSecret },
    });
    expect([junk.statusCode, junk.json().code]).toEqual([400, 'INVALID_BODY']);
  });

  it('reads a chat_id beyond 2^53 to its last digit', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/max/webhook',
      payload: update('9007199254740993', '/stop'),
      headers: { 'content-type': 'application/json', 'x-max-bot-api-secret': max.webhookSecret },
    });
    expect(response.statusCode).toBe(200);
    await max.idle();
    // The dialog does not exist at the fake: the reply was refused as 404 for exactly that id.
    const sent = fake.calls('messages').at(-1);
    expect(sent?.query.chat_id).toBe('9007199254740993');
  });

  it("answers what MAX posts once subscribed with the bot's secret", async () => {
    expect(max.webhookSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await client.subscribe(`http://127.0.0.1:${port}/max/webhook`, UPDATE_TYPES, max.webhookSecret);
    fake.userStarts('5560', 'g4242');
    const chatId = fake.chatIdOf('5560') as string;
    await waitUntil(() => fake.messages(chatId).length === 1, 'the answer to the start', 10_000);
    expect(fake.messages(chatId)[0]?.text).toContain('Вы подписаны');
    expect(await chats.ofChat(chatId)).toEqual([{ source: 'group:4242', options: {} }]);
    expect(fake.webhookPosts().every((post) => post.outcome === 200 && post.secretSent)).toBe(true);
  });

  it('answers 503 to an update it could not take, so that MAX sends it again; answers it once then', async () => {
    const redis = await startRedisProcess();
    onTestFinished(() => redis.close());
    const own = await startFakeMax({ chatRate: 0 });
    onTestFinished(() => own.close());
    const opened = await testContext({
      REDIS_URL: redis.url,
      MAX_BOT_TOKEN: own.token,
      MAX_API_ROOT: own.apiRoot,
      MAX_WEBHOOK_URL: 'https://timetable.example.edu/max/webhook',
    });
    onTestFinished(opened.close);
    const ownClient = new MaxClient({ token: own.token, apiRoot: own.apiRoot });
    onTestFinished(() => ownClient.close());
    const { context } = opened;
    const bot = createMaxBot(
      { maxBotToken: own.token, maxWebhookUrl: context.config.maxWebhookUrl, secretKey: context.config.secretKey },
      {
        ...botContextDeps(context),
        chats: new MaxChats(context.redis, context.keys),
        keys: context.keys,
        client: ownClient,
        logger: silentLogger(),
        reply: undefined,
      },
    );
    const ownApp = await buildApp(context, { logger: silentLogger(), max: bot });
    const ownPort = await freePort();
    await ownApp.listen({ port: ownPort, host: '127.0.0.1' });
    onTestFinished(async () => {
      redis.resume();
      await ownApp.close();
    });
    await ownClient.subscribe(`http://127.0.0.1:${ownPort}/max/webhook`, UPDATE_TYPES, bot.webhookSecret);

    redis.pause();
    own.userSays('5570', '/help');
    await waitUntil(() => own.webhookPosts().some((post) => post.outcome === 503), 'a 503 to MAX', 15_000);
    redis.resume();
    const chatId = own.chatIdOf('5570') as string;
    await waitUntil(() => own.messages(chatId).length === 1, 'the answer once MAX sent it again', 15_000);
    await new Promise((wake) => setTimeout(wake, 500));
    expect(own.messages(chatId)).toHaveLength(1);
    expect(own.webhookPosts().at(-1)?.outcome).toBe(200);
    expect(own.pendingUpdates()).toBe(0);
  }, 40_000);
});
