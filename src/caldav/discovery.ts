/**
 * Finding an account's calendars (RFC 6764 `.well-known/caldav`, RFC 5397 `current-user-principal`, RFC 4791
 * `calendar-home-set`) and reading a calendar's properties. tsdav builds and parses the XML, through our
 * {@link DavHttp} fetch; statuses are judged here, since tsdav folds them into generic errors.
 *
 * The URL a person gives may be a server (`https://caldav.yandex.ru`), a DAV root (`…/remote.php/dav`), or a
 * calendar (`…/calendars/alice/work/`): the first PROPFIND asks that URL what it is.
 */
import type { DAVResponse } from 'tsdav';
import { propfind, serviceDiscovery } from 'tsdav';
import type { CalDavCalendar, Discovery } from './caldav-client.ts';
import { type AnswerSize, type DavHttp, type DavResponse, mayCarryCredentials, shownUrl } from './dav-http.ts';
import { CalDavCalendarGoneError, CalDavForbiddenError, CalDavPermanentError } from './errors.ts';

/** A tsdav call's parsed answer, and the HTTP answer under it. */
export interface DavCall {
  results: DAVResponse[];
  response: DavResponse;
}

/**
 * Runs a tsdav request function with our fetch, and hands back what it parsed with the HTTP answer. Its answer is
 * read under the small cap unless it is a listing of a whole calendar.
 */
export async function davCall(
  http: DavHttp,
  call: (fetchOverDav: typeof fetch) => Promise<DAVResponse[]>,
  answer: AnswerSize = 'small',
): Promise<DavCall> {
  const { fetch: fetchOverDav, last } = http.capture(answer);
  const results = await call(fetchOverDav);
  const response = last();
  if (response === undefined) throw new CalDavPermanentError('no request was made');
  return { results, response };
}

/** Whether the answer is a multistatus (or another success) to read. */
export function succeeded(response: DavResponse): boolean {
  return response.status >= 200 && response.status < 300;
}

/** The properties that describe a calendar. */
export const CALENDAR_PROPS = {
  'd:resourcetype': {},
  'd:displayname': {},
  'cs:getctag': {},
  'd:sync-token': {},
  'd:supported-report-set': {},
  'c:supported-calendar-component-set': {},
};

/** A text property as tsdav parsed it (a string, a number it took for one, CDATA), or undefined when empty. */
export function textOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value && typeof value === 'object') {
    const inner = (value as { _cdata?: unknown; _text?: unknown })._cdata ?? (value as { _text?: unknown })._text;
    if (inner !== undefined) return textOf(inner);
  }
  return undefined;
}

/** The first href of a property holding `<href>` elements (`current-user-principal`, `calendar-home-set`). */
export function hrefOf(value: unknown): string | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const href = (value as { href?: unknown }).href;
  for (const one of Array.isArray(href) ? href : [href]) {
    const text = textOf(one)?.trim();
    if (text) return text;
  }
  return undefined;
}

/** `new URL(href, base)`: relative and absolute hrefs alike (iCloud's are absolute, on a partition host). */
export function resolveHref(href: string, base: string): string {
  try {
    return new URL(href, base).href;
  } catch (error) {
    throw new CalDavPermanentError(`the server sent an unreadable href near ${shownUrl(base)}`, { cause: error });
  }
}

/** The URL with a trailing slash (collections are named so). */
export function asCollection(url: string): string {
  const parsed = new URL(url);
  if (!parsed.pathname.endsWith('/')) parsed.pathname += '/';
  return parsed.href;
}

function names(value: unknown): string[] {
  return value && typeof value === 'object' ? Object.keys(value) : [];
}

function isCalendar(props: Record<string, unknown> | undefined): boolean {
  return names(props?.resourcetype).includes('calendar');
}

/** A calendar's description from its PROPFIND properties. */
export function calendarOf(url: string, props: Record<string, unknown>): CalDavCalendar {
  const reports = (() => {
    const set = (props.supportedReportSet as { supportedReport?: unknown } | undefined)?.supportedReport;
    return (Array.isArray(set) ? set : [set]).flatMap((entry) => names((entry as { report?: unknown })?.report));
  })();
  const components = (() => {
    const comp = (props.supportedCalendarComponentSet as { comp?: unknown } | undefined)?.comp;
    return (Array.isArray(comp) ? comp : comp === undefined ? [] : [comp])
      .map((entry) => textOf((entry as { _attributes?: { name?: unknown } })?._attributes?.name)?.toUpperCase())
      .filter((name) => name !== undefined);
  })();
  return {
    url,
    displayName: textOf(props.displayname) ?? '',
    ctag: textOf(props.getctag),
    syncToken: textOf(props.syncToken),
    supportsSync: reports.includes('syncCollection'),
    // No component set means every component (RFC 4791 §5.2.3).
    holdsEvents: components.length === 0 || components.includes('VEVENT'),
  };
}

/** The response of a multistatus about `url` itself (hrefs compared once resolved; a trailing slash ignored). */
function responseFor(results: readonly DAVResponse[], url: string, base: string): DAVResponse | undefined {
  const wanted = url.replace(/\/$/, '');
  return (
    results.find((result) => result.href && resolveHref(result.href, base).replace(/\/$/, '') === wanted) ??
    (results.length === 1 && results[0]?.href ? results[0] : undefined)
  );
}

