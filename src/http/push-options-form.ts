/**
 * The feed options a push target is to follow, read from a page's query or form (`subgroup`, `exclude`, `alarm`,
 * `title`, named as in a feed URL) and checked against the timetable as its page checks them: the connect page,
 * Google's connect route and the manage pages' options form all read them here. Empty fields are no option, a
 * title equal to the timetable's default is none; a refused field keeps what was typed, so that the page can show
 * it again beside the reason. A save on a manage page answers with a redirect back to it that says so
 * (`?done=options`, as the personal page's forms do) and carries what the calendar followed before, read here too.
 */
import type { OptionRefusedError } from '../serving/errors.ts';
import { type OptionsFitDeps, optionsMisfitsFor } from '../serving/variant-render.ts';
import { defaultTitleTemplate, type OptionValues } from '../timetable/event-text.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import { optionsQuery, pushLinks } from '../web/feed-links.ts';
import { filledOptionFields, readSubscriberOptions } from './subscriber-query.ts';

/** What reading push options needs: the subgroups and kinds a timetable has (ever had). */
export interface PushOptionsFormDeps {
  readonly snapshots: OptionsFitDeps;
}

/** The options of a query or form, as typed and as read. */
export interface ChosenPushOptions {
  /** The option fields that hold something, as typed (a refused value included). */
  typed: Record<string, string | string[]>;
  /** The options read; meaningful only when nothing was refused. */
  options: SubscriberOptions;
  /** A refusal per bad field (its `fieldWords` say why, beside the field); empty when the options fit. */
  refused: OptionRefusedError[];
  /** The subgroups and kinds the timetable offers, for a form. */
  values: OptionValues;
  /** The timetable's title template when none is chosen. */
  defaultTitle: string;
}

/** Reads and checks the push options in `fields` (a parsed query string or form) for a calendar of `source`. */
export async function readPushOptions(
  ctx: PushOptionsFormDeps,
  source: SourceKey,
  fields: unknown,
): Promise<ChosenPushOptions> {
  const defaultTitle = defaultTitleTemplate(sourceOf(source).kind);
  const typed = filledOptionFields(textFields(fields), defaultTitle);
  const read = readSubscriberOptions(typed);
  const { misfits, values } = await optionsMisfitsFor(ctx.snapshots, source, read.options);
  const refused = [...read.refused, ...misfits];
  return { typed, options: read.options, refused, values, defaultTitle };
}

/**
 * What a page's connection passes on (`options` and `newTargetOptions` of a connect request): the options read
 * when any field was given, and `{}` for a new target either way. No field at all leaves a target connected
 * before with its own options: the manage page's «Подключить заново» of a calendar that follows none (connected
 * before push followed options) must not take over its reminders.
 */
export function connectOptions(chosen: Pick<ChosenPushOptions, 'typed' | 'options'>): {
  options?: SubscriberOptions;
  newTargetOptions: SubscriberOptions;
} {
  const given = Object.keys(chosen.typed).length > 0;
  return given ? { options: chosen.options, newTargetOptions: chosen.options } : { newTargetOptions: {} };
}

/**
 * The query string (`&subgroup=2&alarm=15`, or empty) of option fields as typed, to carry them through links
 * (a provider's choice, the way back to the timetable's page) without reading them again.
 */
export function typedQuery(typed: Readonly<Record<string, string | readonly string[]>>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(typed))
    for (const item of typeof value === 'string' ? [value] : value) params.append(name, item);
  const query = params.toString();
  return query === '' ? '' : `&${query}`;
}

/**
 * The connect link of `kind` for a calendar of `source` following `options`, as the timetable page makes it
 * (`pushLinks`); a target without options gets one without option fields.
 */
export function connectUrl(kind: 'google' | 'caldav', source: SourceKey, options?: SubscriberOptions): string {
  const links = pushLinks(
    source,
    options ?? {},
    { google: true, caldav: true },
    defaultTitleTemplate(sourceOf(source).kind),
  );
  return String(kind === 'google' ? links.push : links.caldav);
}

/** The `?done=` word of a manage page after its options form was saved. */
const OPTIONS_SAVED = 'options';

/**
 * Where a manage page's options form sends the browser after a save: back to the page at `path`, with
 * `?done=options` and, in `was`, the options the calendar followed before (a feed URL's query, empty for none),
 * so that the page says what the save changed. It has no fragment: browsers skip `autofocus` at one.
 */
export function optionsSavedPath(path: string, before: SubscriberOptions | undefined, defaultTitle: string): string {
  const was = optionsQuery(before ?? {}, defaultTitle).replace(/^\?/, '');
  return `${path}?${new URLSearchParams({ done: OPTIONS_SAVED, was }).toString()}`;
}

/**
 * What the manage page's query says of a save ({@link optionsSavedPath}): the options followed before it, or
 * undefined when the query names no save. A value that does not read (a hand-made URL) is no option.
 */
export function optionsSavedOutcome(query: unknown): { before: SubscriberOptions } | undefined {
  const { done, was } = textFields(query);
  if (done !== OPTIONS_SAVED || typeof was !== 'string') return undefined;
  return { before: readSubscriberOptions(Object.fromEntries(new URLSearchParams(was))).options };
}

/** The string and string-array fields of a parsed query or form; anything else is no field. */
function textFields(fields: unknown): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  if (typeof fields !== 'object' || fields === null) return kept;
  for (const [name, value] of Object.entries(fields)) {
    if (typeof value === 'string') kept[name] = value;
    else if (Array.isArray(value) && value.every((item) => typeof item === 'string')) kept[name] = value;
  }
  return kept;
}
