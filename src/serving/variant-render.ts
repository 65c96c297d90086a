/**
 * Rendering one subscriber variant of a feed (`?subgroup=…&exclude=…&title=…`). Anyone may ask for any variant,
 * so the work is bounded: options the timetable cannot honour are refused before rendering, the request yields
 * to the event loop before the synchronous render, the result has a byte cap, and compression runs on libuv's
 * thread pool rather than on the event loop (the stored default feed is compressed by the worker instead).
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { type FeedSettings, renderVariant } from '../feeds/build-feed.ts';
import { compressFeed, etagOf } from '../store/feed-store.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import { mergeOptionValues, type OptionValues, optionValuesOf } from '../timetable/event-text.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import { FeedUnavailableError, OptionRefusedError, VariantRefusedError } from './errors.ts';
import { FeedForms, type ServedFeed } from './feed-forms.ts';
import type { ParsedSubscriberQuery } from './variant-query.ts';

/** Seconds a client is told to wait when its timetable's snapshot is not there yet. */
const PREPARING_RETRY_SECONDS = 10;
/** Smallest byte cap of a variant, whatever the size of its default feed. */
const MIN_VARIANT_CAP_BYTES = 1024 * 1024;
/**
 * A variant may be this many times its default feed. Titles are capped at 250 characters and an alarm adds a
 * few lines per event, so an honest variant stays well under twice its feed; more means something is wrong.
 */
const VARIANT_GROWTH_CAP = 4;

/** The byte cap of a variant of a feed whose identity body is `feedLength` bytes. */
export function variantCapBytes(feedLength: number): number {
  return Math.max(MIN_VARIANT_CAP_BYTES, VARIANT_GROWTH_CAP * feedLength);
}

/** How one variant is rendered, beyond what its query asks for. */
export interface VariantRenderOptions {
  /** The variant's Last-Modified is never before this (ms): a personal feed's saved options changed then. */
  notBefore?: number | undefined;
  /** Byte cap of the variant; default {@link variantCapBytes} of its base feed (tests set a small one). */
  capBytes?: number | undefined;
}

/** What rendering a variant reads: the stored timetable and the feed settings. */
export interface VariantRenderDeps {
  readonly snapshots: Pick<SnapshotStore, 'load' | 'optionValues'>;
  readonly config: FeedSettings;
}

/**
 * Renders and compresses the variant of `base` that `query` asks for; its Last-Modified is the base feed's, or
 * `options.notBefore` when later. Throws {@link VariantRefusedError} when an option names something this
 * timetable does not have or the variant would exceed its cap, {@link FeedUnavailableError} when the
 * timetable's snapshot is not stored yet.
 */
export async function renderSubscriberVariant(
  ctx: VariantRenderDeps,
  source: SourceKey,
  base: ServedFeed,
  query: ParsedSubscriberQuery,
  options: VariantRenderOptions = {},
): Promise<ServedFeed> {
  const notBefore = options.notBefore ?? 0;
  const [{ snapshot, published }, everHad] = await Promise.all([
    ctx.snapshots.load(source),
    ctx.snapshots.optionValues(source),
  ]);
  if (snapshot === undefined || published === undefined) {
    throw new FeedUnavailableError(
      'TIMETABLE_NOT_READY',
      {
        en: 'this timetable is being prepared; try again in a few seconds',
        ru: 'это расписание готовится; попробуйте снова через несколько секунд',
      },
      PREPARING_RETRY_SECONDS,
    );
  }
  checkOptionsFit(mergeOptionValues(everHad, optionValuesOf(snapshot.entries)), query.options);
  // Parsing the snapshot was one slice of synchronous work; let waiting requests (health checks) in before the next.
  await yieldToEventLoop();
  const ics = renderVariant(snapshot, published, ctx.config, query.options, base.staleSince);
  const body = Buffer.from(ics, 'utf8');
  const cap = options.capBytes ?? variantCapBytes(base.forms.identityLength);
  if (body.length > cap) {
    throw new VariantRefusedError('FEED_TOO_LARGE', {
      en: `these options make the feed ${body.length} bytes, more than its limit of ${cap}: use a shorter title`,
      ru: `с этими настройками лента занимает ${body.length} байт, больше своего предела в ${cap}: сократите название`,
    });
  }
  await yieldToEventLoop();
  const { gzip, brotli } = await compressFeed(body);
  return {
    // Variants are made in the api and served whole: every form is made at once.
    forms: new FeedForms(gzip, { identity: body, brotli }),
    etag: etagOf(body),
    lastModified: Math.max(base.lastModified, notBefore),
    staleSince: base.staleSince,
  };
}

