/**
 * What the bot answers, in Russian: `/start <payload>` subscribes the chat to what a timetable page's link names,
 * `/today`, `/tomorrow` and `/week` list the classes of its timetables as their feeds show them (with its options),
 * `/list` and `/stop` manage its subscriptions, `/subgroup` chooses a group's subgroup, `/help` tells all this, and
 * any other text gets a short help.
 *
 * A group with subgroups: `/start` of a link without one asks which subgroup (buttons «1», «2», …, «Все»).
 * Answering is optional: a chat that does not answer follows the whole group, and every line about a class of one
 * subgroup says whose it is («Оптика (лабораторная работа, 1 подгруппа)»). A button press (a callback query whose
 * data is `sg:<source>:<n|all>`) sets the chat's subgroup for that source, confirms, and takes the question's
 * buttons away; `/subgroup` asks again.
 *
 * Replies are plain text (no parse mode): names and rooms come from the university and may hold `<`, `&`, `_` or
 * `*`, which plain text shows as they are. One reply per message (`/subgroup` asks once per group with subgroups),
 * cut at Telegram's 4096 characters.
 *
 * The MAX bot (notify/max/bot.ts) answers with the same {@link Commands}: only the messenger's name in the words
 * that send a person back to a page's button differs («Уведомления в MAX»), given as `messenger`.
 */
import { type Bot, type Context, GrammyError } from 'grammy';
import type { InlineKeyboardButton } from 'grammy/types';
import { type FeedSettings, feedOccurrences } from '../../feeds/build-feed.ts';
import { pluralRu } from '../../lib/words.ts';
import type { Logger } from '../../logger.ts';
import type { SnapshotStore } from '../../store/snapshot-store.ts';
import type { SubscriptionStore } from '../../store/subscription-store.ts';
import type { ChatSubscription, TelegramChats } from '../../store/telegram-chats.ts';
import type { NotifyOptions } from '../../timetable/notify-change.ts';
import { type SourceKey, sourceOf } from '../../timetable/source.ts';
import type { Occurrence } from '../../timetable/types.ts';
import { localDate } from '../../timetable/zoned-time.ts';
import { ChatLanes } from './chat-lanes.ts';
import { type CommandGate, TOO_OFTEN } from './flood-gate.ts';
import type { Buttons } from './sender.ts';
import type { CheckSource } from './source-check.ts';
import {
  dayLabel,
  type Messenger,
  notFoundText,
  tooManySourcesText,
  tooManyStartsText,
  withSubgroup,
} from './words.ts';

/** Telegram's limit on a message's text. */
export const MESSAGE_LIMIT = 4096;
/** Days `/week` lists, today included. */
const WEEK_DAYS = 7;

/** What the commands read and change. */
export interface CommandDeps {
  readonly chats: Pick<
    TelegramChats,
    'subscribeWithin' | 'unsubscribe' | 'ofChat' | 'resolvePayload' | 'giveBack' | 'setSubgroup'
  >;
  readonly snapshots: Pick<SnapshotStore, 'load' | 'optionValues'>;
  readonly subscriptions: Pick<SubscriptionStore, 'get'>;
  readonly config: FeedSettings & { readonly publicUrl: string; readonly telegramMaxSourcesPerChat: number };
  /**
   * Asks whether a public timetable new to the chat may be subscribed to (source-check.ts: the first-request
   * limits, and whether the university knows it); absent, every one may (tests of the commands alone).
   */
  readonly checkSource?: CheckSource | undefined;
  /**
   * Sends the messages answering one update under the rate limits change messages obey (one job of the Telegram
   * queue, named after the update: one a second per chat, the bot's overall rate, in order, retried on
   * failure); absent, they are sent at once (tests).
   */
  readonly reply?:
    | ((reply: { chatId: string; updateId: number; parts: { text: string; buttons?: Buttons }[] }) => Promise<void>)
    | undefined;
  /** Says whether a chat's command is answered (flood-gate.ts); absent, every one is. */
  readonly gate?: Pick<CommandGate, 'admit'> | undefined;
  /**
   * Keeps a subscribed source refreshed (marks it active and asks for a refresh), so that a timetable nobody
   * reads as a feed still has its changes noticed; absent in tests that need no refresh.
   */
  readonly activate?: ((source: SourceKey) => Promise<void>) | undefined;
  readonly logger: Pick<Logger, 'warn' | 'error'>;
  readonly now: () => number;
  /** The messenger whose page button the words name («Уведомления в Telegram»); default Telegram. */
  readonly messenger?: Messenger | undefined;
}

