/**
 * The feed options as a form (subgroup, kinds to hide, reminder, title template), offering only the subgroups
 * and kinds this timetable has, and a preview of how one event looks with them. Without script the form is a
 * GET of the page itself, which renders every link with the options; the script (`data-options`) asks the
 * preview endpoint instead and rewrites the links, the QR code and the preview in place. A value refused is
 * shown again as typed, with the reason beside its field. On the personal page the same form also saves its
 * values for the plain feed URL (a post to the personal routes).
 */
import type { OptionField } from '../serving/errors.ts';
import {
  DEFAULT_TITLE_TEMPLATE,
  type OptionValues,
  RUSSIAN_PLACEHOLDERS,
  TITLE_PLACEHOLDERS,
  titleTemplateIn,
} from '../timetable/event-text.ts';
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
    refused: 'Настройки не применены: исправьте отмеченное поле.',
    saveLead:
      'Сохранённые настройки действуют на адрес ленты без параметров: календари, уже подписанные на него, получат их сами, переподписываться не нужно. Параметры в самом адресе важнее сохранённых. Календари с прямой отправкой следуют своим настройкам: они меняются на странице управления календарём.',
    save: 'Сохранить настройки',
    clear: 'Сбросить',
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
    refused: 'The options are not applied: correct the marked field.',
    saveLead:
      'Saved options apply to the feed URL without parameters: calendars subscribed to it already get them by themselves, with no need to subscribe again. Parameters in the URL itself win over saved ones. Calendars pushed to follow their own options, changed on the calendar’s manage page.',
    save: 'Save options',
    clear: 'Reset',
  },
});

/** Reminder choices offered, in minutes, by this form and the saved options of the personal page. */
export const ALARM_CHOICES: readonly number[] = [0, 5, 10, 15, 30, 60, 120, 1440];

/** The reminder choices, with `current` among them when it is another value (saved or in the URL). */
export function alarmChoices(current: number | undefined): number[] {
  return [...new Set([...ALARM_CHOICES, ...(current === undefined ? [] : [current])])].sort((a, b) => a - b);
}

/**
 * `15 минут`, `1 час`, `2 часа`, `1 день`; `15 minutes`, `1 hour`. Russian in the accusative, as every use follows
 * «за» (`за 1 минуту`, `за 21 минуту`).
 */
