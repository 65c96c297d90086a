/**
 * The feed options as a form (subgroup, kinds to hide, reminder, title template), offering only the subgroups
 * and kinds this timetable has, and a preview of how one event looks with them. Without script the form is a
 * GET of the page itself, which renders every link with the options; the script (`data-options`) asks the
 * preview endpoint instead and rewrites the links, the QR code and the preview in place.
 */
import { DEFAULT_TITLE_TEMPLATE, type OptionValues, TITLE_PLACEHOLDERS } from '../timetable/event-text.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import { type Html, html } from './html.ts';
import { type Lang, messages, pluralRu } from './i18n.ts';
import type { EventPreview } from './timetable-view.ts';

const words = messages({
  ru: {
    heading: 'Настройки календаря',
    subgroup: 'Подгруппа',
    allSubgroups: 'Все подгруппы',
    hide: 'Не показывать занятия',
    alarm: 'Напоминание',
    noAlarm: 'Без напоминания',
    title: 'Название события',
    titleHint: 'Можно использовать',
    apply: 'Применить',
    preview: 'Так будет выглядеть событие',
    previewTitle: 'Название',
    previewWhere: 'Место',
    previewDescription: 'Описание',
    previewAlarm: 'Напоминание',
    previewNone: 'С этими настройками в календаре не останется ни одного занятия.',
    before: 'за',
    savedApplied: 'Это ваши сохранённые настройки: адрес ленты без параметров уже их применяет.',
  },
  en: {
    heading: 'Calendar options',
    subgroup: 'Subgroup',
    allSubgroups: 'All subgroups',
    hide: 'Hide classes',
    alarm: 'Reminder',
    noAlarm: 'No reminder',
    title: 'Event title',
    titleHint: 'You can use',
    apply: 'Apply',
    preview: 'How an event will look',
    previewTitle: 'Title',
    previewWhere: 'Place',
    previewDescription: 'Description',
    previewAlarm: 'Reminder',
    previewNone: 'With these options the calendar keeps no class at all.',
    before: '',
    savedApplied: 'These are your saved options: the feed address without parameters already applies them.',
  },
});

/** Reminder choices offered, in minutes, by this form and the saved options of the personal page. */
export const ALARM_CHOICES: readonly number[] = [0, 5, 10, 15, 30, 60, 120, 1440];

/** The reminder choices, with `current` among them when it is another value (saved or in the URL). */
export function alarmChoices(current: number | undefined): number[] {
  return [...new Set([...ALARM_CHOICES, ...(current === undefined ? [] : [current])])].sort((a, b) => a - b);
}

/** `15 минут`, `1 час`, `2 часа`, `1 день`; `15 minutes`, `1 hour`. */
export function durationText(minutes: number, lang: Lang): string {
  const [count, unit] =
    minutes > 0 && minutes % 1440 === 0
      ? [minutes / 1440, 'day']
      : minutes > 0 && minutes % 60 === 0
        ? [minutes / 60, 'hour']
        : [minutes, 'minute'];
  if (lang === 'en') return `${count} ${unit}${count === 1 ? '' : 's'}`;
  const forms: Record<string, [string, string, string]> = {
    minute: ['минута', 'минуты', 'минут'],
    hour: ['час', 'часа', 'часов'],
    day: ['день', 'дня', 'дней'],
  };
  return `${count} ${pluralRu(count, forms[unit] as [string, string, string])}`;
}

/** How a reminder reads in the preview: `за 15 минут до начала` / `15 minutes before`, or "none". */
export function alarmText(minutes: number | null, lang: Lang): string {
  const w = words(lang);
  if (minutes === null) return w.noAlarm;
  if (lang === 'en') return minutes === 0 ? 'at the start' : `${durationText(minutes, lang)} before`;
  return minutes === 0 ? 'в начале занятия' : `${w.before} ${durationText(minutes, lang)} до начала`;
}

