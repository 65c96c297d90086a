/**
 * The bot's commands over MAX, through the fake MAX Bot API with the bot polling as a worker does, on timetables
 * the refresh pipeline published from the simulator: opening a page's link (`bot_started` with its payload)
 * subscribes the dialog's `chat_id` (not the person's `user_id`) and asks a group with subgroups which one, with
 * buttons whose press is answered, sets it and takes the buttons away (also a press MAX sends without the
 * dialog's id); `/today`, `/list`, `/stop`, `/subgroup 2`, `/help` as in Telegram with «Уведомления в MAX»;
 * stopping the bot or deleting the dialog unsubscribes and forgets which dialog the person wrote from (a press
 * without the dialog is then answered that the button no longer works); a copy of an update is answered once; a
 * flood is cut.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { createMaxBot, type MaxBot } from '../../src/notify/max/bot.ts';
import { MaxClient } from '../../src/notify/max/client.ts';
import { MaxPoller } from '../../src/notify/max/poller.ts';
import { CommandGate } from '../../src/notify/telegram/flood-gate.ts';
import { botContextDeps } from '../../src/runtime/telegram.ts';
import { MaxChats } from '../../src/store/max-chats.ts';
import { subgroupOf } from '../../src/timetable/event-text.ts';
import { type FakeMax, startFakeMax } from '../../testkit/fake-max/index.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { type Pipeline, startPipeline } from '../jobs/helpers.ts';

let pipeline: Pipeline;
let max: FakeMax;
let client: MaxClient;
let bot: MaxBot;
let poller: MaxPoller;
let chats: MaxChats;
let groupId: number;
let groupName: string;
const activated: string[] = [];
let gated = false;

beforeAll(async () => {
  pipeline = await startPipeline();
  max = await startFakeMax({ chatRate: 0 });
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
  chats = new MaxChats(ctx.redis, ctx.keys);
  client = new MaxClient({ token: max.token, apiRoot: max.apiRoot });
  const gate = new CommandGate(
    ctx.redis,
    { bucket: (chatId) => ctx.keys.rateLimit(`max-commands:${chatId}`), warned: ctx.keys.mxFloodWarned },
    3,
  );
  bot = createMaxBot(
    { maxBotToken: max.token },
    {
      ...botContextDeps(ctx),
      chats,
      keys: ctx.keys,
      client,
      logger: silentLogger(),
      reply: undefined,
      // The gate of MAX's own keys, asked only in the flood's test: the others send commands quicker than a person.
      gate: { admit: (chatId) => (gated ? gate.admit(chatId) : Promise.resolve('answer' as const)) },
      activate: async (source) => {
        activated.push(source);
      },
    },
  );
  poller = new MaxPoller({
    bot,
    client,
    redis: ctx.redis,
    keys: { lock: ctx.keys.mxPollLock, marker: ctx.keys.mxPollMarker('commands') },
    lockMs: 3_000,
    logger: silentLogger(),
    timeoutSeconds: 5,
  });
  poller.start();
});

afterAll(async () => {
  await poller?.stop();
  await client?.close();
  await max?.close();
  await pipeline?.close();
});

/** The bot's messages to a dialog, oldest first. */
function texts(chatId: string): string[] {
  return max.messages(chatId).map((message) => message.text);
}

/** Waits for the bot's next message to the person's dialog after `action`. */
async function answered(userId: string, action: () => unknown): Promise<string> {
  const chatId = max.chatIdOf(userId);
  const before = chatId === undefined ? 0 : texts(chatId).length;
  action();
  const dialog = max.chatIdOf(userId) as string;
  await waitUntil(() => texts(dialog).length > before, 'the bot to answer', 10_000);
  return texts(dialog).at(-1) as string;
}

