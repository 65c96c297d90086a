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
  /** The «Уведомления в Telegram» link (`/telegram/start?…`), when the bot is on and its name known. */
  telegram?: string;
}

/**
 * The path of the Telegram link of a source's page: `/telegram/start?source=…` with the options a notification
 * reads (subgroup, hidden kinds); a personal source's are its subscription's own, so it carries none.
 */
export function telegramStartPath(source: string, options: SubscriberOptions): string {
  const params = new URLSearchParams({ source });
  if (!source.startsWith('personal:')) {
    if (options.subgroup !== undefined) params.set('subgroup', String(options.subgroup));
    if (options.excludeKinds !== undefined && options.excludeKinds.length > 0)
      params.set('exclude', options.excludeKinds.join(','));
  }
  return `/telegram/start?${params.toString()}`;
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