/** What the form shows. */
export interface OptionsFormView {
  lang: Lang;
  /** The page's own path: the form's GET target. */
  action: string;
  /** The JSON preview endpoint the script asks. */
  previewPath: string;
  /** The subgroups and kinds this timetable has (ever had). */
  values: OptionValues;
  options: SubscriberOptions;
  /** The feed's title template when none is chosen (a teacher's names the groups); absent: a group's. */
  defaultTitle?: string | undefined;
  preview: EventPreview | undefined;
  /** Why the options in the URL were refused (the form is shown with them anyway). */
  error?: string | undefined;
  /** The options are a personal subscription's saved ones, which its plain feed URL already serves. */
  savedApplied?: boolean | undefined;
}

/** The options form and the event preview. */
export function optionsForm(view: OptionsFormView): Html {
  const w = words(view.lang);
  const { values, options } = view;
  const subgroup =
    values.subgroups.length === 0
      ? ''
      : html`<div class="field"><label for="opt-subgroup">${w.subgroup}</label>
<select id="opt-subgroup" name="subgroup"><option value="">${w.allSubgroups}</option>!${values.subgroups.map(
          (value) =>
            html`<option value="${String(value)}"!${options.subgroup === value ? ' selected' : ''}>${String(value)}</option>`,
        )}</select></div>`;
  const excluded = new Set((options.excludeKinds ?? []).map((kind) => kind.toLocaleLowerCase('ru')));
  const kinds =
    values.kinds.length === 0
      ? ''
      : html`<fieldset class="field"><legend>${w.hide}</legend>!${values.kinds.map(
          (kind, index) =>
            html`<label class="check" for="opt-kind-${String(index)}"><input type="checkbox" id="opt-kind-${String(index)}" name="exclude" value="${kind}"!${excluded.has(kind) ? ' checked' : ''}> ${kind}</label>`,
        )}</fieldset>`;
  const alarms = alarmChoices(options.alarmMinutes);
  const alarm = html`<div class="field"><label for="opt-alarm">${w.alarm}</label>
<select id="opt-alarm" name="alarm"><option value="">${w.noAlarm}</option>!${alarms.map(
    (minutes) =>
      html`<option value="${String(minutes)}"!${options.alarmMinutes === minutes ? ' selected' : ''}>${alarmText(minutes, view.lang)}</option>`,
  )}</select></div>`;
  const title = html`<div class="field"><label for="opt-title">${w.title}</label>
<input type="text" id="opt-title" name="title" maxlength="200" value="${options.titleTemplate ?? view.defaultTitle ?? DEFAULT_TITLE_TEMPLATE}" data-default="${view.defaultTitle ?? DEFAULT_TITLE_TEMPLATE}" aria-describedby="opt-title-hint" autocomplete="off" spellcheck="false">
<p class="hint muted" id="opt-title-hint">${w.titleHint}: ${TITLE_PLACEHOLDERS.map((name) => `{${name}}`).join(' ')}</p></div>`;
  return html`<form class="card options" method="get" action="${view.action}" data-options data-preview="${view.previewPath}" aria-labelledby="options-heading">
<h2 id="options-heading">${w.heading}</h2>
!${view.savedApplied ? html`<p class="notice" data-options-saved>${w.savedApplied}</p>` : ''}
!${subgroup}!${kinds}!${alarm}!${title}
<p class="notice error" role="alert" data-options-error!${view.error === undefined ? ' hidden' : ''}>${view.error ?? ''}</p>
<button type="submit">${w.apply}</button>
</form>
!${previewBlock(view)}`;
}

function previewBlock(view: OptionsFormView): Html {
  const w = words(view.lang);
  const preview = view.preview;
  return html`<section class="card preview" aria-labelledby="preview-heading" aria-live="polite">
<h2 id="preview-heading">${w.preview}</h2>
<p class="muted" data-preview-none!${preview === undefined ? '' : ' hidden'}>${w.previewNone}</p>
<dl!${preview === undefined ? ' hidden' : ''} data-preview-fields>
<dt>${w.previewTitle}</dt><dd data-preview="title">${preview?.title ?? ''}</dd>
<dt>${w.previewWhere}</dt><dd data-preview="location">${preview?.location ?? ''}</dd>
<dt>${w.previewDescription}</dt><dd class="pre" data-preview="description">${preview?.description ?? ''}</dd>
<dt>${w.previewAlarm}</dt><dd data-preview="alarm">${alarmText(preview?.alarmMinutes ?? null, view.lang)}</dd>
</dl>
</section>`;
}
