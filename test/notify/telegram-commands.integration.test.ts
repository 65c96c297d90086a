/**
 * The bot's commands through grammY's own `handleUpdate`, on a timetable the refresh pipeline published from the
 * simulator. Bot API calls go to a recording transformer instead of the network: what the bot would send is
 * what is checked.
 */
import type { Update, UserFromGetMe } from 'grammy/types';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { feedOccurrences } from '../../src/feeds/build-feed.ts';
import { silentLogger } from '../../src/logger.ts';
import { createTelegramBot, type TelegramBot } from '../../src/notify/telegram/bot.ts';
import { dayLabel, withSubgroup } from '../../src/notify/telegram/words.ts';
import { botContextDeps } from '../../src/runtime/telegram.ts';
import { TelegramChats } from '../../src/store/telegram-chats.ts';
import { subgroupOf } from '../../src/timetable/event-text.ts';
import { localDate } from '../../src/timetable/zoned-time.ts';
import { type Pipeline, startPipeline } from '../jobs/helpers.ts';

const BOT_INFO: UserFromGetMe = {
  id: 42,
  is_bot: true,
  first_name: 'Расписание',
  username: 'timetable_test_bot',
  can_join_groups: true,
  can_read_all_group_messages: false,
  supports_inline_queries: false,
  can_connect_to_business: false,
  has_main_web_app: false,
  has_topics_enabled: false,
  allows_users_to_create_topics: false,
} as UserFromGetMe;

interface Call {
  method: string;
  payload: Record<string, unknown>;
}

let pipeline: Pipeline;
let chats: TelegramChats;
let telegram: TelegramBot;
let calls: Call[];
let groupSource: string;
let groupName: string;
let updateId = 1000;
const activated: string[] = [];

beforeAll(async () => {
  pipeline = await startPipeline();
  const groups = await pipeline.sim.groups();
  const group = groups.find((candidate) => candidate.entryCount >= 8);
  if (!group) throw new Error('no group with enough entries');
  groupSource = `group:${group.id}`;
  expect((await pipeline.refresh(groupSource)).state).toBe('completed');
  groupName = (await pipeline.ctx.snapshots.load(groupSource)).snapshot?.name ?? '';
  const ctx = pipeline.ctx;
  chats = new TelegramChats(ctx.redis, ctx.keys);
  telegram = createTelegramBot(
    { telegramBotToken: '42:test-token', telegramApiRoot: 'http://127.0.0.1:9' },
    {
      ...botContextDeps(ctx),
      chats,
      logger: silentLogger(),
      activate: async (source) => {
        activated.push(source);
      },
    },
    { botInfo: BOT_INFO },
  );
  telegram.bot.api.config.use(async (_previous, method, payload) => {
    calls.push({ method, payload: payload as unknown as Record<string, unknown> });
    const result =
      method === 'sendMessage' ? { message_id: calls.length, date: 0, chat: { id: 1, type: 'private' } } : true;
    return { ok: true, result } as never;
  });
});

beforeEach(() => {
  calls = [];
});

afterAll(async () => {
  await pipeline?.close();
});

/** A private message from chat `chatId`, with the entity Telegram gives a leading command. */
function message(chatId: number, text: string, id = ++updateId): Update {
  const command = /^\/\w+(@\w+)?/.exec(text)?.[0];
  return {
    update_id: id,
    message: {
      message_id: id,
      date: Math.floor(Date.now() / 1000),
      chat: { id: chatId, type: 'private', first_name: 'Студент' },
      from: { id: chatId, is_bot: false, first_name: 'Студент' },
      text,
      ...(command ? { entities: [{ type: 'bot_command', offset: 0, length: command.length }] } : {}),
    },
  } as Update;
}

/** Handles what chat `chatId` says and gives the text of the one reply. */
async function say(chatId: number, text: string): Promise<string> {
  const before = calls.length;
  await telegram.bot.handleUpdate(message(chatId, text));
  await telegram.idle();
  const sent = calls.slice(before).filter((call) => call.method === 'sendMessage');
  expect(sent).toHaveLength(1);
  expect(sent[0]?.payload.chat_id).toBe(chatId);
  // Plain text: names from the university are shown as they are, never parsed.
  expect(sent[0]?.payload.parse_mode).toBeUndefined();
  return String(sent[0]?.payload.text);
}

