import type { Lang } from '../lib/words.ts';
import type { SourceKind } from './source.ts';
import type { EventWording, Occurrence, SubscriberOptions, TimetableEntry } from './types.ts';

/** Default SUMMARY: the subject with its kind, e.g. "Математический анализ (лекция)". */
export const DEFAULT_TITLE_TEMPLATE = '{subject} ({kind})';

/**
 * Default SUMMARY of a teacher's timetable, e.g. "Физика (лекция) — 09-351, 09-352": a teacher needs to know whom a
 * class is for, and knows who teaches it. Without groups the dash goes too (see {@link applyTitleTemplate}).
 */
export const TEACHER_TITLE_TEMPLATE = '{subject} ({kind}) — {groups}';

/** Events of a group's or a student's own timetable. */
export const GROUP_WORDING: EventWording = { title: DEFAULT_TITLE_TEMPLATE, teacherLine: true };

/** Events of a teacher's timetable: the groups in the title, no line naming the teacher. */
export const TEACHER_WORDING: EventWording = { title: TEACHER_TITLE_TEMPLATE, teacherLine: false };

/** The wording of a source kind's events. */
export function wordingOf(kind: SourceKind): EventWording {
  return kind === 'employee' ? TEACHER_WORDING : GROUP_WORDING;
}

/** The title template a source kind's feed uses when the subscriber chose none. */
export function defaultTitleTemplate(kind: SourceKind): string {
  return wordingOf(kind).title;
}

/** The placeholders a title template may use, in the order the documentation lists them. */
export const TITLE_PLACEHOLDERS = ['subject', 'kind', 'room', 'building', 'teacher', 'groups', 'note'] as const;

/** A title template's placeholder. */
export type TitlePlaceholder = (typeof TITLE_PLACEHOLDERS)[number];

/**
 * Longest SUMMARY a title template expands to, in characters. Upstream fields have no length limit, and a
 * template repeating a long one made an 80 MB feed; longer titles end with "…".
 */
export const MAX_SUMMARY_LENGTH = 250;

/**
 * The Russian name of each placeholder, a synonym of the English one: `{предмет} ({вид})` is the default title.
 * Templates are stored and cached with the English names ({@link canonicalTitleTemplate}), so a feed does not
 * change with the language its options were typed in.
 */
export const RUSSIAN_PLACEHOLDERS: Readonly<Record<TitlePlaceholder, string>> = {
  subject: 'предмет',
  kind: 'вид',
  room: 'аудитория',
  building: 'корпус',
  teacher: 'преподаватель',
  groups: 'группы',
  note: 'примечание',
};

const BY_RUSSIAN_NAME = new Map(
  TITLE_PLACEHOLDERS.map((name) => [RUSSIAN_PLACEHOLDERS[name], name] as [string, TitlePlaceholder]),
);

/** A placeholder in braces: a name of letters (of any script), digits and underscores. */
const PLACEHOLDER = /\{([\p{L}\p{N}_]+)\}/gu;

/** The placeholder names a template uses (`{subject}` → `subject`), known or not, in order, repeats kept. */
export function placeholdersOf(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((match) => match[1] as string);
}

/** A mistake with braces in a title template: where the text goes wrong, as {@link braceMistakeOf} finds it. */
export type BraceMistake =
  /** A placeholder opened and never closed, `{предмет` (`name`: what follows the brace). */
  | { kind: 'unclosed'; name: string }
  /** A brace that is no part of a placeholder: a `}` alone, `{` before no name, or one inside another's braces. */
  | { kind: 'stray'; brace: '{' | '}' };

/**
 * The first brace of `template` that is no part of a placeholder, or undefined when every brace is one. A title
 * is copied into every event as it is, so `{предмет` would title every class «{предмет»: braces are kept for
 * placeholders, and there is no escape for a literal one (a title has round and square brackets for that).
 */
