/**
 * What the bot answers, in Russian: `/start <payload>` subscribes the chat to what a timetable page's link names,
 * `/today`, `/tomorrow` and `/week` list the classes of its timetables as their feeds show them (with its options),
 * `/list` and `/stop` manage its subscriptions, `/help` tells all this, and any other text gets a short help.
 *
 * Replies are plain text (no parse mode): names and rooms come from the university and may hold `<`, `&`, `_` or
 * `*`, which plain text shows as they are. One reply per message, cut at Telegram's 4096 characters.
 */
import type { Bot, Context } from 'grammy';
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

/** Telegram's limit on a message's text. */
export const MESSAGE_LIMIT = 4096;
/** Days `/week` lists, today included. */
const WEEK_DAYS = 7;

/** What the commands read and change. */
export interface CommandDeps {
  readonly chats: Pick<TelegramChats, 'subscribe' | 'unsubscribe' | 'ofChat' | 'resolvePayload'>;
  readonly snapshots: Pick<SnapshotStore, 'load'>;
  readonly subscriptions: Pick<SubscriptionStore, 'get'>;
  readonly config: FeedSettings & { readonly publicUrl: string };
  /**
   * Keeps a subscribed source refreshed (marks it active and asks for a refresh), so that a timetable nobody
   * reads as a feed still has its changes noticed; absent in tests that need no refresh.
   */
  readonly activate?: ((source: SourceKey) => Promise<void>) | undefined;
  readonly logger: Pick<Logger, 'warn'>;
  readonly now: () => number;
}

/** The commands with their descriptions, for BotFather's `/setcommands` and `setMyCommands`. */
export const COMMANDS = [
  { command: 'today', description: 'Занятия сегодня' },
  { command: 'tomorrow', description: 'Занятия завтра' },
  { command: 'week', description: 'Занятия на неделю' },
  { command: 'list', description: 'Ваши подписки' },
  { command: 'stop', description: 'Отписаться' },
  { command: 'help', description: 'Справка' },
] as const;

const SHORT_HELP =
  'Команды: /today, /tomorrow, /week — занятия; /list — подписки; /stop — отписаться; /help — справка.';
const NONE = 'Подписок нет. Откройте страницу расписания группы или преподавателя и нажмите «Уведомления в Telegram».';
const EXPIRED =
  'Эта ссылка устарела или уже использована. Откройте страницу расписания ещё раз и нажмите «Уведомления в Telegram».';

/** The long help. */
export function helpText(publicUrl: string): string {
  return [
    'Я пишу, когда в расписании что-то меняется: занятие перенесли, отменили, добавили или заменили преподавателя.',
    '',
    `Подписаться: откройте расписание группы или преподавателя на ${publicUrl.replace(/\/+$/, '')} и нажмите «Уведомления в Telegram».`,
    '',
    '/today — занятия сегодня',
    '/tomorrow — занятия завтра',
    '/week — занятия на неделю',
    '/list — ваши подписки',
    '/stop — отписаться (/stop 2 — от второй, /stop all — от всех)',
    '/help — эта справка',
  ].join('\n');
}

