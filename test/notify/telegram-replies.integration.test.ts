/**
 * The bot's replies obey the limits change messages obey, against the fake Bot API enforcing Telegram's
 * one-a-second per chat (`chatPaceMs`): replies are jobs of the Telegram queue (its limiter, the chats' pace),
 * a chat flooding commands gets TELEGRAM_COMMAND_BURST answers one a second and one «Слишком часто», a reply
 * refused with 429 is sent again after its `retry_after`, and while the channel is disabled a reply waits its
 * turn to try it, as a change message does.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { replyJobId } from '../../src/jobs/contract.ts';
import { enqueueReply } from '../../src/jobs/queues.ts';
import { LATE_PREFIX, REPLY_STALE_MS, STALE_TEXT } from '../../src/jobs/telegram-reply.ts';
import { silentLogger } from '../../src/logger.ts';
import { createTelegramBot, type TelegramBot } from '../../src/notify/telegram/bot.ts';
import { CommandGate, TOO_OFTEN } from '../../src/notify/telegram/flood-gate.ts';
import { botContextDeps } from '../../src/runtime/telegram.ts';
import { type FakeTelegram, startFakeTelegram } from '../../testkit/fake-telegram/index.ts';
import { until } from '../../testkit/poll.ts';
import { type Pipeline, startPipeline } from '../jobs/helpers.ts';

let pipeline: Pipeline;
let fake: FakeTelegram;
let telegram: TelegramBot;

beforeAll(async () => {
  fake = await startFakeTelegram({ chatPaceMs: 1000 });
  pipeline = await startPipeline({ TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_API_ROOT: fake.apiRoot });
  const ctx = pipeline.ctx;
  telegram = createTelegramBot(
    { telegramBotToken: fake.token, telegramApiRoot: fake.apiRoot },
    {
      ...botContextDeps(ctx),
      logger: silentLogger(),
      reply: ({ updateId, ...reply }) => enqueueReply(ctx.queues, { ...reply, askedAt: Date.now() }, updateId),
      gate: new CommandGate(ctx.redis, ctx.keys, ctx.config.telegramCommandBurst),
    },
  );
  void telegram.bot.start({ timeout: 1 });
});

afterAll(async () => {
  if (telegram?.bot.isRunning()) await telegram.bot.stop();
  await pipeline?.close();
  await fake?.close();
});

describe('command replies', () => {
  it('answer a chat flooding /week one a second, the excess once with «Слишком часто»', async () => {
    const chat = 9001;
    fake.addChat(chat);
    const started = Date.now();
    for (let index = 0; index < 40; index += 1) fake.userSays(chat, '/week');
    // Three answers (the burst) and one «Слишком часто», then nothing more.
    const messages = await until(
      async () => fake.messages(chat),
      (all) => all.length >= 4,
      20_000,
    );
    await new Promise((done) => setTimeout(done, 2_000));
    const all = fake.messages(chat);
    expect(all).toHaveLength(4);
    expect(all.filter((message) => message.text === TOO_OFTEN)).toHaveLength(1);
    expect(fake.paceRefusals()).toBe(0);
    const gaps = all.slice(1).map((message, index) => message.at - (all[index]?.at ?? 0));
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(950);
    console.log(
      `[figure] 40 /week from one chat: ${all.length} replies over ${((messages.at(-1)?.at ?? started) - started) / 1000} s, ` +
        `gaps ${gaps.join(', ')} ms, ${fake.paceRefusals()} refused by the per-chat limit`,
    );
  }, 40_000);

  it('sends a reply refused with 429 again after retry_after', async () => {
    const chat = 9002;
    fake.addChat(chat);
    fake.fault({ method: 'sendMessage', kind: '429', retryAfter: 2, chatId: chat });
    const asked = Date.now();
    fake.userSays(chat, '/list');
    const [reply] = await until(
      async () => fake.messages(chat),
      (all) => all.length >= 1,
      20_000,
    );
    expect(reply?.text).toContain('Подписок нет');
    expect((reply?.at ?? 0) - asked).toBeGreaterThanOrEqual(1_900);
    expect(
      fake.calls('sendMessage').filter((call) => Number(call.params.chat_id) === chat).length,
    ).toBeGreaterThanOrEqual(2);
  }, 40_000);

  it('waits while the channel is disabled and another send tries it, then is the try that puts it on', async () => {
    const chat = 9010;
    fake.addChat(chat);
    const { ctx } = pipeline;
    const { states } = ctx.notify;
    onTestFinished(async () => {
      await states.enable('telegram');
      await ctx.redis.del(ctx.keys.channelProbe('telegram'));
    });
    // Another send holds the channel's one try (taken first: the workers' own ask must not take it meanwhile).
    expect(await states.takeProbe('telegram', 60_000)).toBe(true);
    await states.disable('telegram', 'Telegram refuses the bot: 401 Unauthorized', Date.now());
    await enqueueReply(ctx.queues, { chatId: String(chat), parts: [{ text: 'ждёт' }], askedAt: Date.now() }, 80);
    const id = replyJobId(String(chat), 80);
    expect(
      await until(
        () => ctx.queues.telegram.getJobState(id),
        (state) => state === 'delayed',
      ),
    ).toBe('delayed');
    expect(fake.messages(chat)).toEqual([]);
    // That try is over: the reply is the next one, and Telegram taking it puts the channel on.
    await ctx.redis.del(ctx.keys.channelProbe('telegram'));
    await (await ctx.queues.telegram.getJob(id))?.promote();
    const [reply] = await until(
      async () => fake.messages(chat),
      (all) => all.length >= 1,
      20_000,
    );
    expect(reply?.text).toBe('ждёт');
    // The fake records the message as it answers; the worker turns the channel on once it has read that answer.
    expect(
      await until(
        () => states.disabled('telegram'),
        (disabled) => disabled === undefined,
      ),
    ).toBeUndefined();
    const done = await until(
      async () => ctx.queues.telegram.getJob(id),
      (job) => job?.finishedOn !== undefined,
    );
    // Waiting used no attempt.
    expect(done?.attemptsMade).toBe(1);
  }, 30_000);

  it("sends an update's messages once and in order, however often it is queued", async () => {
    const chat = 9003;
    fake.addChat(chat);
    const parts = [{ text: 'первое' }, { text: 'второе' }, { text: 'третье' }];
    const reply = { chatId: String(chat), parts, askedAt: Date.now() };
    // The same update queued again (a retry after Redis stalled) is the same job.
    await Promise.all([enqueueReply(pipeline.ctx.queues, reply, 77), enqueueReply(pipeline.ctx.queues, reply, 77)]);
    await until(
      async () => fake.messages(chat),
      (all) => all.length >= 3,
      20_000,
    );
    await new Promise((done) => setTimeout(done, 1_500));
    expect(fake.messages(chat).map((message) => message.text)).toEqual(['первое', 'второе', 'третье']);
  }, 30_000);

  it('answers a command that waited behind a fan-out late, saying so, and a very late one asks again', async () => {
    const [late, stale] = [9004, 9005];
    fake.addChat(late);
    fake.addChat(stale);
    const now = Date.now();
    await enqueueReply(
      pipeline.ctx.queues,
      { chatId: String(late), parts: [{ text: 'Подписок нет.' }], askedAt: now - 5 * 60_000 },
      78,
    );
    await enqueueReply(
      pipeline.ctx.queues,
      { chatId: String(stale), parts: [{ text: 'Подписок нет.' }, { text: 'ещё' }], askedAt: now - REPLY_STALE_MS - 1 },
      79,
    );
    const [lateReply] = await until(
      async () => fake.messages(late),
      (all) => all.length >= 1,
      20_000,
    );
    const [staleReply] = await until(
      async () => fake.messages(stale),
      (all) => all.length >= 1,
      20_000,
    );
    expect(lateReply?.text).toBe(`${LATE_PREFIX}Подписок нет.`);
    expect(staleReply?.text).toBe(STALE_TEXT);
    await new Promise((done) => setTimeout(done, 1_500));
    expect(fake.messages(stale)).toHaveLength(1);
  }, 30_000);
});