export function braceMistakeOf(template: string): BraceMistake | undefined {
  // A placeholder becomes a character no title holds (control characters are refused), so that removing one
  // never joins the text around it into another: `{пред{x}мет}` is not `{предмет}`.
  const rest = template.replace(PLACEHOLDER, '\u0000');
  const at = rest.search(/[{}]/);
  if (at === -1) return undefined;
  if (rest[at] === '}') return { kind: 'stray', brace: '}' };
  const name = /^\{([\p{L}\p{N}_]+)/u.exec(rest.slice(at))?.[1];
  return name === undefined ? { kind: 'stray', brace: '{' } : { kind: 'unclosed', name };
}

/**
 * The placeholder a name in braces stands for: an English name as it is, a Russian one in any case
 * (`предмет`, `Предмет`); undefined for any other name.
 */
export function placeholderNamed(name: string): TitlePlaceholder | undefined {
  if ((TITLE_PLACEHOLDERS as readonly string[]).includes(name)) return name as TitlePlaceholder;
  return BY_RUSSIAN_NAME.get(name.toLocaleLowerCase('ru'));
}

/**
 * `template` with every Russian placeholder written by its English name (`{предмет}` → `{subject}`), other text
 * kept: the one spelling that is stored, cached and put in feed URLs.
 */
export function canonicalTitleTemplate(template: string): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => {
    const known = placeholderNamed(name);
    return known === undefined ? whole : `{${known}}`;
  });
}

/** `template` with its placeholders named in `lang` (`{subject}` → `{предмет}` in Russian), as a form shows it. */
export function titleTemplateIn(template: string, lang: Lang): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => {
    const known = placeholderNamed(name);
    if (known === undefined) return whole;
    return `{${lang === 'ru' ? RUSSIAN_PLACEHOLDERS[known] : known}}`;
  });
}

/** The texts a calendar shows for an entry; the same for all of its occurrences. */
export interface EntryText {
  summary: string;
  location: string;
  description: string;
  categories: string[];
}

/** The teacher's full name, "Фамилия Имя Отчество", without gaps for missing parts. */
export function teacherName(entry: TimetableEntry): string {
  const { lastName, firstName, middleName } = entry.teacher;
  return [lastName, firstName, middleName].filter((part) => part !== '').join(' ');
}

/** LOCATION: building and room. */
export function locationOf(entry: TimetableEntry): string {
  return [entry.building.name, entry.room].filter((part) => part !== '').join(', ');
}

/**
 * Fills a title template; the Russian names of placeholders are filled as the English ones. Placeholders whose
 * value is empty vanish together with brackets left empty and doubled spaces, so "{subject} ({kind})" of a class
 * without a kind reads "Физика", not "Физика ()".
 */
export function applyTitleTemplate(template: string, entry: TimetableEntry): string {
  // Each value is cut before it is repeated, so that the work is bounded by the template, not the upstream.
  const values: Record<TitlePlaceholder, string> = {
    subject: clip(entry.subjectName),
    kind: clip(entry.kind),
    room: clip(entry.room),
    building: clip(entry.building.name),
    teacher: clip(teacherName(entry)),
    groups: clip(entry.groups.join(', ')),
    note: clip(entry.note),
  };
  const title = template
    // Known names only: a plain-object lookup would fill "{constructor}" or "{toString}" (subscriber input)
    // with the text of an Object.prototype function.
    .replace(PLACEHOLDER, (whole, name: string) => {
      const known = placeholderNamed(name);
      return known === undefined ? whole : (values[known] as string);
    })
    .replace(/\(\s*\)|\[\s*\]/g, '')
    .replace(/\s{2,}/g, ' ')
    // A separator left dangling by an empty placeholder, at either end: "{kind}: {subject}" without a kind.
    .replace(/\s*[-–—,:]\s*$/, '')
    .replace(/^\s*[-–—,:]\s*/, '')
    .trim();
  return title.length > MAX_SUMMARY_LENGTH ? `${title.slice(0, MAX_SUMMARY_LENGTH - 1).trimEnd()}…` : title;
}

/** A value no longer than a whole SUMMARY may be (longer ones could only be cut later). */
function clip(value: string): string {
  return value.length > MAX_SUMMARY_LENGTH ? value.slice(0, MAX_SUMMARY_LENGTH) : value;
}

/**
 * SUMMARY as calendars show it: a cancelled occurrence's title starts with `cancelledPrefix` (once, however often
 * it is rendered), since several calendar apps ignore STATUS:CANCELLED. Applied when a feed or a Google event is
 * written, never stored: a stored title stays the class's own, so title templates and a changed prefix apply to it.
 */
export function shownSummary(occurrence: Pick<Occurrence, 'summary' | 'status'>, cancelledPrefix: string): string {
  const { summary } = occurrence;
  if (occurrence.status !== 'CANCELLED' || cancelledPrefix === '' || summary.startsWith(cancelledPrefix))
    return summary;
  return cancelledPrefix + summary;
}

