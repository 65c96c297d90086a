/**
 * `/start` of a made-up timetable, through the fake Bot API and the bot's long polling, on the refresh pipeline
 * and the university simulator: the first-request limits bound the university calls (the chat is the client,
 * the total is shared with the feed routes), an id the university does not know is answered «не найдена» and
 * never stored, and a chat follows at most TELEGRAM_MAX_SOURCES_PER_CHAT timetables.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { createTelegramBot, type TelegramBot } from '../../src/notify/telegram/bot.ts';
import { botContextDeps, firstRequestCheck } from '../../src/runtime/telegram.ts';
import { type FakeTelegram, startFakeTelegram } from '../../testkit/fake-telegram/index.ts';
import { until } from '../../testkit/poll.ts';
import { type Pipeline, startPipeline } from '../jobs/helpers.ts';

const CHATS = [7001, 7002, 7003, 7004, 7005];
const MADE_UP = 60;

let pipeline: Pipeline;
let fake: FakeTelegram;
let telegram: TelegramBot;
let known: number[];

beforeAll(async () => {
  pipeline = await startPipeline({ TELEGRAM_MAX_SOURCES_PER_CHAT: '3' });
  fake = await startFakeTelegram();
  const ctx = pipeline.ctx;
  telegram = createTelegramBot(
    { telegramBotToken: fake.token, telegramApiRoot: fake.apiRoot },
    {
      ...botContextDeps(ctx),
      logger: silentLogger(),
      checkSource: firstRequestCheck(ctx),
    },
  );
  for (const chat of CHATS) fake.addChat(chat);
  void telegram.bot.start({ timeout: 1 });
  known = (await pipeline.sim.groups()).map((group) => group.id);
});

afterAll(async () => {
  if (telegram?.bot.isRunning()) await telegram.bot.stop();
  await fake?.close();
  await pipeline?.close();
});

/** The bot's replies to `chat`, once it has answered `count` of them. */
async function replies(chat: number, count: number): Promise<string[]> {
  const texts = async () => fake.messages(chat).map((message) => message.text);
  return until(texts, (all) => all.length >= count, 60_000);
}

describe('/start of made-up timetables', () => {
  it('costs the university a bounded number of calls and stores nothing', async () => {
    const before = (await pipeline.sim.stats()).byEndpoint.groupSchedule ?? 0;
    const started = performance.now();
    for (let index = 0; index < MADE_UP; index += 1)
      fake.userSays(CHATS[index % CHATS.length] as number, `/start g${90_000_000 + index}`);
    const answers = (await Promise.all(CHATS.map((chat) => replies(chat, MADE_UP / CHATS.length)))).flat();
    const seconds = (performance.now() - started) / 1000;
    const calls = ((await pipeline.sim.stats()).byEndpoint.groupSchedule ?? 0) - before;

    expect(answers).toHaveLength(MADE_UP);
    for (const answer of answers)
      expect(answer).toMatch(
        /^Группа 9\d{7} не найдена в расписании университета.*«Уведомления в Telegram»\.$|^Сейчас слишком много запросов новых расписаний, попробуйте через \d+ мин\.$/s,
      );
    const notFound = answers.filter((answer) => answer.includes('не найдена')).length;
    const limited = answers.length - notFound;
    // FIRST_REQUESTS_TOTAL is 120/1m: each chat's floor (3 of its 30/1m) from the whole of it, then the heavy
    // share (60) less the half that made-up ids leave (30), plus what refills meanwhile (2/s).
    expect(calls).toBeLessThanOrEqual(CHATS.length * 3 + 30 + Math.ceil(seconds * 2) + 1);
    expect(limited).toBeGreaterThan(0);
    expect(calls).toBe(notFound);
    for (const chat of CHATS) expect(await pipeline.ctx.notify.chats.ofChat(String(chat))).toEqual([]);
    console.log(
      `[figure] /start of ${MADE_UP} made-up groups from ${CHATS.length} chats: ${calls} university calls, ` +
        `${notFound} «не найдена», ${limited} «слишком много запросов», ${seconds.toFixed(1)} s`,
    );
  }, 90_000);

  it('subscribes to a known group, and at most TELEGRAM_MAX_SOURCES_PER_CHAT of them', async () => {
    const chat = 7100;
    fake.addChat(chat);
    for (const id of known.slice(0, 4)) fake.userSays(chat, `/start g${id}`);
    const answers = await replies(chat, 4);
    expect(answers.slice(0, 3).every((answer) => answer.startsWith('Вы подписаны:'))).toBe(true);
    expect(answers[3]).toBe(
      'Вы уже следите за 3 расписаниями — больше нельзя. Посмотрите подписки: /list; отпишитесь от ненужной: ' +
        '/stop и номер, например /stop 1. Потом откройте ссылку ещё раз.',
    );
    expect(await pipeline.ctx.notify.chats.ofChat(String(chat))).toHaveLength(3);
    // A source the chat follows only changes its options, full or not.
    fake.userSays(chat, `/start g${known[0]}_s1`);
    expect((await replies(chat, 5))[4]).toContain('Вы подписаны:');
  }, 60_000);
});
