/**
 * Words the bot's replies and its change messages share, so that a day or a subgroup reads the same in `/week`
 * as in «изменения в расписании» (pure).
 */
import { pluralRu } from '../../lib/words.ts';
import { subgroupOf } from '../../timetable/event-text.ts';

const DAY_FORMAT = new Intl.DateTimeFormat('ru', { weekday: 'short', day: 'numeric', month: 'short', timeZone: 'UTC' });

/**
 * "Ср 2 окт.", "Пт 9 мая", "Ср 5 нояб." of a local `YYYY-MM-DD`: the weekday and month as Russian abbreviates them
 * (Intl's, with their full stops), without the comma after the weekday.
 */
export function dayLabel(date: string): string {
  const parts = DAY_FORMAT.formatToParts(new Date(`${date}T12:00:00Z`));
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((each) => each.type === type)?.value ?? '';
  const weekday = part('weekday');
  return `${weekday.charAt(0).toLocaleUpperCase('ru')}${weekday.slice(1)} ${part('day')} ${part('month')}`;
}

/**
 * A class's title with whose class it is, when a chat follows the whole group and the class is one subgroup's:
 * "Оптика (лабораторная работа)" of "1 подгруппа" → "Оптика (лабораторная работа, 1 подгруппа)"; a title that
 * does not end in brackets gets its own: "Оптика (1 подгруппа)". A chat following one subgroup (`followed` set)
 * gets the title as it is: every class it is told of is its own or shared. A title naming the subgroup already
 * (a template with `{note}`) is left as it is too.
 */
export function withSubgroup(summary: string, note: string, followed: number | undefined): string {
  if (followed !== undefined) return summary;
  const subgroup = subgroupOf(note);
  if (subgroup === undefined || subgroupOf(summary) === subgroup) return summary;
  const mark = `${subgroup} подгруппа`;
  return summary.endsWith(')') ? `${summary.slice(0, -1)}, ${mark})` : `${summary} (${mark})`;
}

/** A messenger the bot speaks in: its name as the pages' buttons say it («Уведомления в MAX»). */
export type Messenger = 'Telegram' | 'MAX';

/** `/start` of an id the university does not know: what it is, and what to do next. */
export function notFoundText(source: string, publicUrl: string, messenger: Messenger = 'Telegram'): string {
  const [kind, id] = source.split(':');
  const what = kind === 'employee' ? `Преподаватель ${id} не найден` : `Группа ${id} не найдена`;
  return (
    `${what} в расписании университета, подписываться не на что. Проверьте номер в ссылке или откройте ` +
    `страницу расписания на ${publicUrl.replace(/\/+$/, '')} и нажмите «Уведомления в ${messenger}».`
  );
}

/** `/start` beyond the first-request limits: when to try again, in whole minutes. */
export function tooManyStartsText(retryAfterMs: number): string {
  const minutes = Math.max(1, Math.ceil(retryAfterMs / 60_000));
  return `Сейчас слишком много запросов новых расписаний, попробуйте через ${minutes} мин.`;
}

/** `/start` of one more timetable than a chat may follow. */
export function tooManySourcesText(max: number): string {
  return (
    `Вы уже следите за ${max} ${pluralRu(max, ['расписанием', 'расписаниями', 'расписаниями'])} — больше нельзя. ` +
    'Посмотрите подписки: /list; отпишитесь от ненужной: /stop и номер, например /stop 1. Потом откройте ссылку ещё раз.'
  );
}
