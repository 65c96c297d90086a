/**
 * The bot answers each chat in a lane of its own, through the fake Bot API and long polling (where grammY hands
 * over one update at a time): a `/start` whose first fetch never lands holds only its own chat, and button
 * presses go through the same flood gate as commands.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { createTelegramBot, type TelegramBot } from '../../src/notify/telegram/bot.ts';
import { CommandGate, TOO_OFTEN } from '../../src/notify/telegram/flood-gate.ts';
import { CHECK_WAIT_MS, sourceChecker } from '../../src/notify/telegram/source-check.ts';
import { botContextDeps } from '../../src/runtime/telegram.ts';
import { type FakeTelegram, startFakeTelegram } from '../../testkit/fake-telegram/index.ts';
import { until } from '../../testkit/poll.ts';
import { type Pipeline, startPipeline } from '../jobs/helpers.ts';

let pipeline: Pipeline;
let fake: FakeTelegram;
let telegram: TelegramBot;
let fetches = 0;

beforeAll(async () => {
  pipeline = await startPipeline();
  fake = await startFakeTelegram();
  const ctx = pipeline.ctx;
  telegram = createTelegramBot(
    { telegramBotToken: fake.token, telegramApiRoot: fake.apiRoot },
    {
      ...botContextDeps(ctx),
      logger: silentLogger(),
      // A first fetch that never lands: it is queued nowhere, so the check waits its whole wait.
      checkSource: sourceChecker({
        ...ctx,
        admit: async () => undefined,
        admitWait: async () => undefined,
        refreshPending: async () => false,
        fetch: async () => {
          fetches += 1;
        },
      }),
      gate: new CommandGate(ctx.redis, ctx.keys, ctx.config.telegramCommandBurst),
    },
  );
  void telegram.bot.start({ timeout: 1 });
});

afterAll(async () => {
  if (telegram?.bot.isRunning()) await telegram.bot.stop();
  await telegram?.idle();
  await fake?.close();
  await pipeline?.close();
});

describe('chat lanes', () => {
  it("a /start waiting for a first fetch does not hold another chat's /today", async () => {
    const [waiting, other] = [9101, 9102];
    fake.addChat(waiting);
    fake.addChat(other);
    fake.userSays(waiting, '/start g98765432');
    await until(
      async () => fetches,
      (count) => count === 1,
      5_000,
    );
    const asked = Date.now();
    fake.userSays(other, '/today');
    const [answer] = await until(
      async () => fake.messages(other),
      (all) => all.length >= 1,
      CHECK_WAIT_MS + 5_000,
    );
    expect(answer?.text).toContain('Подписок нет');
    const waited = (answer?.at ?? Number.POSITIVE_INFINITY) - asked;
    expect(waited).toBeLessThan(1_000);
    // The waiting chat hears its own answer once its wait is over.
    const [own] = await until(
      async () => fake.messages(waiting),
      (all) => all.length >= 1,
      CHECK_WAIT_MS + 5_000,
    );
    expect(own?.text).toContain('ещё загружается');
    console.log(`[figure] /today of another chat while a /start waits for a first fetch: answered in ${waited} ms`);
  }, 40_000);

  it('answers button presses within the flood gate', async () => {
    const chat = 9103;
    fake.addChat(chat);
    const data = 'sg:group:4242:1';
    const question = await telegram.bot.api.sendMessage(chat, 'Из какой вы подгруппы?', {
      reply_markup: { inline_keyboard: [[{ text: '1', callback_data: data }]] },
    });
    const before = fake.callbackAnswers().length;
    for (let index = 0; index < 20; index += 1) fake.userPresses(chat, question.message_id, data);
    const burst = pipeline.ctx.config.telegramCommandBurst;
    await until(
      async () => fake.callbackAnswers().length - before,
      (count) => count >= burst + 1,
      10_000,
    );
    await new Promise((done) => setTimeout(done, 1_500));
    await telegram.idle();
    const answers = fake.callbackAnswers().slice(before);
    // The burst, «Слишком часто» once, and what refilled while they were handled (one a second).
    expect(answers.length).toBeLessThanOrEqual(burst + 1 + 2);
    expect(answers.filter((answer) => answer.text === TOO_OFTEN)).toHaveLength(1);
    expect(fake.calls('editMessageReplyMarkup').length).toBeLessThanOrEqual(burst + 2);
  }, 30_000);
});
