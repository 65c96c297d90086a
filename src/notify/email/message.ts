/**
 * The mails, in Russian, as text and HTML (pure): a change mail laid out like the bot's message (grouped by day,
 * soonest first, the bot's own lines: notify/telegram/message.ts) with the page's link and the way out, and the
 * confirmation mail of a sign-up. The subject names the timetable and the first change, so that a mailbox's
 * list says what happened without opening the mail.
 */
import { cutWithEllipsis, firstCodePoints } from '../../lib/cut-text.ts';
import { pluralRu } from '../../lib/words.ts';
import type { ChangeSet, NotifyOptions, NotifySide } from '../../timetable/notify-change.ts';
import { escapeAttribute, escapeHtml } from '../telegram/html.ts';
import { changeLine, ordered, shownSide } from '../telegram/message.ts';
import { dayLabel } from '../telegram/words.ts';

/** A mail's content. */
export interface MailContent {
  subject: string;
  text: string;
  html: string;
}

/** The most lines a change mail lists; the rest is counted («…и ещё N изменений»). */
export const MAX_MAIL_LINES = 100;
/** Subjects longer than this are cut: a mailbox's list shows the first few dozen characters anyway. */
const MAX_SUBJECT = 140;
/** A timetable's name is the university's: cut, so that a freak one cannot crowd out the rest. */
const MAX_NAME = 80;

/** What a change mail tells, and where it links. */
export interface ChangeMailInput {
  /** What to tell (already filtered for the subscriber): never empty. */
  told: ChangeSet;
  pageUrl: string;
  unsubscribeUrl: string;
  /** The subgroup the subscriber follows: its lines need no subgroup mark. */
  subgroup?: number | undefined;
}

/** The mail telling one subscriber what changed. */
export function changeMail(input: ChangeMailInput): MailContent {
  const { told, pageUrl, unsubscribeUrl, subgroup } = input;
  const name = firstCodePoints(told.name, MAX_NAME);
  const items = ordered(told.items);
  const shown = items.slice(0, MAX_MAIL_LINES);
  const left = items.length - shown.length + told.omitted;
  const days: { day: string; lines: string[] }[] = [];
  for (const item of shown) {
    const day = dayLabel((shownSide(item) as NotifySide).date);
    const line = changeLine(item, subgroup);
    if (days.at(-1)?.day === day) days.at(-1)?.lines.push(line);
    else days.push({ day, lines: [line] });
  }
  const heading = `${name}: изменения в расписании`;
  const more = left > 0 ? `…и ещё ${countWords(left)}` : undefined;
  const footer = `Вы получаете это письмо, потому что подписались на изменения расписания «${name}».`;
  const text = [
    heading,
    ...days.map(({ day, lines }) => [day, ...lines].join('\n')),
    ...(more === undefined ? [] : [more]),
    `Расписание: ${pageUrl}`,
    `${footer}\nОтписаться: ${unsubscribeUrl}`,
  ].join('\n\n');
  const html = document(heading, [
    `<p><b>${escapeHtml(heading)}</b></p>`,
    ...days.map(({ day, lines }) => `<p><b>${escapeHtml(day)}</b><br>\n${lines.map(escapeHtml).join('<br>\n')}</p>`),
    ...(more === undefined ? [] : [`<p>${escapeHtml(more)}</p>`]),
    `<p><a href="${escapeAttribute(pageUrl)}">Расписание</a></p>`,
    `<hr>\n<p style="color:#666;font-size:small">${escapeHtml(footer)} <a href="${escapeAttribute(unsubscribeUrl)}">Отписаться</a></p>`,
  ]);
  return { subject: changeSubject(told, subgroup), text, html };
}

/** «ИВТ-21: Пн 2 дек., 10:10 Оптика: ауд. 1008 → 305 (и ещё 2)»: the timetable and its first change. */
export function changeSubject(told: ChangeSet, subgroup?: number): string {
  const [first] = ordered(told.items);
  const name = firstCodePoints(told.name, MAX_NAME);
  if (first === undefined) return `${name}: изменения в расписании`;
  const others = told.items.length - 1 + told.omitted;
  const suffix = others > 0 ? ` (и ещё ${others})` : '';
  const subject = `${name}: ${dayLabel((shownSide(first) as NotifySide).date)}, ${changeLine(first, subgroup)}`;
  return `${cutWithEllipsis(subject, MAX_SUBJECT - suffix.length)}${suffix}`;
}

/** What a confirmation mail says the sign-up is for. */
export interface ConfirmationInput {
  /** The timetable's name («ИВТ-21», «Иванов И. И.», «личное расписание»). */
  name: string;
  confirmUrl: string;
  options: NotifyOptions;
  /** A daily digest at `digestTime` instead of a mail per change. */
  digest: boolean;
  /** `MAIL_DIGEST_TIME`, `HH:MM`. */
  digestTime: string;
}

/** The mail asking to confirm a sign-up: what it subscribes to, the link, and what to do if it was not you. */
export function confirmationMail(input: ConfirmationInput): MailContent {
  const name = firstCodePoints(input.name, MAX_NAME);
  const what = [
    input.options.subgroup === undefined ? undefined : `подгруппа ${input.options.subgroup}`,
    (input.options.excludeKinds ?? []).length === 0 ? undefined : `без: ${input.options.excludeKinds?.join(', ')}`,
    input.digest ? `одно письмо в день, в ${input.digestTime}` : 'письмо при каждом изменении',
  ].filter((part) => part !== undefined);
  const asked = `На этот адрес попросили присылать изменения расписания «${name}» (${what.join('; ')}).`;
  const act = 'Чтобы подписаться, откройте ссылку и нажмите «Подтвердить подписку»:';
  const expiry = 'Ссылка действует 48 часов.';
  const notYou =
    'Если это были не вы — ничего не делайте: без подтверждения мы больше ничего не пришлём, ' +
    'а адрес забудем через 48 часов.';
  const text = ['Здравствуйте!', asked, `${act}\n${input.confirmUrl}`, expiry, notYou].join('\n\n');
  const html = document('Подтвердите подписку', [
    '<p>Здравствуйте!</p>',
    `<p>${escapeHtml(asked)}</p>`,
    `<p>${escapeHtml(act)}<br>\n<a href="${escapeAttribute(input.confirmUrl)}">${escapeHtml(input.confirmUrl)}</a></p>`,
    `<p>${escapeHtml(expiry)}</p>`,
    `<p>${escapeHtml(notYou)}</p>`,
  ]);
  return { subject: `Подтвердите подписку на изменения расписания «${name}»`, text, html };
}

function countWords(count: number): string {
  return `${count} ${pluralRu(count, ['изменение', 'изменения', 'изменений'])}`;
}

/** A whole HTML mail of these paragraphs (already HTML). */
function document(title: string, paragraphs: readonly string[]): string {
  return [
    '<!doctype html>',
    '<html lang="ru">',
    '<head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)}</title></head>`,
    '<body style="font-family:sans-serif;line-height:1.5">',
    ...paragraphs,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