/**
 * SUMMARY, LOCATION, DESCRIPTION and CATEGORIES of an entry, worded for whose timetable it is; `extraLines` (the
 * study plan's, see study-plan.ts) end the description.
 */
export function entryText(
  entry: TimetableEntry,
  subscriber: SubscriberOptions = {},
  extraLines: readonly string[] = [],
  wording: EventWording = GROUP_WORDING,
): EntryText {
  const teacher = wording.teacherLine ? teacherName(entry) : '';
  const lines = [
    entry.kind === '' ? '' : capitalise(entry.kind),
    teacher === '' ? '' : `Преподаватель: ${teacher}`,
    entry.groups.length === 0 ? '' : `${entry.groups.length === 1 ? 'Группа' : 'Группы'}: ${entry.groups.join(', ')}`,
    entry.note === '' ? '' : `Примечание: ${entry.note}`,
    ...extraLines,
  ];
  return {
    summary: applyTitleTemplate(subscriber.titleTemplate ?? wording.title, entry) || entry.subjectName,
    location: locationOf(entry),
    description: lines.filter((line) => line !== '').join('\n'),
    categories: entry.kind === '' ? [] : [entry.kind],
  };
}

function capitalise(text: string): string {
  return text.charAt(0).toLocaleUpperCase('ru') + text.slice(1);
}

const SUBGROUP_PATTERNS = [
  // Not `пг\b`: \b only knows ASCII word characters, so it never matched after a Cyrillic letter.
  /(\d+)\s*(?:-?(?:я|ая))?\s*(?:подгр|п\/г|пг(?!\p{L}))/iu,
  /(?:подгр(?:уппа)?|п\/г)\.?\s*(?:№\s*)?(\d+)/iu,
];

/** The subgroup number a note names ("1 подгруппа", "подгр. 2", "2 п/г"), or undefined. */
export function subgroupOf(note: string): number | undefined {
  for (const pattern of SUBGROUP_PATTERNS) {
    const match = pattern.exec(note);
    if (match) return Number(match[1]);
  }
  return undefined;
}

/** What a timetable's `subgroup` and `exclude` options may name: its subgroups, and its kinds lower-cased. */
export interface OptionValues {
  subgroups: number[];
  kinds: string[];
}

/** The subgroups (ascending) and kinds (lower-cased, sorted) of `entries`. */
export function optionValuesOf(entries: readonly TimetableEntry[]): OptionValues {
  const subgroups = new Set<number>();
  const kinds = new Set<string>();
  for (const entry of entries) {
    const subgroup = subgroupOf(entry.note);
    if (subgroup !== undefined) subgroups.add(subgroup);
    const kind = entry.kind.toLocaleLowerCase('ru');
    if (kind !== '') kinds.add(kind);
  }
  return { subgroups: [...subgroups].sort((a, b) => a - b), kinds: [...kinds].sort() };
}

/** Both sets of values, each once, sorted. */
export function mergeOptionValues(a: OptionValues, b: OptionValues): OptionValues {
  return {
    subgroups: [...new Set([...a.subgroups, ...b.subgroups])].sort((x, y) => x - y),
    kinds: [...new Set([...a.kinds, ...b.kinds])].sort(),
  };
}

/** True when a subscriber's options keep this entry. */
export function keepsEntry(entry: TimetableEntry, subscriber: SubscriberOptions = {}): boolean {
  return keepsClass(entry, subscriber);
}

/**
 * True when a subscriber's options keep a class of this kind and note: the kind is not hidden, and the note names
 * no other subgroup. Only these two fields decide, so a change notification that carries them is filtered as its
 * class is in the feed.
 */
export function keepsClass(
  lesson: { readonly kind: string; readonly note: string },
  subscriber: Pick<SubscriberOptions, 'subgroup' | 'excludeKinds'> = {},
): boolean {
  if (subscriber.excludeKinds && subscriber.excludeKinds.length > 0) {
    const kind = lesson.kind.toLocaleLowerCase('ru');
    if (subscriber.excludeKinds.some((excluded) => excluded.toLocaleLowerCase('ru') === kind)) return false;
  }
  if (subscriber.subgroup !== undefined) {
    const subgroup = subgroupOf(lesson.note);
    if (subgroup !== undefined && subgroup !== subscriber.subgroup) return false;
  }
  return true;
}