/** Registers every command and the fallback on `bot`. */
export function registerCommands(bot: Bot, deps: CommandDeps): void {
  const commands = new Commands(deps);
  const answer = (work: (ctx: Context, chatId: string) => Promise<string>) => async (ctx: Context) => {
    const chatId = ctx.chat?.id;
    if (chatId === undefined) return;
    const text = await work(ctx, String(chatId));
    await ctx.reply(cut(text), { link_preview_options: { is_disabled: true } });
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
  bot.on(
    'message',
    answer(async () => `Не понимаю. ${SHORT_HELP}`),
  );
}

/** The commands' answers, each the text of one reply. */
export class Commands {
  private readonly deps: CommandDeps;

  constructor(deps: CommandDeps) {
    this.deps = deps;
  }

  /** `/start [payload]`: subscribes the chat to what the payload names; without one, the help. */
  async start(chatId: string, payload: string): Promise<string> {
    if (payload === '') return helpText(this.deps.config.publicUrl);
    const resolved = await this.deps.chats.resolvePayload(payload);
    if (resolved.kind === 'expired') return EXPIRED;
    if (resolved.kind === 'invalid') return `Не понимаю эту ссылку. ${SHORT_HELP}`;
    const { source, options } = resolved;
    const personal = sourceOf(source).kind === 'personal';
    const subscription = personal ? await this.deps.subscriptions.get(sourceOf(source).id) : undefined;
    // A personal timetable deleted after its link was made is gone.
    if (personal && subscription === undefined) return EXPIRED;
    await this.deps.chats.subscribe({ chatId, source, options });
    if (this.deps.activate)
      await this.deps.activate(source).catch((error: unknown) => {
        this.deps.logger.warn({ err: error, source }, 'could not activate a timetable a chat subscribed to');
      });
    const shown = personal ? (subscription?.feedOptions ?? {}) : options;
    const what = await this.title({ source, options: shown });
    return [
      `Вы подписаны: ${what}.`,
      'Я напишу, если занятие перенесут, отменят, добавят или заменят преподавателя.',
      '/today — занятия сегодня, /list — подписки, /stop — отписаться.',
    ].join('\n');
  }

  /** `/list`: the chat's subscriptions, numbered as `/stop` takes them. */
  async list(chatId: string): Promise<string> {
    const subscriptions = await this.deps.chats.ofChat(chatId);
    if (subscriptions.length === 0) return NONE;
    const lines = await this.numbered(subscriptions);
    return ['Ваши подписки:', ...lines, '', 'Отписаться: /stop и номер, например /stop 1.'].join('\n');
  }

  /** `/stop`, `/stop <n>` or `/stop all`. */
  async stop(chatId: string, argument: string): Promise<string> {
    const subscriptions = await this.deps.chats.ofChat(chatId);
    if (subscriptions.length === 0) return NONE;
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
    if (subscriptions.length === 0) return NONE;
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
    const lines = [`${name}, ${when}:`];
    let day = '';
    for (const occurrence of shown) {
      if (days(first, last) > 1 && occurrence.date !== day) {
        day = occurrence.date;
        lines.push('', dayTitle(day));
      }
      lines.push(classLine(occurrence));
    }
    if (days(first, last) === 1) lines.splice(1, 0, dayTitle(first));
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
    const prefix = sourceOf(subscription.source).kind === 'personal' ? 'личное расписание ' : '';
    return `${prefix}${name ?? fallbackName(subscription.source)}${described === '' ? '' : ` (${described})`}`;
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

/** "10:10–11:40 Физика (практика), ауд. 1008", a cancelled class marked. */
function classLine(occurrence: Occurrence): string {
  const where = occurrence.location === '' ? '' : `, ${occurrence.location}`;
  const cancelled = occurrence.status === 'CANCELLED' ? ' — отменено' : '';
  return `${occurrence.beginTime}–${occurrence.endTime} ${occurrence.summary}${where}${cancelled}`;
}

const DAY_FORMAT = new Intl.DateTimeFormat('ru', { weekday: 'short', day: 'numeric', month: 'short', timeZone: 'UTC' });

/** "Ср 2 окт" of a local date. */
export function dayTitle(date: string): string {
  const text = DAY_FORMAT.format(new Date(`${date}T12:00:00Z`)).replace(/[.,]/g, '');
  return text.charAt(0).toLocaleUpperCase('ru') + text.slice(1);
}

function addDays(date: string, count: number): string {
  const at = new Date(`${date}T12:00:00Z`);
  at.setUTCDate(at.getUTCDate() + count);
  return at.toISOString().slice(0, 10);
}

function days(first: string, last: string): number {
  return Math.round((Date.parse(`${last}T12:00:00Z`) - Date.parse(`${first}T12:00:00Z`)) / 86_400_000) + 1;
}

/** Text cut to Telegram's limit, saying how many lines were left out. */
export function cut(text: string): string {
  if (text.length <= MESSAGE_LIMIT) return text;
  const lines = text.split('\n');
  const kept: string[] = [];
  let length = 0;
  for (const [index, line] of lines.entries()) {
    const left = lines.length - index;
    const tail = `\n…и ещё ${left} ${pluralRu(left, ['строка', 'строки', 'строк'])}`;
    if (length + line.length + 1 + tail.length > MESSAGE_LIMIT) return `${kept.join('\n')}${tail}`;
    kept.push(line);
    length += line.length + 1;
  }
  return kept.join('\n');
}