/**
 * Refuses ({@link OptionRefusedError}) a `subgroup` the timetable's notes never named and an `exclude` kind none of its classes ever had,
 * naming what there is: a typo would otherwise silently give a feed without the filter the subscriber asked
 * for. `values` are all the timetable ever had, not only now: a subscribed URL stays valid when a term's
 * classes give way to exams, holidays or an empty timetable, and keeps receiving the cancellations.
 */
export function checkOptionsFit(values: OptionValues, options: SubscriberOptions): void {
  const [first] = optionsMisfits(values, options);
  if (first !== undefined) throw first;
}

/** Every refusal {@link checkOptionsFit} could throw, one per option (subgroup first); empty when the options fit. */
export function optionsMisfits(values: OptionValues, options: SubscriberOptions): OptionRefusedError[] {
  const { subgroups, kinds } = values;
  const misfits: OptionRefusedError[] = [];
  if (options.subgroup !== undefined && !subgroups.includes(options.subgroup)) {
    const list = subgroups.join(', ');
    const none = subgroups.length === 0;
    misfits.push(
      new OptionRefusedError(
        'subgroup',
        {
          en: `query parameter subgroup: this timetable has no subgroup ${options.subgroup}; ${none ? 'it has no subgroups' : `its subgroups are ${list}`}`,
          ru: `параметр запроса subgroup: в этом расписании нет подгруппы ${options.subgroup}; ${none ? 'подгрупп в нём нет' : `его подгруппы: ${list}`}`,
        },
        {
          en: `This timetable has no subgroup ${options.subgroup}. ${none ? 'It has no subgroups: choose "All subgroups".' : `Choose one of ${list}, or "All subgroups".`}`,
          ru: `В этом расписании нет подгруппы ${options.subgroup}. ${none ? 'Подгрупп в нём нет: выберите «Все подгруппы».' : `Выберите одну из: ${list} — или «Все подгруппы».`}`,
        },
      ),
    );
  }
  const unknown = (options.excludeKinds ?? []).filter((kind) => !kinds.includes(kind.toLocaleLowerCase('ru')));
  if (unknown.length > 0) {
    const named = unknown.map((kind) => JSON.stringify(kind)).join(', ');
    const list = kinds.join(', ');
    const none = kinds.length === 0;
    misfits.push(
      new OptionRefusedError(
        'exclude',
        {
          en: `query parameter exclude: ${named} is not a kind of class in this timetable; ${none ? 'its classes have no kinds' : `its kinds are ${list}`}`,
          ru: `параметр запроса exclude: ${named} — не вид занятий этого расписания; ${none ? 'у его занятий нет видов' : `его виды занятий: ${list}`}`,
        },
        {
          en: `${named} ${unknown.length === 1 ? 'is not a kind' : 'are not kinds'} of class in this timetable. ${none ? 'Its classes have no kinds: tick none.' : `Its kinds are ${list}.`}`,
          ru: `${unknown.map((kind) => `«${kind}»`).join(', ')} — ${unknown.length === 1 ? 'не вид' : 'не виды'} занятий этого расписания. ${none ? 'У его занятий нет видов: не отмечайте ничего.' : `Есть такие: ${list}.`}`,
        },
      ),
    );
  }
  return misfits;
}

/** What {@link optionsMisfitsFor} reads: the values a timetable ever had, its current snapshot's included. */
export type OptionsFitDeps = Pick<SnapshotStore, 'timetableOptionValues'>;

/**
 * Whether `options` fit the timetable of `source`, as every place that takes options for a calendar checks them
 * (the admin API, the push pages, the personal page's saved options): {@link optionsMisfits} against every value
 * the timetable ever had, its current snapshot's included, read from the small set each publication keeps
 * rather than from the snapshot. Before the first fetch there is nothing to check against, and none is refused.
 * `values` are what a form offers.
 */
export async function optionsMisfitsFor(
  snapshots: OptionsFitDeps,
  source: SourceKey,
  options: SubscriberOptions,
): Promise<{ misfits: OptionRefusedError[]; values: OptionValues }> {
  const values = await snapshots.timetableOptionValues(source);
  if (values === undefined) return { misfits: [], values: { subgroups: [], kinds: [] } };
  return { misfits: optionsMisfits(values, options), values };
}
