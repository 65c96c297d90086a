/**
 * The subgroup question through the fake Bot API, with the bot polling as a worker does: `/start` of a group that
 * has subgroups answers with buttons «1», «2», «Все»; a press (a callback query) is answered, sets the chat's
 * subgroup and confirms in Russian; «Все» goes back to the whole group; `/subgroup 1` sets it from a command.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { createTelegramBot } from '../../src/notify/telegram/bot.ts';
import { TelegramPoller } from '../../src/notify/telegram/poller.ts';
import { botContextDeps } from '../../src/runtime/telegram.ts';
import { TelegramChats } from '../../src/store/telegram-chats.ts';
import { subgroupOf } from '../../src/timetable/event-text.ts';
import { type FakeTelegram, startFakeTelegram } from '../../testkit/fake-telegram/index.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { type Pipeline, startPipeline } from '../jobs/helpers.ts';

let pipeline: Pipeline;
let fake: FakeTelegram;
let poller: TelegramPoller;
let chats: TelegramChats;
let groupId: number;
let groupName: string;

beforeAll(async () => {
  pipeline = await startPipeline();
  fake = await startFakeTelegram();
  for (const group of await pipeline.sim.groups()) {
    const { entries } = await pipeline.ctx.upstream.groupSchedule(group.id);
    if (entries.some((entry) => subgroupOf(entry.note) === 2)) {
      groupId = group.id;
      break;
    }
  }
  if (groupId === undefined) throw new Error('no group with subgroups in the simulator');
  expect((await pipeline.refresh(`group:${groupId}`)).state).toBe('completed');
  groupName = (await pipeline.ctx.snapshots.load(`group:${groupId}`)).snapshot?.name ?? '';
  const { ctx } = pipeline;
  chats = new TelegramChats(ctx.redis, ctx.keys);
  const telegram = createTelegramBot(
    { telegramBotToken: fake.token, telegramApiRoot: fake.apiRoot },
    {
      ...botContextDeps(ctx),
      chats,
      logger: silentLogger(),
    },
  );
  poller = new TelegramPoller({
    telegram,
    redis: ctx.redis,
    lockKey: ctx.keys.tgPollLock,
    lockMs: 3_000,
    logger: silentLogger(),
  });
  poller.start();
});

afterAll(async () => {
  await poller?.stop();
  await fake?.close();
  await pipeline?.close();
});

/** The bot's messages to `chatId` once there are `count`. */
async function messages(chatId: number, count: number) {
  await waitUntil(() => fake.messages(chatId).length >= count, `${count} messages to chat ${chatId}`);
  return fake.messages(chatId);
}

describe('the subgroup question', () => {
  it('asks with buttons on /start, and a press sets the subgroup and confirms', async () => {
    const source = `group:${groupId}`;
    fake.userSays(601, `/start g${groupId}`);
    const [question] = await messages(601, 1);
    expect(question?.text).toContain(`Вы подписаны: ${groupName}.`);
    expect(question?.text).toContain('Из какой вы подгруппы?');
    expect(question?.text).toContain('Можно не отвечать');
    const buttons = question?.inlineKeyboard?.flat() ?? [];
    expect(buttons.map((button) => button.text)).toEqual(['1', '2', 'Все']);
    expect(buttons.map((button) => button.callback_data)).toEqual([
      `sg:${source}:1`,
      `sg:${source}:2`,
      `sg:${source}:all`,
    ]);
    expect(await chats.ofChat('601')).toEqual([{ source, options: {} }]);

    const { queryId } = fake.userPresses(601, question?.messageId as number, `sg:${source}:2`);
    const confirmed = await messages(601, 2);
    expect(confirmed[1]?.text).toBe(
      `Готово: ${groupName}, 2 подгруппа. Пишу о её занятиях и общих. Сменить: /subgroup.`,
    );
    expect(fake.callbackAnswers()).toContainEqual(expect.objectContaining({ queryId, text: '2 подгруппа' }));
    expect(await chats.ofChat('601')).toEqual([{ source, options: { subgroup: 2 } }]);

    // The question's buttons are gone: the choice is made.
    await waitUntil(() => fake.messages(601)[0]?.inlineKeyboard === undefined, 'the question without buttons');

    // A command changes it later, and /subgroup asks again, saying what it is now.
    fake.userSays(601, '/subgroup 1');
    expect((await messages(601, 3))[2]?.text).toContain(`Готово: ${groupName}, 1 подгруппа.`);
    expect(await chats.ofChat('601')).toEqual([{ source, options: { subgroup: 1 } }]);
    fake.userSays(601, '/subgroup');
    const asked = (await messages(601, 4))[3];
    expect(asked?.text).toContain('сейчас — 1 подгруппа');
    expect(asked?.inlineKeyboard?.flat().map((button) => button.text)).toEqual(['1', '2', 'Все']);

    // «Все»: the whole group again, its subgroups' classes marked.
    fake.userPresses(601, asked?.messageId as number, `sg:${source}:all`);
    expect((await messages(601, 5))[4]?.text).toContain('все подгруппы');
    expect(await chats.ofChat('601')).toEqual([{ source, options: {} }]);
    await waitUntil(() => fake.messages(601)[3]?.inlineKeyboard === undefined, 'the second question without buttons');
  });

  it('does not ask when the link named a subgroup already', async () => {
    fake.userSays(602, `/start g${groupId}_s1`);
    const [reply] = await messages(602, 1);
    expect(reply?.text).toContain(`Вы подписаны: ${groupName} (подгруппа 1).`);
    expect(reply?.inlineKeyboard).toBeUndefined();
  });
});