describe('MAX bot commands', () => {
  it("subscribes the dialog of a page link's start, and asks for the subgroup with buttons", async () => {
    const answer = await answered('9001', () => max.userStarts('9001', `g${groupId}`));
    expect(answer).toContain(`Вы подписаны: ${groupName}.`);
    expect(answer).toContain('Из какой вы подгруппы?');
    const chatId = max.chatIdOf('9001') as string;
    expect(chatId).not.toBe('9001');
    expect(await chats.ofChat(chatId)).toEqual([{ source: `group:${groupId}`, options: {} }]);
    expect(await chats.ofChat('9001')).toEqual([]);
    expect(activated).toContain(`group:${groupId}`);
    const question = max.messages(chatId).at(-1);
    expect(question?.buttons?.[0]?.map((button) => button.text)).toContain('Все');
    expect(question?.buttons?.[0]?.[1]).toEqual({ type: 'callback', text: '2', payload: `sg:group:${groupId}:2` });
  });

  it('takes a press: answered, the subgroup set, the buttons gone, the dialog told', async () => {
    const chatId = max.chatIdOf('9001') as string;
    const question = max.messages(chatId).at(-1);
    const told = await answered('9001', () => max.userPresses('9001', question?.mid ?? '', `sg:group:${groupId}:2`));
    expect(told).toContain(`Готово: ${groupName}, 2 подгруппа.`);
    expect(await chats.ofChat(chatId)).toEqual([{ source: `group:${groupId}`, options: { subgroup: 2 } }]);
    expect(max.answers().at(-1)).toMatchObject({ notification: '2 подгруппа' });
    expect(max.messages(chatId).find((message) => message.mid === question?.mid)?.buttons).toBeUndefined();
  });

  it("takes a press MAX sends without the dialog's id, by the dialog its person wrote from", async () => {
    const chatId = max.chatIdOf('9001') as string;
    const asked = await answered('9001', () => max.userSays('9001', '/subgroup'));
    expect(asked).toContain('сейчас — 2 подгруппа');
    const question = max.messages(chatId).at(-1);
    const told = await answered('9001', () =>
      max.userPresses('9001', question?.mid ?? '', `sg:group:${groupId}:all`, { withoutChatId: true }),
    );
    expect(told).toContain('все подгруппы');
    expect(await chats.ofChat(chatId)).toEqual([{ source: `group:${groupId}`, options: {} }]);
  });

  it('answers /today, /list, /subgroup 2 and /help as the Telegram bot does, naming MAX', async () => {
    expect(await answered('9001', () => max.userSays('9001', '/today'))).toContain(groupName);
    expect(await answered('9001', () => max.userSays('9001', '/list'))).toContain(`1. ${groupName}`);
    expect(await answered('9001', () => max.userSays('9001', '/subgroup 2'))).toContain('2 подгруппа');
    const help = await answered('9001', () => max.userSays('9001', '/help'));
    expect(help).toContain('/today — занятия сегодня');
    expect(help).toContain('«Уведомления в MAX»');
    expect(help).not.toContain('Telegram');
    expect(await answered('9001', () => max.userSays('9001', 'привет'))).toContain('Не понимаю.');
    expect(await answered('9002', () => max.userStarts('9002'))).toContain('«Уведомления в MAX»');
    expect(await answered('9002', () => max.userSays('9002', '/list'))).toContain('«Уведомления в MAX»');
  });

  it('/stop ends a subscription; stopping the bot or deleting the dialog ends them all, and forgets the dialog', async () => {
    const { redis, keys } = pipeline.ctx;
    const chatId = max.chatIdOf('9001') as string;
    expect(await answered('9001', () => max.userSays('9001', '/stop'))).toContain('Вы отписались');
    expect(await chats.ofChat(chatId)).toEqual([]);
    await answered('9001', () => max.userStarts('9001', `g${groupId}_s1`));
    expect(await chats.ofChat(chatId)).toEqual([{ source: `group:${groupId}`, options: { subgroup: 1 } }]);
    // The dialog a person writes from is remembered for 90 days, for presses that come without it.
    expect(await redis.get(keys.mxUserChat('9001'))).toBe(chatId);
    expect(await redis.ttl(keys.mxUserChat('9001'))).toBeGreaterThan(89 * 86_400);
    const { mid } = await client.send(chatId, {
      text: 'Из какой вы подгруппы?',
      buttons: [[{ text: '1', payload: `sg:group:${groupId}:1` }]],
    });
    max.userStops('9001');
    await waitUntil(async () => (await chats.ofChat(chatId)).length === 0, 'bot_stopped to unsubscribe', 10_000);
    expect(await redis.exists(keys.mxUserChat('9001'))).toBe(0);
    // So a press that comes without the dialog's id can do nothing now, and is told so.
    const callbackId = max.userPresses('9001', mid, `sg:group:${groupId}:1`, { withoutChatId: true });
    await waitUntil(() => max.answers().some((each) => each.callbackId === callbackId), 'the press answered', 10_000);
    expect(max.answers().find((each) => each.callbackId === callbackId)?.notification).toBe(
      'Эта кнопка больше не работает.',
    );
    await answered('9003', () => max.userStarts('9003', `g${groupId}`));
    const other = max.chatIdOf('9003') as string;
    expect(await redis.get(keys.mxUserChat('9003'))).toBe(other);
    max.userRemovesDialog('9003');
    await waitUntil(async () => (await chats.ofChat(other)).length === 0, 'dialog_removed to unsubscribe', 10_000);
    expect(await redis.exists(keys.mxUserChat('9003'))).toBe(0);
  });

  it('answers a copy of an update once', async () => {
    const chatId = max.chatIdOf('9002') as string;
    const before = texts(chatId).length;
    const update = {
      update_type: 'message_created',
      timestamp: Date.now(),
      message: {
        recipient: { chat_id: Number(chatId), chat_type: 'dialog' },
        timestamp: Date.now(),
        body: { mid: 'mid.copy-of-one', seq: 1, text: '/help' },
        sender: { user_id: 9002, name: 'Пользователь', is_bot: false },
      },
    };
    await bot.handle(update);
    await bot.handle(structuredClone(update));
    await bot.idle();
    await bot.handle(update);
    await bot.idle();
    expect(texts(chatId).length).toBe(before + 1);
  });

  it('cuts a flood of commands: three answered, one «Слишком часто», the rest not', async () => {
    gated = true;
    const chatId = max.chatIdOf('9002') as string;
    const before = texts(chatId).length;
    for (let index = 0; index < 8; index += 1) max.userSays('9002', '/help');
    await waitUntil(() => texts(chatId).length >= before + 4, 'the answers', 10_000);
    await new Promise((wake) => setTimeout(wake, 500));
    const after = texts(chatId).slice(before);
    expect(after).toHaveLength(4);
    expect(after.filter((text) => text.startsWith('Слишком часто'))).toHaveLength(1);
  });
});