/** The commands with their descriptions, for BotFather's `/setcommands` and `setMyCommands`. */
export const COMMANDS = [
  { command: 'today', description: 'Занятия сегодня' },
  { command: 'tomorrow', description: 'Занятия завтра' },
  { command: 'week', description: 'Занятия на неделю' },
  { command: 'list', description: 'Ваши подписки' },
  { command: 'subgroup', description: 'Выбрать подгруппу' },
  { command: 'stop', description: 'Отписаться' },
  { command: 'help', description: 'Справка' },
] as const;

export const SHORT_HELP =
  'Команды: /today, /tomorrow, /week — занятия; /list — подписки; /subgroup — подгруппа; /stop — отписаться; /help — справка.';
/** No subscriptions: where to get one. */
function noneText(messenger: Messenger): string {
  return `Подписок нет. Откройте страницу расписания группы или преподавателя и нажмите «Уведомления в ${messenger}».`;
}

/** A one-time or stored payload that is gone. */
function expiredText(messenger: Messenger): string {
  return `Эта ссылка устарела или уже использована. Откройте страницу расписания ещё раз и нажмите «Уведомления в ${messenger}».`;
}

const NOT_READY =
  'Расписание ещё загружается из университета. Откройте ту же ссылку ещё раз через минуту — я подпишу вас на него.';

/** The long help. */
export function helpText(publicUrl: string, messenger: Messenger = 'Telegram'): string {
  return [
    'Я пишу, когда в расписании что-то меняется: занятие перенесли, отменили, добавили или заменили преподавателя.',
    '',
    `Подписаться: откройте расписание группы или преподавателя на ${publicUrl.replace(/\/+$/, '')} и нажмите «Уведомления в ${messenger}».`,
    '',
    '/today — занятия сегодня',
    '/tomorrow — занятия завтра',
    '/week — занятия на неделю',
    '/list — ваши подписки',
    '/subgroup — выбрать подгруппу (/subgroup 2, /subgroup все)',
    '/stop — отписаться (/stop 2 — от второй, /stop all — от всех)',
    '/help — эта справка',
  ].join('\n');
}

/** One reply: its text, and the buttons under it. */
export interface Reply {
  text: string;
  buttons?: InlineKeyboardButton[][];
}

/** The callback data of a subgroup button: `sg:<source>:<n>` or `sg:<source>:all` (at most 64 bytes). */
export const SUBGROUP_DATA = /^sg:((?:group|employee):[1-9]\d{0,15}):([1-9]\d?|all)$/;

/**
 * Registers every command, the subgroup buttons and the fallback on `bot`. Each chat's updates are answered in
 * its own lane (chat-lanes.ts); the lanes are returned so that a stopping process can wait for them.
 */
