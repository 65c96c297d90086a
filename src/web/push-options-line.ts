/**
 * What a push target follows, in one short line (pure): «Подгруппа 2, без лекций, напоминание за 15 минут,
 * название «{предмет} {аудитория}»», or, when it follows the whole timetable (a target connected before push
 * followed options, or one connected with none chosen), «Вся группа» for a group and «Всё расписание» for a
 * teacher's or a personal timetable (a поток is several groups: not what one group's calendar gets). The connect
 * page shows it before the calendar is connected, the manage page after.
 */

import { defaultTitleTemplate, titleTemplateIn } from '../timetable/event-text.ts';
import type { SourceKind } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import type { Lang } from './i18n.ts';
import { durationText } from './options-form.ts';

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
