/**
 * What a push target follows, in one short line (pure): «Подгруппа 2, без лекций, напоминание за 15 минут,
 * название «{предмет} {аудитория}»», or, when it follows the whole timetable (a target connected before push
 * followed options, or one connected with none chosen), «Вся группа» for a group and «Всё расписание» for a
 * teacher's or a personal timetable (a поток is several groups: not what one group's calendar gets). The connect
 * page shows it before the calendar is connected, the manage page after; the manage page says what a save
 * changed, and both connect pages list the options they refuse, each by its field's name.
 */

import type { OptionField } from '../serving/errors.ts';
import { defaultTitleTemplate, titleTemplateIn } from '../timetable/event-text.ts';
import type { SourceKind } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import { type Html, html } from './html.ts';
import type { Lang } from './i18n.ts';
import { durationText } from './options-form.ts';

/** The name of each option field, as the options form labels it. */
const FIELD_NAMES: Readonly<Record<Lang, Readonly<Record<OptionField, string>>>> = {
  ru: { subgroup: 'Подгруппа', exclude: 'Скрытые занятия', alarm: 'Напоминание', title: 'Название' },
  en: { subgroup: 'Subgroup', exclude: 'Hidden classes', alarm: 'Reminder', title: 'Title' },
};

/** «без лекций»: the kinds the university sends, in the genitive plural; any other kind is quoted as it is. */
const KINDS_GENITIVE: Readonly<Record<string, string>> = {
  лекция: 'лекций',
  практика: 'практик',
  'лабораторная работа': 'лабораторных работ',
  семинар: 'семинаров',
  консультация: 'консультаций',
  экзамен: 'экзаменов',
  зачёт: 'зачётов',
};

/** True when `options` choose nothing: the calendar gets the whole timetable. */
export function followsWhole(options: SubscriberOptions | undefined, kind: SourceKind): boolean {
  if (options === undefined) return true;
  const title = options.titleTemplate;
  return (
    options.subgroup === undefined &&
    (options.excludeKinds ?? []).length === 0 &&
    options.alarmMinutes === undefined &&
    (title === undefined || title === defaultTitleTemplate(kind))
  );
}

/** The line of `options` for a timetable of `kind` (its default title is not mentioned). */
export function pushOptionsLine(options: SubscriberOptions | undefined, kind: SourceKind, lang: Lang): string {
  const ru = lang === 'ru';
  if (options === undefined || followsWhole(options, kind)) {
    if (kind === 'group') return ru ? 'Вся группа' : 'The whole group';
    return ru ? 'Всё расписание' : 'The whole timetable';
  }
  const parts: string[] = [];
  if (options.subgroup !== undefined) parts.push(ru ? `подгруппа ${options.subgroup}` : `subgroup ${options.subgroup}`);
  const kinds = options.excludeKinds ?? [];
  if (kinds.length > 0)
    parts.push(
      ru
        ? `без ${kinds.map((name) => KINDS_GENITIVE[name.toLocaleLowerCase('ru')] ?? `«${name}»`).join(', ')}`
        : `without ${kinds.map((name) => `“${name}”`).join(', ')}`,
    );
  const alarm = options.alarmMinutes;
  if (alarm !== undefined)
    parts.push(
      alarm === 0
        ? ru
          ? 'напоминание в начале занятия'
          : 'a reminder at the start'
        : ru
          ? `напоминание за ${durationText(alarm, lang)}`
          : `a reminder ${durationText(alarm, lang)} before`,
    );
  const title = options.titleTemplate;
  if (title !== undefined && title !== defaultTitleTemplate(kind)) {
    const shown = titleTemplateIn(title, lang);
    parts.push(ru ? `название «${shown}»` : `title “${shown}”`);
  }
  const line = parts.join(', ');
  return `${line.charAt(0).toLocaleUpperCase(lang)}${line.slice(1)}`;
}

/**
 * What changed from `before` to `after`, one short line per option that changed, in the order of the form:
 * «Подгруппа: 2 → 1», «Напоминание: за 15 минут → нет». Empty when nothing changed. A title equal to the
 * timetable's default is no title; `before` absent (a calendar connected before push followed options) is none.
 */
export function pushOptionsChanges(
  before: SubscriberOptions | undefined,
  after: SubscriberOptions,
  kind: SourceKind,
  lang: Lang,
): string[] {
  const ru = lang === 'ru';
  const names = FIELD_NAMES[lang];
  const was = before ?? {};
  const none = ru ? 'нет' : 'none';
  const changes: string[] = [];
  const change = (label: string, from: string, to: string) => {
    if (from !== to) changes.push(`${label}: ${from} → ${to}`);
  };
  const subgroup = (options: SubscriberOptions) =>
    options.subgroup === undefined ? (ru ? 'все' : 'all') : String(options.subgroup);
  change(names.subgroup, subgroup(was), subgroup(after));
  const kinds = (options: SubscriberOptions) =>
    (options.excludeKinds ?? []).length === 0 ? none : [...(options.excludeKinds ?? [])].join(', ');
  change(names.exclude, kinds(was), kinds(after));
  const alarm = (options: SubscriberOptions) => {
    const minutes = options.alarmMinutes;
    if (minutes === undefined) return none;
    if (minutes === 0) return ru ? 'в начале занятия' : 'at the start';
    return ru ? `за ${durationText(minutes, lang)}` : `${durationText(minutes, lang)} before`;
  };
  change(names.alarm, alarm(was), alarm(after));
  const title = (options: SubscriberOptions) => {
    const template = options.titleTemplate;
    if (template === undefined || template === defaultTitleTemplate(kind)) return ru ? 'обычное' : 'the usual one';
    const shown = titleTemplateIn(template, lang);
    return ru ? `«${shown}»` : `“${shown}”`;
  };
  change(names.title, title(was), title(after));
  return changes;
}

/**
 * The options refused, as a list: each field by its name with why («Подгруппа: В этом расписании нет подгруппы
 * 7.»), `data-field` naming it for scripts and tests. The page around it says what was refused and the way back.
 */
export function refusedOptionsList(refused: readonly { field: OptionField; why: string }[], lang: Lang): Html {
  const names = FIELD_NAMES[lang];
  return html`<ul>!${refused.map(({ field, why }) => html`<li data-field="${field}"><strong>${names[field]}:</strong> ${why}</li>`)}</ul>`;
}