export function registerCommands(bot: Bot, deps: CommandDeps): ChatLanes {
  const commands = new Commands(deps);
  const lanes = new ChatLanes((error) => {
    // Never the message text: it may hold what a person typed.
    deps.logger.error({ err: error }, 'a Telegram command failed');
  });
  // Every message answering one update goes in one reply, in order (one job: a retry goes on where it stopped).
  const send = async (ctx: Context, replies: string | Reply | Reply[]) => {
    const parts = (Array.isArray(replies) ? replies : [replies]).map((reply) =>
      typeof reply === 'string' ? { text: cut(reply) } : { ...reply, text: cut(reply.text) },
    );
    const chatId = ctx.chat?.id;
    if (deps.reply !== undefined && chatId !== undefined) {
      await deps.reply({
        chatId: String(chatId),
        updateId: ctx.update.update_id,
        parts: parts.map(({ text, buttons }) => ({ text, ...(buttons ? { buttons: callbacks(buttons) } : {}) })),
      });
      return;
    }
    for (const { text, buttons } of parts)
      await ctx.reply(text, {
        link_preview_options: { is_disabled: true },
        ...(buttons === undefined ? {} : { reply_markup: { inline_keyboard: buttons } }),
      });
  };
  // The gate is asked before the chat's lane: a flood is cut before it queues anything.
  const admit = async (chatId: string) => (deps.gate === undefined ? 'answer' : await deps.gate.admit(chatId));
  const answer =
    (work: (ctx: Context, chatId: string) => Promise<string | Reply | Reply[]>) => async (ctx: Context) => {
      const chatId = ctx.chat?.id;
      if (chatId === undefined) return;
      const verdict = await admit(String(chatId));
      if (verdict === 'ignore') return;
      await lanes.run(String(chatId), async () => {
        if (verdict === 'warn') return send(ctx, TOO_OFTEN);
        await send(ctx, await work(ctx, String(chatId)));
      });
    };
  bot.command(
    'start',
    answer((ctx, chatId) => commands.start(chatId, String(ctx.match ?? '').trim())),
  );
  bot.command(
    'help',
    answer(async () => helpText(deps.config.publicUrl)),
  );
  bot.command(
    'today',
    answer((_ctx, chatId) => commands.classes(chatId, 0, 1)),
  );
  bot.command(
    'tomorrow',
    answer((_ctx, chatId) => commands.classes(chatId, 1, 1)),
  );
  bot.command(
    'week',
    answer((_ctx, chatId) => commands.classes(chatId, 0, WEEK_DAYS)),
  );
  bot.command(
    'list',
    answer((_ctx, chatId) => commands.list(chatId)),
  );
  bot.command(
    'stop',
    answer((ctx, chatId) => commands.stop(chatId, String(ctx.match ?? '').trim())),
  );
  bot.command(
    'subgroup',
    answer((ctx, chatId) => commands.subgroup(chatId, String(ctx.match ?? '').trim())),
  );
  // A button press is a command too: the same gate (each press costs Telegram calls: its answer, a reply, an
  // edit), and the chat's lane. A press beyond the gate is not answered (its button stops spinning on its own);
  // the first one beyond it hears «Слишком часто» on the button.
  bot.on('callback_query:data', async (ctx) => {
    const chatId = ctx.chat?.id;
    if (chatId === undefined) return;
    const verdict = await admit(String(chatId));
    if (verdict === 'ignore') return;
    await lanes.run(String(chatId), async () => {
      if (verdict === 'warn') {
        await ctx.answerCallbackQuery({ text: TOO_OFTEN });
        return;
      }
      const match = SUBGROUP_DATA.exec(ctx.callbackQuery.data);
      if (match === null) {
        await ctx.answerCallbackQuery({ text: 'Эта кнопка больше не работает.' });
        return;
      }
      const [, source, choice] = match as unknown as [string, SourceKey, string];
      const confirmed = await commands.chooseSubgroup(
        String(chatId),
        source,
        choice === 'all' ? undefined : Number(choice),
      );
      // The press is answered first (the button stops spinning), then the chat reads what changed, and the
      // question's buttons go: the choice is made (/subgroup asks again). Two quick presses both reach here; the
      // second one's removal finds them gone already ("message is not modified"), and an old message may no
      // longer be editable: either way the choice stands, so such a refusal is let go.
      await ctx.answerCallbackQuery({ text: confirmed.short });
      await send(ctx, confirmed.text);
      await ctx.editMessageReplyMarkup().catch((error: unknown) => {
        if (!(error instanceof GrammyError && error.error_code === 400)) throw error;
      });
    });
  });
  bot.on(
    'message',
    answer(async () => `Не понимаю. ${SHORT_HELP}`),
  );
  return lanes;
}