/** PROPFIND Depth 0 of a calendar: its description; {@link CalDavCalendarGoneError} when gone or no calendar. */
export async function readCalendar(http: DavHttp, url: string): Promise<CalDavCalendar> {
  const calendarUrl = asCollection(url);
  const { results, response } = await davCall(http, (fetchOverDav) =>
    propfind({ url: calendarUrl, props: CALENDAR_PROPS, depth: '0', fetch: fetchOverDav }),
  );
  if (response.status === 404 || response.status === 410)
    throw new CalDavCalendarGoneError(`${shownUrl(calendarUrl)} is gone`, { status: response.status });
  if (!succeeded(response)) throw http.fail(response, 'PROPFIND');
  const own = responseFor(results, calendarUrl, response.url);
  if (!own?.props || !isCalendar(own.props))
    throw new CalDavCalendarGoneError(`${shownUrl(calendarUrl)} is not a calendar`, { status: response.status });
  return calendarOf(calendarUrl, own.props);
}

/** What the first PROPFIND of the given URL learnt. */
interface Probe {
  response: DavResponse;
  principalUrl?: string | undefined;
  calendar?: CalDavCalendar | undefined;
}

async function probe(http: DavHttp, url: string): Promise<Probe> {
  const { results, response } = await davCall(http, (fetchOverDav) =>
    propfind({
      url,
      props: { ...CALENDAR_PROPS, 'd:current-user-principal': {} },
      depth: '0',
      fetch: fetchOverDav,
    }),
  );
  if (response.status === 401) throw http.fail(response, 'PROPFIND');
  if (!succeeded(response)) return { response };
  const own = responseFor(results, url, response.url) ?? results.find((result) => result.props);
  const href = hrefOf(own?.props?.currentUserPrincipal);
  return {
    response,
    principalUrl: href === undefined ? undefined : resolveHref(href, response.url),
    calendar: own?.props && isCalendar(own.props) ? calendarOf(asCollection(url), own.props) : undefined,
  };
}

/** Refuses an href that would take the password to another site (a server may only point within its own). */
function sameSite(from: string, to: string, what: string): string {
  if (!mayCarryCredentials(new URL(from), new URL(to)))
    throw new CalDavPermanentError(`the server's ${what} is on another site (${new URL(to).host})`);
  return to;
}

/** The calendars of a home (PROPFIND Depth 1), those holding events first. */
async function homeCalendars(http: DavHttp, homeUrl: string): Promise<CalDavCalendar[]> {
  const { results, response } = await davCall(http, (fetchOverDav) =>
    propfind({ url: homeUrl, props: CALENDAR_PROPS, depth: '1', fetch: fetchOverDav }),
  );
  if (!succeeded(response)) throw http.fail(response, 'PROPFIND');
  return results
    .filter((result) => result.href && result.props && isCalendar(result.props))
    .map((result) => calendarOf(asCollection(resolveHref(result.href as string, response.url)), result.props ?? {}));
}

/**
 * Discovers an account from a server, DAV root or calendar URL, proving the password on the way
 * (CalDavAuthError on 401).
 */
export async function discoverAccount(http: DavHttp, givenUrl: string): Promise<Discovery> {
  const given = new URL(givenUrl).href;
  const first = await probe(http, given);
  let principalUrl = first.principalUrl;
  if (principalUrl === undefined) {
    // Not a DAV root: ask the server where CalDAV lives (its answer is a redirect, which tsdav reads).
    const { fetch: fetchOverDav } = http.capture();
    const root = await serviceDiscovery({
      account: { serverUrl: given, accountType: 'caldav' },
      fetch: fetchOverDav,
    });
    const rootUrl = sameSite(given, root, 'CalDAV root');
    const second = rootUrl === given ? first : await probe(http, rootUrl);
    principalUrl = second.principalUrl;
    if (principalUrl === undefined) {
      const failed = [second.response, first.response].find((response) => !succeeded(response));
      if (failed) {
        const error = http.fail(failed, 'PROPFIND');
        throw error.status === 404 || error.status === 405
          ? new CalDavPermanentError(`no CalDAV server at ${shownUrl(given)}`, { status: error.status })
          : error;
      }
      throw new CalDavPermanentError(`${shownUrl(given)} names no current-user-principal`);
    }
  }
  sameSite(given, principalUrl, 'principal');
  const homeUrl = await calendarHome(http, principalUrl, first.calendar?.url);
  const calendars = await homeCalendars(http, homeUrl).catch((error: unknown): CalDavCalendar[] => {
    // A given calendar is enough when the home cannot be listed (some servers refuse Depth 1 there).
    const refused = error instanceof CalDavForbiddenError || error instanceof CalDavPermanentError;
    if (first.calendar !== undefined && refused) return [];
    throw error;
  });
  if (first.calendar && !calendars.some((calendar) => calendar.url === first.calendar?.url))
    calendars.unshift(first.calendar);
  return { principalUrl, homeUrl, calendars };
}

/** The principal's `calendar-home-set`, or the parent of a given calendar when the principal names none. */
async function calendarHome(http: DavHttp, principalUrl: string, calendarUrl: string | undefined): Promise<string> {
  const { results, response } = await davCall(http, (fetchOverDav) =>
    propfind({ url: principalUrl, props: { 'c:calendar-home-set': {} }, depth: '0', fetch: fetchOverDav }),
  );
  if (response.status === 401) throw http.fail(response, 'PROPFIND');
  const own = succeeded(response) ? (responseFor(results, principalUrl, response.url) ?? results[0]) : undefined;
  const href = hrefOf(own?.props?.calendarHomeSet);
  if (href !== undefined) return asCollection(sameSite(principalUrl, resolveHref(href, response.url), 'calendar home'));
  if (calendarUrl !== undefined) return new URL('..', calendarUrl).href;
  if (!succeeded(response)) throw http.fail(response, 'PROPFIND');
  throw new CalDavPermanentError(`${shownUrl(principalUrl)} names no calendar-home-set`);
}
