/**
 * The Telegram message telling one chat what one publication changed: in Russian, grouped by day (soonest
 * first), a line per class saying what it was and what it is now, then a link to the timetable page. Pure: the
 * sides carry the university's local date and time already, so no zone is needed here.
 */
import { pluralRu } from '../../lib/words.ts';
import type { ChangeSet, NotifyItem, NotifySide } from '../../timetable/notify-change.ts';
import { bold, escapeHtml, link } from './html.ts';
import { dayLabel, withSubgroup } from './words.ts';

/** Telegram's limit on a message's text. We measure the HTML (longer than the parsed text): never over. */
export const MAX_MESSAGE_LENGTH = 4096;

/** A room as people say it: "ауд. 1008" for a number, the text itself otherwise ("Зал 2"). */
function roomWords(room: string): string {
  return /^\d/.test(room) ? `ауд. ${room}` : room;
}

/** "Корпус 1, 1008" → "Корпус 1, ауд. 1008" (the location is building and room, joined by ", "). */
function placeWords(location: string): string {
  const parts = location.split(', ');
  const room = parts.pop() ?? '';
  return [...parts, roomWords(room)].join(', ');
}

/** Where a class moved: "ауд. 1008 → 2207" within one building, the whole place otherwise. */
function placeChange(before: string, after: string): string {
  if (before === '') return placeWords(after);
  if (after === '') return `${placeWords(before)} → без аудитории`;
  const was = before.split(', ');
  const now = after.split(', ');
  const sameBuilding = was.length === now.length && was.slice(0, -1).every((part, i) => part === now[i]);
  if (!sameBuilding) return `${placeWords(before)} → ${placeWords(after)}`;
  const [wasRoom, nowRoom] = [was.at(-1) ?? '', now.at(-1) ?? ''];
  const bare = /^\d/.test(wasRoom) && /^\d/.test(nowRoom);
  return `${roomWords(wasRoom)} → ${bare ? nowRoom : roomWords(nowRoom)}`;
}

function teacherChange(before: string, after: string): string {
  return `преподаватель ${before === '' ? 'не указан' : before} → ${after === '' ? 'не указан' : after}`;
}

/** What happened to a moved class: its new day, time or place (and teacher, if that changed too). */
function movedWords(before: NotifySide, after: NotifySide): string {
  const parts: string[] = [];
  if (before.date !== after.date) parts.push(`перенесено на ${dayLabel(after.date)}, ${after.begin}`);
  else if (before.begin !== after.begin) parts.push(`время ${before.begin} → ${after.begin}`);
  else if (before.end !== after.end) parts.push(`время ${before.begin}–${before.end} → ${after.begin}–${after.end}`);
  if (before.location !== after.location) parts.push(placeChange(before.location, after.location));
  if (before.teacher !== after.teacher) parts.push(teacherChange(before.teacher, after.teacher));
  return parts.length > 0 ? parts.join(', ') : 'изменено';
}

/** The side a line is dated by: the class as people knew it (before), or the new one. */
export function shownSide(item: NotifyItem): NotifySide | undefined {
  return item.before ?? item.after;
}

/**
 * One line, plain text: "10:10 Физика (практика): ауд. 1008 → 2207"; a class of one subgroup says so
 * ("10:10 Физика (практика, 1 подгруппа): отменено") unless the chat follows one subgroup (`followed`).
 */
export function changeLine(item: NotifyItem, followed?: number): string {
  const side = shownSide(item) as NotifySide;
  const { before, after } = item;
  let what: string;
  switch (item.kind) {
    case 'moved':
      what = before && after ? movedWords(before, after) : 'изменено';
      break;
    case 'cancelled':
      what = 'отменено';
      break;
    case 'added':
      what = side.location === '' ? 'новое занятие' : `новое занятие, ${placeWords(side.location)}`;
      break;
    case 'teacher':
      what = teacherChange(before?.teacher ?? '', after?.teacher ?? '');
      break;
  }
  return `${side.begin} ${withSubgroup(side.summary, item.note, followed)}: ${what}`;
}

function countWords(count: number): string {
  return `${count} ${pluralRu(count, ['изменение', 'изменения', 'изменений'])}`;
}

/** What ends the message: the link, after "и ещё N изменений" when lines were left out. */
function tail(pageUrl: string, left: number): string {
  const more = left > 0 ? `\n\n…и ещё ${countWords(left)}` : '';
  return `${more}\n\n${link(pageUrl, 'Расписание')}`;
}

/** Items in the order shown (the e-mail's too): by the shown day, then time, then uid. */
export function ordered(items: readonly NotifyItem[]): NotifyItem[] {
  const key = (item: NotifyItem) => {
    const side = shownSide(item);
    return `${side?.date ?? ''} ${side?.begin ?? ''}`;
  };
  return items
    .filter((item) => shownSide(item) !== undefined)
    .sort((a, b) => key(a).localeCompare(key(b)) || a.uid.localeCompare(b.uid));
}

/**
 * The message for `set` (already filtered for the chat), Telegram HTML, at most {@link MAX_MESSAGE_LENGTH}
 * characters (`subgroup`: the one the chat follows, whose lines need no subgroup mark): lines are added while the
 * rest still fits, then "…и ещё N изменений" (the lines left out and the set's `omitted`) and the link. MAX reads
 * the same HTML (its `<b>` and `<a href>`), within its own `limit` of 4000.
 */
export function formatChangeMessage(
  set: ChangeSet,
  options: { pageUrl: string; subgroup?: number | undefined; limit?: number },
): string {
  const limit = options.limit ?? MAX_MESSAGE_LENGTH;
  const items = ordered(set.items);
  // A name is the university's; cut so that a freak one cannot crowd out every line.
  let body = bold(`${set.name.slice(0, 200)}: изменения в расписании`);
  let day: string | undefined;
  let shown = 0;
  for (const [index, item] of items.entries()) {
    const side = shownSide(item) as NotifySide;
    const heading = side.date === day ? '' : `\n\n${bold(dayLabel(side.date))}`;
    const line = `${heading}\n${escapeHtml(changeLine(item, options.subgroup))}`;
    const left = items.length - index - 1 + set.omitted;
    if (body.length + line.length + tail(options.pageUrl, left).length > limit) break;
    body += line;
    day = side.date;
    shown += 1;
  }
  return body + tail(options.pageUrl, items.length - shown + set.omitted);
}