/** The commands' answers, each the text of one reply. */
export class Commands {
  private readonly deps: CommandDeps;
  private readonly messenger: Messenger;

  constructor(deps: CommandDeps) {
    this.deps = deps;
    this.messenger = deps.messenger ?? 'Telegram';
  }

  /**
   * `/start [payload]`: subscribes the chat to what the payload names; without one, the help. A group with
   * subgroups subscribed without one gets the subgroup question under the answer.
   */
  async start(chatId: string, payload: string): Promise<string | Reply> {
    if (payload === '') return helpText(this.deps.config.publicUrl, this.messenger);
    const resolved = await this.deps.chats.resolvePayload(payload);
    if (resolved.kind === 'expired') return expiredText(this.messenger);
    if (resolved.kind === 'invalid') return `Не понимаю эту ссылку. ${SHORT_HELP}`;
    const { source, options } = resolved;
    const personal = sourceOf(source).kind === 'personal';
    const subscription = personal ? await this.deps.subscriptions.get(sourceOf(source).id) : undefined;
    // A personal timetable deleted after its link was made is gone.
    if (personal && subscription === undefined) return expiredText(this.messenger);
    // A personal page's one-time code that subscribed nobody is given back: the person frees a place (/stop)
    // and opens the same link again.
    const refused = await this.refuseStart(chatId, source);
    if (refused !== undefined) {
      if (resolved.once !== undefined) await this.deps.chats.giveBack(resolved.once);
      return refused;
    }
    const max = this.deps.config.telegramMaxSourcesPerChat;
    if ((await this.deps.chats.subscribeWithin({ chatId, source, options }, max)) === 'full') {
      if (resolved.once !== undefined) await this.deps.chats.giveBack(resolved.once);
      return tooManySourcesText(max);
    }
    if (this.deps.activate)
      await this.deps.activate(source).catch((error: unknown) => {
        this.deps.logger.warn({ err: error, source }, 'could not activate a timetable a chat subscribed to');
      });
    const shown = personal ? (subscription?.feedOptions ?? {}) : options;
    const what = await this.title({ source, options: shown });
    const text = [
      `Вы подписаны: ${what}.`,
      'Я напишу, если занятие перенесут, отменят, добавят или заменят преподавателя.',
      '/today — занятия сегодня, /list — подписки, /stop — отписаться.',
    ].join('\n');
    const subgroups = options.subgroup === undefined ? await this.subgroupsOf(source) : [];
    if (subgroups.length === 0) return text;
    return { text: `${text}\n\n${SUBGROUP_QUESTION}`, buttons: subgroupButtons(source, subgroups) };
  }

  /**
   * Why `/start` of `source` may not subscribe the chat, or undefined when it may: the chat follows as many
   * timetables as it may already, or (a public one new to the chat) the university does not know it, the
   * first-request limits are spent, or its first fetch has not ended. Nothing is stored in any of these cases.
   */
  private async refuseStart(chatId: string, source: SourceKey): Promise<string | undefined> {
    const followed = await this.deps.chats.ofChat(chatId);
    if (followed.some((each) => each.source === source)) return undefined;
    const max = this.deps.config.telegramMaxSourcesPerChat;
    if (followed.length >= max) return tooManySourcesText(max);
    if (sourceOf(source).kind === 'personal' || this.deps.checkSource === undefined) return undefined;
    const check = await this.deps.checkSource(source, chatId);
    if (check.kind === 'not-found') return notFoundText(source, this.deps.config.publicUrl, this.messenger);
    if (check.kind === 'limited') return tooManyStartsText(check.retryAfterMs);
    if (check.kind === 'not-ready') return NOT_READY;
    return undefined;
  }