export function durationText(minutes: number, lang: Lang): string {
  const [count, unit] =
    minutes > 0 && minutes % 1440 === 0
      ? [minutes / 1440, 'day']
      : minutes > 0 && minutes % 60 === 0
        ? [minutes / 60, 'hour']
        : [minutes, 'minute'];
  if (lang === 'en') return `${count} ${unit}${count === 1 ? '' : 's'}`;
  const forms: Record<string, [string, string, string]> = {
    minute: ['минуту', 'минуты', 'минут'],
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
  /** The JSON preview endpoint the script asks; without one the form has no live preview. */
  previewPath?: string | undefined;
  /** The subgroups and kinds this timetable has (ever had). */
  values: OptionValues;
  /** The options applied (none when one was refused). */
  options: SubscriberOptions;
  /**
   * The option fields as the query gave them (filled ones only): the form shows these as typed, a refused
   * value included, rather than the options applied.
   */
  typed?: Readonly<Record<string, string | readonly string[]>> | undefined;
  /** Why a field's value was refused, in the page's language, shown beside that field. */
  fieldErrors?: Partial<Record<OptionField, string>> | undefined;
  /** The feed's title template when none is chosen (a teacher's names the groups); absent: a group's. */
  defaultTitle?: string | undefined;
  preview: EventPreview | undefined;
  /** Why the options were refused when no one field is to blame (the form is shown with them anyway). */
  error?: string | undefined;
  /** The options are a personal subscription's saved ones, which its plain feed URL already serves. */
  savedApplied?: boolean | undefined;
  /** The personal page's: where the form's values are posted to be saved, and the outcome of the last save. */
  save?: { action: string; notice: Html } | undefined;
  /** A push target's manage page: the form is a post to `action` with one button, the last save's outcome on top. */
  post?: { action: string; label: string; notice: Html } | undefined;
}

/** The values a form field shows: as typed when given, else those of the options applied. */
interface Shown {
  subgroup: string | undefined;
  alarm: string | undefined;
  exclude: string[];
  title: string;
}

function shownValues(view: OptionsFormView): Shown {
  const typed = view.typed ?? {};
  const first = (value: string | readonly string[] | undefined) =>
    typeof value === 'string' || value === undefined ? value : value[0];
  const { options } = view;
  const exclude = typed.exclude;
  return {
    subgroup: first(typed.subgroup) ?? options.subgroup?.toString(),
    alarm: first(typed.alarm) ?? options.alarmMinutes?.toString(),
    exclude:
      exclude === undefined
        ? (options.excludeKinds ?? []).map((kind) => kind.toLocaleLowerCase('ru'))
        : (typeof exclude === 'string' ? [exclude] : exclude)
            .flatMap((item) => item.split(','))
            .map((kind) => kind.trim().toLocaleLowerCase('ru'))
            .filter((kind) => kind !== ''),
    title:
      first(typed.title) ??
      titleTemplateIn(options.titleTemplate ?? view.defaultTitle ?? DEFAULT_TITLE_TEMPLATE, view.lang),
  };
}

/** The option fields in the order the form shows them. */
const FORM_ORDER: readonly OptionField[] = ['subgroup', 'exclude', 'alarm', 'title'];

/**
 * The first field the form shows that was refused, which takes the focus (`autofocus`): a page answering a
 * full-page submit then opens scrolled to that field and its reason, not at the top of a page whose options come
 * after the classes. The form's action has no `#options` for this: browsers skip `autofocus` on a page opened at
 * a fragment, and a submit that was taken opens at the top, where the links with the new options are.
 */
function firstRefused(view: OptionsFormView): OptionField | undefined {
  return FORM_ORDER.find((field) => view.fieldErrors?.[field] !== undefined);
}

/** The attributes of a field's control: its hint and error described, and marked invalid when refused. */
function described(view: OptionsFormView, field: OptionField, ...ids: string[]): string {
  const refused = view.fieldErrors?.[field] !== undefined;
  const attributes = [`aria-describedby="${[...ids, `opt-${field}-error`].join(' ')}"`];
  if (refused) attributes.push('aria-invalid="true"');
  if (firstRefused(view) === field) attributes.push('autofocus');
  return ` ${attributes.join(' ')}`;
}

/** The reason a field was refused, beside it; empty and hidden until there is one (the script fills it too). */
function fieldError(view: OptionsFormView, field: OptionField): Html {
  const error = view.fieldErrors?.[field];
  return html`<p class="field-error" id="opt-${field}-error" data-field-error="${field}"!${error === undefined ? ' hidden' : ''}>${error ?? ''}</p>`;
}

/** The options form and the event preview. */
export function optionsForm(view: OptionsFormView): Html {
  const w = words(view.lang);
  const { values } = view;
  const shown = shownValues(view);
  // A value given that the timetable does not offer is shown (and refused) rather than silently dropped.
  const subgroupChoices = values.subgroups.map(String);
  if (shown.subgroup !== undefined && !subgroupChoices.includes(shown.subgroup)) subgroupChoices.push(shown.subgroup);
  const subgroup =
    subgroupChoices.length === 0
      ? ''
      : html`<div class="field"><label for="opt-subgroup">${w.subgroup}</label>
<select id="opt-subgroup" name="subgroup"!${described(view, 'subgroup')}><option value="">${w.allSubgroups}</option>!${subgroupChoices.map(
          (value) => html`<option value="${value}"!${shown.subgroup === value ? ' selected' : ''}>${value}</option>`,
        )}</select>!${fieldError(view, 'subgroup')}</div>`;
  const kindChoices = [...new Set([...values.kinds, ...shown.exclude])];
  const kindInvalid = view.fieldErrors?.exclude === undefined ? '' : ' aria-invalid="true"';
  const kindFocus = (index: number) => (index === 0 && firstRefused(view) === 'exclude' ? ' autofocus' : '');
  const kinds =
    kindChoices.length === 0
      ? ''
      : html`<fieldset class="field" aria-describedby="opt-exclude-error"><legend>${w.hide}</legend>!${kindChoices.map(
          (kind, index) =>
            html`<label class="check" for="opt-kind-${String(index)}"><input type="checkbox" id="opt-kind-${String(index)}" name="exclude" value="${kind}"!${shown.exclude.includes(kind) ? ' checked' : ''}!${kindInvalid}!${kindFocus(index)}> ${kind}</label>`,
        )}!${fieldError(view, 'exclude')}</fieldset>`;
  const alarmNumber = shown.alarm !== undefined && /^\d{1,6}$/.test(shown.alarm) ? Number(shown.alarm) : undefined;
  const alarms = alarmChoices(alarmNumber).map((minutes) => ({
    value: String(minutes),
    label: alarmText(minutes, view.lang),
  }));
  if (shown.alarm !== undefined && !alarms.some((choice) => choice.value === shown.alarm))
    alarms.push({ value: shown.alarm, label: shown.alarm });
  const alarm = html`<div class="field"><label for="opt-alarm">${w.alarm}</label>
<select id="opt-alarm" name="alarm"!${described(view, 'alarm')}><option value="">${w.noAlarm}</option>!${alarms.map(
    (choice) =>
      html`<option value="${choice.value}"!${shown.alarm === choice.value ? ' selected' : ''}>${choice.label}</option>`,
  )}</select>!${fieldError(view, 'alarm')}</div>`;
  const defaultTitle = titleTemplateIn(view.defaultTitle ?? DEFAULT_TITLE_TEMPLATE, view.lang);
  const names = TITLE_PLACEHOLDERS.map((name) => `{${view.lang === 'ru' ? RUSSIAN_PLACEHOLDERS[name] : name}}`);
  const title = html`<div class="field"><label for="opt-title">${w.title}</label>
<input type="text" id="opt-title" name="title" maxlength="200" value="${shown.title}" data-default="${defaultTitle}"!${described(view, 'title', 'opt-title-hint')} autocomplete="off" spellcheck="false">
<p class="hint muted" id="opt-title-hint">${w.titleHint}: ${names.join(' ')}</p>!${fieldError(view, 'title')}</div>`;
  const refused = view.error ?? (Object.keys(view.fieldErrors ?? {}).length > 0 ? w.refused : undefined);
  const live = view.previewPath === undefined ? '' : html` data-options data-preview="${view.previewPath}"`;
  const save =
    view.post !== undefined
      ? html`<button type="submit">${view.post.label}</button>`
      : view.save === undefined
        ? html`<button type="submit">${w.apply}</button>`
        : html`<div class="row"><button type="submit" formmethod="post" formaction="${view.save.action}" name="action" value="save">${w.save}</button>
<button type="submit" formmethod="post" formaction="${view.save.action}" name="action" value="clear" class="secondary">${w.clear}</button>
<button type="submit" class="secondary">${w.apply}</button></div>
<p class="hint muted">${w.saveLead}</p>`;
  const method = view.post === undefined ? 'get' : 'post';
  return html`<form class="card options" id="options" method="${method}" action="${view.post?.action ?? view.action}"!${live} aria-labelledby="options-heading">
<h2 id="options-heading">${w.heading}</h2>
!${view.save?.notice ?? view.post?.notice ?? ''}
!${view.savedApplied ? html`<p class="notice" data-options-saved>${w.savedApplied}</p>` : ''}
!${subgroup}!${kinds}!${alarm}!${title}
<p class="notice error" role="alert" data-options-error data-refused="${w.refused}"!${refused === undefined ? ' hidden' : ''}>${refused ?? ''}</p>
!${save}
</form>
!${view.previewPath === undefined ? '' : previewBlock(view)}`;
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