describe('Telegram commands', () => {
  it('subscribes with a page payload and says to what, with the options', async () => {
    const payload = await chats.linkPayload(groupSource, { subgroup: 1 });
    const reply = await say(501, `/start ${payload}`);
    expect(reply).toContain(`Вы подписаны: ${groupName} (подгруппа 1).`);
    expect(await chats.ofChat('501')).toEqual([{ source: groupSource, options: { subgroup: 1 } }]);
    expect(activated).toContain(groupSource);

    const hidden = await chats.linkPayload(groupSource, { excludeKinds: ['Лекция'] });
    expect(await say(502, `/start ${hidden}`)).toContain(`Вы подписаны: ${groupName} (без: лекция).`);
  });

  it('subscribes a personal timetable once with its one-time payload, and says when one is used or unknown', async () => {
    const { subscription } = await pipeline.ctx.subscriptions.create({
      credential: 'student-1:secret',
      name: 'Петров <Пётр> & Co_*',
      upstreamUserId: 9001,
      now: pipeline.clock.now,
    });
    const payload = await chats.oncePayload(subscription.id);
    expect(await say(503, `/start ${payload}`)).toContain('Вы подписаны: личное расписание Петров <Пётр> & Co_*.');
    expect(await chats.ofChat('503')).toEqual([{ source: subscription.source, options: {} }]);
    expect(await say(504, `/start ${payload}`)).toContain('ссылка устарела');
    expect(await chats.ofChat('504')).toEqual([]);
    expect(await say(504, '/start oAAAAAAAAAAAAAAAA')).toContain('ссылка устарела');
    expect(await say(504, '/start hello!')).toContain('Не понимаю эту ссылку');
    expect(await say(504, '/start')).toContain('/today — занятия сегодня');
  });

  it('gives a one-time payload back when the chat follows as many timetables as it may', async () => {
    const { subscription } = await pipeline.ctx.subscriptions.create({
      credential: 'student-3:secret',
      name: 'Сидорова',
      upstreamUserId: 9003,
      now: pipeline.clock.now,
    });
    const max = pipeline.ctx.config.telegramMaxSourcesPerChat;
    for (let index = 0; index < max; index += 1)
      await chats.subscribe({ chatId: '590', source: `group:${880_000 + index}`, options: {} });
    const payload = await chats.oncePayload(subscription.id);
    expect(await say(590, `/start ${payload}`)).toContain('больше нельзя');
    await chats.unsubscribe('590', 'group:880000');
    // The person freed a place and opens the same link again: it still works, once.
    expect(await say(590, `/start ${payload}`)).toContain('Вы подписаны: личное расписание Сидорова.');
    expect(await say(591, `/start ${payload}`)).toContain('ссылка устарела');
  });

  it("lists today's, tomorrow's and the week's classes as the feed shows them with the chat's options", async () => {
    const { snapshot, published } = await pipeline.ctx.snapshots.load(groupSource);
    if (!snapshot || !published) throw new Error('not published');
    // Find a day of the coming week with classes, and move the clock to it.
    const all = feedOccurrences(snapshot, published, pipeline.ctx.config, {});
    const today = localDate(pipeline.clock.now, pipeline.ctx.config.timezone);
    const busy = all.find((occurrence) => occurrence.date >= today);
    if (!busy) throw new Error('no class ahead');
    const saved = pipeline.clock.now;
    pipeline.clock.now = busy.startUtc - 3600_000;
    try {
      await chats.subscribe({ chatId: '505', source: groupSource, options: {} });
      const day = busy.date;
      const expected = all.filter((occurrence) => occurrence.date === day);
      const reply = await say(505, '/today');
      expect(reply.split('\n').slice(0, 2)).toEqual([`${groupName}, сегодня:`, dayLabel(day)]);
      for (const occurrence of expected)
        expect(reply).toContain(`${occurrence.beginTime}–${occurrence.endTime} ${occurrence.summary}`);
      expect(reply.split('\n')).toHaveLength(2 + expected.length);

      const week = await say(505, '/week');
      const weekClasses = all.filter((occurrence) => occurrence.date >= day && occurrence.date < addDays(day, 7));
      expect(week.split('\n').filter((line) => /^\d\d:\d\d–/.test(line))).toHaveLength(weekClasses.length);
      expect(week).toContain(`${groupName}, на неделю:`);
      expect(await say(505, '/tomorrow')).toMatch(
        new RegExp(`^${escapeRegExp(groupName)}(, завтра:|: завтра занятий нет\\.)`),
      );

      // A kind hidden leaves its classes out.
      const kind = snapshot.entries.find((entry) => entry.id === busy.entryId)?.kind ?? snapshot.entries[0]?.kind ?? '';
      await chats.subscribe({ chatId: '506', source: groupSource, options: { excludeKinds: [kind] } });
      const hidden = feedOccurrences(snapshot, published, pipeline.ctx.config, { excludeKinds: [kind] }).filter(
        (occurrence) => occurrence.date >= day && occurrence.date < addDays(day, 7),
      );
      expect(hidden.length).toBeLessThan(weekClasses.length);
      const filtered = await say(506, '/week');
      expect(filtered.split('\n').filter((line) => /^\d\d:\d\d–/.test(line))).toHaveLength(hidden.length);
    } finally {
      pipeline.clock.now = saved;
    }
  });

  it('marks the classes of one subgroup in /today and /week for a chat following the whole group', async () => {
    const { snapshot, published } = await pipeline.ctx.snapshots.load(groupSource);
    if (!snapshot || !published) throw new Error('not published');
    const notes = new Map(snapshot.entries.map((entry) => [entry.id, entry.note]));
    const all = feedOccurrences(snapshot, published, pipeline.ctx.config, {});
    const today = localDate(pipeline.clock.now, pipeline.ctx.config.timezone);
    const lab = all.find(
      (occurrence) => occurrence.date >= today && subgroupOf(notes.get(occurrence.entryId) ?? '') !== undefined,
    );
    if (!lab) throw new Error('no class of one subgroup ahead');
    const subgroup = subgroupOf(notes.get(lab.entryId) ?? '') as number;
    const saved = pipeline.clock.now;
    pipeline.clock.now = lab.startUtc - 3600_000;
    try {
      await chats.subscribe({ chatId: '520', source: groupSource, options: {} });
      const marked = `${lab.beginTime}–${lab.endTime} ${withSubgroup(lab.summary, notes.get(lab.entryId) ?? '', undefined)}`;
      expect(marked).toContain(`${subgroup} подгруппа)`);
      for (const command of ['/today', '/week']) {
        const reply = await say(520, command);
        expect(reply).toContain(marked);
        // Every line of a subgroup's class is marked, a shared class never is.
        const lines = reply.split('\n').filter((line) => /^\d\d:\d\d–/.test(line));
        expect(lines.filter((line) => / подгруппа[),]/.test(line)).length).toBeGreaterThan(0);
      }
      // A chat following that subgroup gets its own classes unmarked.
      await chats.subscribe({ chatId: '521', source: groupSource, options: { subgroup } });
      const own = await say(521, '/week');
      expect(own).toContain(`${lab.beginTime}–${lab.endTime} ${lab.summary}`);
      expect(own).not.toContain('подгруппа)');
    } finally {
      pipeline.clock.now = saved;
    }
  });

  it('names a personal timetable once: «личное расписание Хабибуллин…», not «личное расписание Расписание: …»', async () => {
    const { subscription } = await pipeline.ctx.subscriptions.create({
      credential: 'student-2:secret',
      name: 'Расписание: Хабибуллин Рамиль (09-351)',
      upstreamUserId: 9002,
      now: pipeline.clock.now,
    });
    const reply = await say(522, `/start ${await chats.oncePayload(subscription.id)}`);
    expect(reply).toContain('Вы подписаны: личное расписание Хабибуллин Рамиль (09-351).');
    expect(reply).not.toContain('Расписание:');
    expect(await say(522, '/list')).toContain('1. личное расписание Хабибуллин Рамиль (09-351)');
  });

  it('lists subscriptions and stops one, a numbered one, or all', async () => {
    expect(await say(507, '/list')).toContain('Подписок нет');
    expect(await say(507, '/stop')).toContain('Подписок нет');
    await chats.subscribe({ chatId: '507', source: groupSource, options: { subgroup: 2 } });
    await chats.subscribe({ chatId: '507', source: 'employee:777777', options: {} });
    const list = await say(507, '/list');
    expect(list).toContain('1. преподаватель 777777');
    expect(list).toContain(`2. ${groupName} (подгруппа 2)`);

    const asked = await say(507, '/stop');
    expect(asked).toContain('От какой подписки отписаться?');
    expect(await chats.ofChat('507')).toHaveLength(2);
    expect(await say(507, '/stop 9')).toContain('Нет подписки «9»');
    expect(await say(507, '/stop 2')).toBe(`Вы отписались: ${groupName} (подгруппа 2).`);
    expect(await chats.ofSource(groupSource)).not.toContainEqual(expect.objectContaining({ chatId: '507' }));
    // One left: a plain /stop ends it.
    expect(await say(507, '/stop')).toBe('Вы отписались: преподаватель 777777.');
    expect(await chats.ofChat('507')).toEqual([]);

    await chats.subscribe({ chatId: '508', source: groupSource, options: {} });
    await chats.subscribe({ chatId: '508', source: 'employee:777777', options: {} });
    expect(await say(508, '/stop all')).toContain('Вы отписались от всех расписаний (2)');
    expect(await chats.ofChat('508')).toEqual([]);
  });

  it('answers /help, and any other text with a short help', async () => {
    expect(await say(509, '/help')).toContain('/stop — отписаться');
    expect(await say(509, 'привет')).toMatch(/^Не понимаю\. Команды: \/today/);
    expect(await say(509, '/unknown')).toMatch(/^Не понимаю\./);
  });

  it('handles an update delivered twice once', async () => {
    const update = message(510, '/help');
    await telegram.bot.handleUpdate(update);
    await telegram.bot.handleUpdate(update);
    await telegram.idle();
    expect(calls.filter((call) => call.method === 'sendMessage')).toHaveLength(1);
  });

  it("cuts a reply at Telegram's limit", async () => {
    const { cut, MESSAGE_LIMIT } = await import('../../src/notify/telegram/commands.ts');
    const long = Array.from({ length: 400 }, (_, index) => `${index} ${'x'.repeat(20)}`).join('\n');
    const text = cut(long);
    expect(text.length).toBeLessThanOrEqual(MESSAGE_LIMIT);
    expect(text).toMatch(/…и ещё \d+ строк[аи]?$/);
    expect(cut('short')).toBe('short');
  });
});

function addDays(date: string, count: number): string {
  const at = new Date(`${date}T12:00:00Z`);
  at.setUTCDate(at.getUTCDate() + count);
  return at.toISOString().slice(0, 10);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