  /**
   * `/subgroup`: the question with buttons for each subscribed group that has subgroups; `/subgroup 2` or
   * `/subgroup все` sets it at once when the chat follows one such group.
   */
  async subgroup(chatId: string, argument: string): Promise<Reply[]> {
    const groups: { subscription: ChatSubscription; subgroups: number[] }[] = [];
    for (const subscription of await this.deps.chats.ofChat(chatId)) {
      const subgroups = await this.subgroupsOf(subscription.source);
      if (subgroups.length > 0) groups.push({ subscription, subgroups });
    }
    if (groups.length === 0)
      return [{ text: 'Подгруппу выбирают у группы с подгруппами, а в ваших подписках таких нет. /list — подписки.' }];
    const word = argument.toLocaleLowerCase('ru');
    const only = groups.length === 1 ? groups[0] : undefined;
    if (only !== undefined && (word === 'все' || word === 'всё' || word === 'all'))
      return [{ text: (await this.chooseSubgroup(chatId, only.subscription.source, undefined)).text }];
    if (only?.subgroups.includes(Number(word)))
      return [{ text: (await this.chooseSubgroup(chatId, only.subscription.source, Number(word))).text }];
    const head = argument === '' ? '' : `Не понимаю «${argument}». `;
    const replies: Reply[] = [];
    for (const { subscription, subgroups } of groups) {
      const now = subscription.options.subgroup;
      const current = now === undefined ? 'сейчас — все подгруппы' : `сейчас — ${now} подгруппа`;
      replies.push({
        text: `${head}${await this.title({ source: subscription.source, options: {} })}: ${current}.\n${SUBGROUP_QUESTION}`,
        buttons: subgroupButtons(subscription.source, subgroups),
      });
    }
    return replies;
  }

  /** A subgroup button pressed (or `/subgroup <n>`): sets the chat's subgroup of `source`; the words to confirm. */
  async chooseSubgroup(
    chatId: string,
    source: SourceKey,
    subgroup: number | undefined,
  ): Promise<{ text: string; short: string }> {
    const known = await this.subgroupsOf(source);
    if (subgroup !== undefined && !known.includes(subgroup))
      return {
        short: 'Такой подгруппы нет',
        text: `В этой группе нет ${subgroup} подгруппы. /subgroup — выбрать снова.`,
      };
    if (!(await this.deps.chats.setSubgroup(chatId, source, subgroup)))
      return {
        short: 'Вы не подписаны на эту группу',
        text: `Вы не подписаны на эту группу. Откройте её расписание и нажмите «Уведомления в ${this.messenger}».`,
      };
    const name = await this.title({ source, options: {} });
    if (subgroup === undefined)
      return {
        short: 'Все подгруппы',
        text: `Готово: ${name}, все подгруппы. Занятия одной подгруппы я помечаю: «(1 подгруппа)». Сменить: /subgroup.`,
      };
    return {
      short: `${subgroup} подгруппа`,
      text: `Готово: ${name}, ${subgroup} подгруппа. Пишу о её занятиях и общих. Сменить: /subgroup.`,
    };
  }

  /** The subgroups of a public group (those its timetables have had); none for a teacher or a personal one. */
  private async subgroupsOf(source: SourceKey): Promise<number[]> {
    if (sourceOf(source).kind !== 'group') return [];
    return (await this.deps.snapshots.optionValues(source)).subgroups;
  }

  /** `/list`: the chat's subscriptions, numbered as `/stop` takes them. */
  async list(chatId: string): Promise<string> {
    const subscriptions = await this.deps.chats.ofChat(chatId);
    if (subscriptions.length === 0) return noneText(this.messenger);
    const lines = await this.numbered(subscriptions);
    return ['Ваши подписки:', ...lines, '', 'Отписаться: /stop и номер, например /stop 1.'].join('\n');
  }

