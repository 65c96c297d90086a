/**
 * Every way to subscribe to one feed, built from its path and the subscriber's options (pure): the feed URL
 * itself, its `webcal://` form (Apple Calendar, Outlook, Thunderbird open it as a subscription), Google
 * Calendar's "add by URL" link, and the page's own URL with the same options (the options form's GET target).
 */
import { DEFAULT_TITLE_TEMPLATE } from '../timetable/event-text.ts';
import type { SubscriberOptions } from '../timetable/types.ts';

/** The links of one feed with one set of options. */
export interface FeedLinks {
  feedUrl: string;
  webcal: string;
  google: string;
  /** The «Уведомления в MAX» link (`/max/start?…`), when the MAX bot is on and its name known. */
  max?: string;
  /** The «Уведомления в Telegram» link (`/telegram/start?…`), when the bot is on and its name known. */
  telegram?: string;
  /** Google push's connect link with the same options (`/google/connect?source=…&subgroup=…`), when it is on. */
  push?: string;
  /** The CalDAV connect page with the same options, to choose a provider on, when CalDAV push is on. */
  caldav?: string;
  /** The CalDAV connect page with Yandex chosen, at its form. */
  caldavYandex?: string;
  /** The CalDAV connect page with iCloud chosen, at its form. */
  caldavIcloud?: string;
}

/** The push links of {@link FeedLinks}, keyed as the preview endpoint answers them (the script rewrites each). */
export type PushLinks = Pick<FeedLinks, 'push' | 'caldav' | 'caldavYandex' | 'caldavIcloud'>;

/**
 * The links that connect a push target of `source` following `options` (as the feed query names them): Google's
 * connect route and the CalDAV connect page, each only where that push is on (`on`). A source key needs no
 * escaping (`group:4242`); a personal source's links carry no token: both routes read the signed-in session.
 */
export function pushLinks(
  source: string,
  options: SubscriberOptions,
  on: { google: boolean; caldav: boolean },
  defaultTitle = DEFAULT_TITLE_TEMPLATE,
): PushLinks {
  const query = optionsQuery(options, defaultTitle).replace(/^\?/, '&');
  const links: PushLinks = {};
  if (on.google) links.push = `/google/connect?source=${source}${query}`;
  if (on.caldav) {
    const page = `/caldav/connect?source=${source}`;
    links.caldav = `${page}${query}`;
    // The form is far below the providers on a phone: a chosen provider's link lands on it.
    links.caldavYandex = `${page}&preset=yandex${query}#caldav-form`;
    links.caldavIcloud = `${page}&preset=icloud${query}#caldav-form`;
  }
  return links;
}

/**
 * The options a notification reads (subgroup, hidden kinds), as a messenger's start link and the e-mail form
 * carry them: `subgroup` and `exclude` (kinds joined by commas), '' when unset. A personal source's are its
 * subscription's own, so it carries none.
 */
export function notifyFields(source: string, options: SubscriberOptions): { subgroup: string; exclude: string } {
  if (source.startsWith('personal:')) return { subgroup: '', exclude: '' };
  return {
    subgroup: options.subgroup === undefined ? '' : String(options.subgroup),
    exclude: (options.excludeKinds ?? []).join(','),
  };
}

/** `/<channel>/start?source=…` with the notification's options ({@link notifyFields}), the unset ones left out. */
function startPath(channel: 'telegram' | 'max', source: string, options: SubscriberOptions): string {
  const params = new URLSearchParams({ source });
  const { subgroup, exclude } = notifyFields(source, options);
  if (subgroup !== '') params.set('subgroup', subgroup);
  if (exclude !== '') params.set('exclude', exclude);
  return `/${channel}/start?${params.toString()}`;
}

/** The path of the Telegram link of a source's page: `/telegram/start?source=…&subgroup=…&exclude=…`. */
export function telegramStartPath(source: string, options: SubscriberOptions): string {
  return startPath('telegram', source, options);
}

/** The path of the MAX link of a source's page: `/max/start?…`, the same query as the Telegram link's. */
export function maxStartPath(source: string, options: SubscriberOptions): string {
  return startPath('max', source, options);
}

/**
 * The query string (with its `?`, or empty) of `options` as the feed routes read them: `subgroup`, `exclude`
 * (kinds joined by commas), `alarm` and `title`; a title equal to the feed's default template (`defaultTitle`: a
 * teacher's feed has its own, see event-text.ts) is left out.
 */
export function optionsQuery(options: SubscriberOptions, defaultTitle = DEFAULT_TITLE_TEMPLATE): string {
  const params = new URLSearchParams();
  if (options.subgroup !== undefined) params.set('subgroup', String(options.subgroup));
  if (options.excludeKinds !== undefined && options.excludeKinds.length > 0)
    params.set('exclude', options.excludeKinds.join(','));
  if (options.alarmMinutes !== undefined) params.set('alarm', String(options.alarmMinutes));
  if (options.titleTemplate !== undefined && options.titleTemplate !== defaultTitle)
    params.set('title', options.titleTemplate);
  const query = params.toString();
  return query === '' ? '' : `?${query}`;
}

/** The links of the feed at `feedPath` (e.g. `/feeds/groups/4242.ics`) on `publicUrl`. */
export function feedLinks(
  publicUrl: string,
  feedPath: string,
  options: SubscriberOptions,
  defaultTitle = DEFAULT_TITLE_TEMPLATE,
): FeedLinks {
  const feedUrl = `${publicUrl.replace(/\/+$/, '')}${feedPath}${optionsQuery(options, defaultTitle)}`;
  const webcal = feedUrl.replace(/^https?:\/\//, 'webcal://');
  return {
    feedUrl,
    webcal,
    google: `https://calendar.google.com/calendar/r?cid=${encodeURIComponent(webcal)}`,
  };
}