  /** `/stop`, `/stop <n>` or `/stop all`. */
  async stop(chatId: string, argument: string): Promise<string> {
    const subscriptions = await this.deps.chats.ofChat(chatId);
    if (subscriptions.length === 0) return noneText(this.messenger);
    const word = argument.toLocaleLowerCase('ru');
    if (word === 'all' || word === 'все' || word === 'всё') {
      const left = await this.deps.chats.unsubscribe(chatId);
      return `Вы отписались от всех расписаний (${left.length}). Подписаться снова можно со страницы расписания.`;
    }
    let chosen: ChatSubscription | undefined;
    if (argument === '' && subscriptions.length === 1) chosen = subscriptions[0];
    else if (/^\d{1,3}$/.test(argument)) chosen = subscriptions[Number(argument) - 1];
    if (chosen === undefined) {
      const lines = await this.numbered(subscriptions);
      const head = argument === '' ? 'От какой подписки отписаться?' : `Нет подписки «${argument}».`;
      return [head, ...lines, '', 'Отправьте /stop и номер, например /stop 1, или /stop all — от всех.'].join('\n');
    }
    await this.deps.chats.unsubscribe(chatId, chosen.source);
    return `Вы отписались: ${await this.title(chosen)}.`;
  }

  /** `/today` (from 0, 1 day), `/tomorrow` (1, 1), `/week` (0, 7): the classes of each subscribed timetable. */
  async classes(chatId: string, fromDay: number, days: number): Promise<string> {
    const subscriptions = await this.deps.chats.ofChat(chatId);
    if (subscriptions.length === 0) return noneText(this.messenger);
    const today = localDate(this.deps.now(), this.deps.config.timezone);
    const first = addDays(today, fromDay);
    const last = addDays(first, days - 1);
    const when = days === 1 ? (fromDay === 0 ? 'сегодня' : 'завтра') : 'на неделю';
    const blocks: string[] = [];
    for (const subscription of subscriptions) blocks.push(await this.classesOf(subscription, first, last, when));
    return blocks.join('\n\n');
  }

  private async classesOf(subscription: ChatSubscription, first: string, last: string, when: string): Promise<string> {
    const { snapshot, published } = await this.deps.snapshots.load(subscription.source);
    const options = await this.optionsOf(subscription);
    const name = snapshot?.name ?? fallbackName(subscription.source);
    if (snapshot === undefined || published === undefined) return `${name}: расписание ещё не загружено.`;
    const shown = feedOccurrences(snapshot, published, this.deps.config, options).filter(
      (occurrence) => occurrence.date >= first && occurrence.date <= last,
    );
    if (shown.length === 0) return `${name}: ${when} занятий нет.`;
    const notes = new Map(snapshot.entries.map((entry) => [entry.id, entry.note]));
    const lines = [`${name}, ${when}:`];
    let day = '';
    for (const occurrence of shown) {
      if (days(first, last) > 1 && occurrence.date !== day) {
        day = occurrence.date;
        lines.push('', dayLabel(day));
      }
      lines.push(classLine(occurrence, notes.get(occurrence.entryId) ?? '', options.subgroup));
    }
    if (days(first, last) === 1) lines.splice(1, 0, dayLabel(first));
    return lines.join('\n');
  }

  /** The options a subscription is shown with: a personal one's are its subscription's, as saved now. */
  private async optionsOf(subscription: ChatSubscription): Promise<NotifyOptions> {
    const { kind, id } = sourceOf(subscription.source);
    if (kind !== 'personal') return subscription.options;
    const saved = (await this.deps.subscriptions.get(id))?.feedOptions ?? {};
    return {
      ...(saved.subgroup === undefined ? {} : { subgroup: saved.subgroup }),
      ...(saved.excludeKinds === undefined ? {} : { excludeKinds: saved.excludeKinds }),
    };
  }

  private async numbered(subscriptions: readonly ChatSubscription[]): Promise<string[]> {
    const lines: string[] = [];
    for (const [index, subscription] of subscriptions.entries()) {
      const options = await this.optionsOf(subscription);
      lines.push(`${index + 1}. ${await this.title({ source: subscription.source, options })}`);
    }
    return lines;
  }

  /** "ИВТ-21 (подгруппа 1, без: лекция)". */
  private async title(subscription: ChatSubscription): Promise<string> {
    const { snapshot } = await this.deps.snapshots.load(subscription.source);
    let name = snapshot?.name;
    if (name === undefined && sourceOf(subscription.source).kind === 'personal')
      name = (await this.deps.subscriptions.get(sourceOf(subscription.source).id))?.name;
    const described = describeOptions(subscription.options);
    const suffix = described === '' ? '' : ` (${described})`;
    if (sourceOf(subscription.source).kind !== 'personal')
      return `${name ?? fallbackName(subscription.source)}${suffix}`;
    // A personal timetable's name is its calendar's, "Расписание: Иванова Мария (ИВТ-21)": after «личное
    // расписание» only the person is said, not «Расписание» again.
    const person = (name ?? '').replace(/^(?:Расписание:\s*|Моё расписание$)/u, '').trim();
    return `личное расписание${person === '' ? '' : ` ${person}`}${suffix}`;
  }
}

/** "подгруппа 1, без: лекция, практика", or empty. */
export function describeOptions(options: NotifyOptions): string {
  const parts: string[] = [];
  if (options.subgroup !== undefined) parts.push(`подгруппа ${options.subgroup}`);
  if (options.excludeKinds !== undefined && options.excludeKinds.length > 0)
    parts.push(`без: ${options.excludeKinds.join(', ')}`);
  return parts.join(', ');
}

/** A timetable's name before its first fetch. */
function fallbackName(source: SourceKey): string {
  const { kind, id } = sourceOf(source);
  return kind === 'group' ? `группа ${id}` : kind === 'employee' ? `преподаватель ${id}` : 'личное расписание';
}

/**
 * "10:10–11:40 Физика (практика), ауд. 1008", a cancelled class marked, and a class of one subgroup saying so
 * ("Физика (практика, 1 подгруппа)") unless the chat follows one subgroup (`followed`).
 */
function classLine(occurrence: Occurrence, note: string, followed: number | undefined): string {
  const where = occurrence.location === '' ? '' : `, ${occurrence.location}`;
  const cancelled = occurrence.status === 'CANCELLED' ? ' — отменено' : '';
  const title = withSubgroup(occurrence.summary, note, followed);
  return `${occurrence.beginTime}–${occurrence.endTime} ${title}${where}${cancelled}`;
}

const SUBGROUP_QUESTION =
  'Из какой вы подгруппы? Выберите — буду писать о её занятиях и общих. Можно не отвечать: тогда пишу обо всех ' +
  'и помечаю, чьё занятие.';

/** The buttons «1», «2», …, «Все» of a group's subgroups, in one row. */
function subgroupButtons(source: SourceKey, subgroups: readonly number[]): InlineKeyboardButton[][] {
  return [
    [
      ...subgroups.map((subgroup) => ({ text: String(subgroup), callback_data: `sg:${source}:${subgroup}` })),
      { text: 'Все', callback_data: `sg:${source}:all` },
    ],
  ];
}

function addDays(date: string, count: number): string {
  const at = new Date(`${date}T12:00:00Z`);
  at.setUTCDate(at.getUTCDate() + count);
  return at.toISOString().slice(0, 10);
}

function days(first: string, last: string): number {
  return Math.round((Date.parse(`${last}T12:00:00Z`) - Date.parse(`${first}T12:00:00Z`)) / 86_400_000) + 1;
}

/** The buttons of a reply as a job carries them (the bot makes only callback buttons). */
export function callbacks(rows: InlineKeyboardButton[][]): Buttons {
  return rows.map((row) =>
    row.map((button) => ({ text: button.text, callback_data: 'callback_data' in button ? button.callback_data : '' })),
  );
}

/** Text cut to Telegram's limit (or `limit`: MAX's is 4000), saying how many lines were left out. */
export function cut(text: string, limit = MESSAGE_LIMIT): string {
  if (text.length <= limit) return text;
  const lines = text.split('\n');
  const kept: string[] = [];
  let length = 0;
  for (const [index, line] of lines.entries()) {
    const left = lines.length - index;
    const tail = `\n…и ещё ${left} ${pluralRu(left, ['строка', 'строки', 'строк'])}`;
    if (length + line.length + 1 + tail.length > limit) return `${kept.join('\n')}${tail}`;
    kept.push(line);
    length += line.length + 1;
  }
  return kept.join('\n');
}
