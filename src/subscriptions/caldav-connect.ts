/**
 * Connecting a CalDAV calendar (Yandex Calendar, iCloud, Nextcloud, Fastmail, any RFC 4791 server) to a source.
 * The connect page and the admin API come here with a server URL, a login and an app password: the password is
 * proved against the server (discovery) before anything is stored, the calendar is made (MKCALENDAR) or the one
 * given is checked, the target is stored with the password sealed, the source becomes active and the first push
 * is queued. A new password for a target that needs one comes here too. Disconnecting is `caldav-disconnect.ts`.
 */

import type { CalDavCalendar, CalDavClient, CalDavCredentials, Discovery } from '../caldav/caldav-client.ts';
import {
  type CalDavTarget,
  type CalDavTargetStore,
  caldavDetailFields,
  caldavDetails,
  calendarDetailFields,
} from '../caldav/caldav-targets.ts';
import {
  CalDavBudgetError,
  CalDavCalendarGoneError,
  CalDavResponseTooLargeError,
  MkcalendarRefusedError,
} from '../caldav/errors.ts';
import { withinBudget } from '../caldav/time-budget.ts';
import type { Config } from '../config.ts';
import type { ActivationDeps } from '../jobs/activation.ts';
import { enqueuePush } from '../jobs/queues.ts';
import { requireFetched } from '../jobs/verify-source.ts';
import type { Logger } from '../logger.ts';
import { hashToken } from '../security/tokens.ts';
import type { CalendarChoice } from '../store/push-target-layout.ts';
import { newTargetId } from '../store/push-target-store.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import { CalDavNoCalendarError, CalDavUrlError } from './errors.ts';
import * as core from './push-connect.ts';

/** The colour of a calendar we make (Apple's `calendar-color`; Yandex and Nextcloud show it too). */
export const CALENDAR_COLOR = '#1E88E5';

/** What a connection is made of. `source` must be valid (see `parseSource`). */
export interface CalDavConnectRequest {
  source: SourceKey;
  /** The server (`https://caldav.yandex.ru`) or a calendar URL: where discovery starts. */
  url: string;
  username: string;
  password: string;
  /** Push into this existing calendar collection instead of making one (it is never deleted by us). */
  calendarUrl?: string | undefined;
  /**
   * The feed options the calendar follows (validated: see `parsePushOptions`); absent: the whole timetable.
   * A repeated connection that gives them replaces the target's.
   */
  options?: SubscriberOptions | undefined;
  /**
   * The options a new target follows when the connection gives no `options`. A page's connection says `{}`: a
   * calendar connected there follows options (its reminders are ours), while a connection naming none leaves an
   * existing target's as they are (a target from before keeps its whole timetable and the person's reminders).
   */
  newTargetOptions?: SubscriberOptions | undefined;
  /**
   * Aborts when whoever asked is gone (the page's client closed the connection): the server is asked nothing
   * more, and what is under way is cancelled.
   */
  signal?: AbortSignal | undefined;
}

/** A connected target. `manageToken` is the only copy there will ever be. */
export interface CalDavConnected {
  id: string;
  calendarUrl: string;
  calendarName: string;
  calendarOwned: boolean;
  manageToken: string;
  /** True when a connection of the same account for the same source and calendar was made again. */
  reused: boolean;
}

/** What the CalDAV side gives a connection: the targets, and a client for an account. */
export interface CalDavConnectServices {
  readonly targets: Pick<
    CalDavTargetStore,
    | 'canStoreCredentials'
    | 'create'
    | 'get'
    | 'idsForSource'
    | 'replaceCredential'
    | 'replaceCalendar'
    | 'updateOptions'
    | 'rotateManageToken'
    | 'scheduleReconcile'
  >;
  /** A client for one account (every request waits for its host's budget; `signal` cancels them). */
  client(credentials: CalDavCredentials, signal?: AbortSignal): CalDavClient;
}

/** What {@link connectCaldavTarget} uses. */
export type CalDavConnectDeps = core.PushConnectDeps & {
  readonly config: Pick<
    Config,
    'timezone' | 'caldavReconcileIntervalMs' | 'caldavAllowPrivate' | 'caldavRequestTimeoutMs'
  >;
  readonly logger: Logger;
  readonly caldav: CalDavConnectServices;
};

/** How long a connection may hold its (account, source) lock: discovery and MKCALENDAR take a few requests. */
const CONNECT_LOCK_MS = 60_000;

/** Throws SecretKeyMissingError unless passwords can be sealed (a `SECRET_KEY` is configured). */
export function requireCaldavPush(ctx: { readonly caldav: Pick<CalDavConnectServices, 'targets'> }): void {
  core.requireSealing(ctx.caldav);
}

/** CalDAV as a connection sees it. */
function caldavKind(ctx: CalDavConnectDeps): core.ConnectKind {
  return { kind: 'caldav', targets: ctx.caldav.targets, reconcileIntervalMs: ctx.config.caldavReconcileIntervalMs };
}

/**
 * A server or calendar URL as we will ask it: http(s) only (plain http only where private hosts are allowed,
 * as tests and a home server on a LAN are), no login in it, no fragment. Throws {@link CalDavUrlError}.
 * Whether the host is a public one is the adapter's check, made on the addresses it resolves to.
 */
export function checkedUrl(text: string, field: string, allowPlainHttp: boolean): string {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new CalDavUrlError(field, 'not-url');
  }
  if (url.protocol !== 'https:' && !(allowPlainHttp && url.protocol === 'http:'))
    throw new CalDavUrlError(field, 'not-https');
  if (url.username !== '' || url.password !== '') throw new CalDavUrlError(field, 'credentials');
  url.hash = '';
  return url.href;
}

/**
 * Connects a CalDAV calendar for `request.source`. Throws SecretKeyMissingError without a `SECRET_KEY`,
 * {@link CalDavUrlError} for a URL we will not ask, UnknownSourceError for a personal source without
 * subscription, SourceNotFoundError / SourceNotReadyError as the first fetch ends, the adapter's CalDavAuthError
 * when the server refuses the login or password (nothing is stored), CalDavCalendarGoneError when `calendarUrl`
 * is no calendar for events, {@link CalDavNoCalendarError} when the server makes no calendar for us (with the
 * account's calendars to pick from), and the adapter's other errors.
 */
export async function connectCaldavTarget(
  ctx: CalDavConnectDeps,
  request: CalDavConnectRequest,
): Promise<CalDavConnected> {
  requireCaldavPush(ctx);
  const plainHttp = ctx.config.caldavAllowPrivate;
  const checked: CalDavConnectRequest = {
    ...request,
    url: checkedUrl(request.url, 'url', plainHttp),
    ...(request.calendarUrl === undefined ? {} : { calendarUrl: collectionUrl(request.calendarUrl, plainHttp) }),
  };
  // A target keeps its source refreshed for good: never for an id the university has not answered once.
  await requireFetched(ctx, checked.source);
  const name = await core.sourceName(ctx, checked.source);
  // Two submits of one form (a double tap, a retried request) take turns. The account is known by its server's
  // host and login; the password never names a key.
  const account = hashToken(`${new URL(checked.url).host}\n${checked.username}`).slice(0, 32);
  const turn = { account, source: checked.source, lockMs: CONNECT_LOCK_MS };
  return core
    .takingTurns(ctx, caldavKind(ctx), turn, () =>
      withinConnectBudget(ctx, request.signal, checked.url, (signal) => connect(ctx, { ...checked, signal }, name)),
    )
    .catch((error: unknown) => noteRefusedAnswer(ctx.logger, error));
}

/**
 * Runs a connect's requests within twice a request's deadline (the admin API's client may wait for ever, unlike
 * a browser; a server answering each request just in time would hold the connect as long as it liked), which is
 * also about how long the account's turn is held (`CONNECT_LOCK_MS`).
 */
function withinConnectBudget<T>(
  ctx: { readonly config: Pick<Config, 'caldavRequestTimeoutMs'> },
  signal: AbortSignal | undefined,
  url: string,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const budgetMs = 2 * ctx.config.caldavRequestTimeoutMs;
  const host = new URL(url).host;
  const expired = () =>
    new CalDavBudgetError(`connecting to ${host} took longer than ${budgetMs} ms`, {
      host,
      reason: 'connect-timeout',
      timeoutMs: budgetMs,
    });
  return withinBudget(signal, budgetMs, expired, work);
}

/**
 * Logs, once, an answer refused for its size or shape (with the host and how much was read: the trace of a
 * hostile server), and rethrows the error.
 */
function noteRefusedAnswer(logger: Logger, error: unknown): never {
  if (error instanceof CalDavResponseTooLargeError)
    logger.warn(
      { host: error.host, measure: error.measure, limit: error.limit, bytesRead: error.bytesRead },
      'caldav answer refused: no real server sends one like it',
    );
  throw error;
}

/** {@link connectCaldavTarget} once the checks passed, under the account's lock. */
async function connect(ctx: CalDavConnectDeps, request: CalDavConnectRequest, name: string): Promise<CalDavConnected> {
  const client = ctx.caldav.client({ username: request.username, password: request.password }, request.signal);
  // Proves the password before anything else is asked or stored: 401 is CalDavAuthError.
  const discovery = await client.discover(request.url);
  const existing = await existingTarget(ctx, request, discovery);
  if (existing !== undefined) return reconnect(ctx, existing, request, { client, discovery, name });
  // Chosen first: our calendar is named by it, so that an operator can tell whose a calendar is.
  const id = newTargetId();
  const chosen = await chooseCalendar(ctx, client, discovery, request.calendarUrl, name, id);
  const target = {
    id,
    source: request.source,
    secret: request.password,
    calendarId: chosen.calendar.url,
    calendarOwned: chosen.owned,
    calendarName: chosen.calendar.displayName || name,
    details: caldavDetailFields(chosen.calendar.url, {
      serverUrl: request.url,
      homeUrl: discovery.homeUrl,
      username: request.username,
      supportsSync: chosen.calendar.supportsSync,
    }),
    options: request.options ?? request.newTargetOptions,
    now: ctx.now(),
  };
  const created = await core.storeTarget(caldavKind(ctx), target, (url) => client.deleteCalendar(url));
  ctx.logger.info(
    {
      target: created.id,
      source: request.source,
      host: new URL(chosen.calendar.url).host,
      calendarOwned: chosen.owned,
    },
    'caldav target connected',
  );
  await core.startPushing(ctx, caldavKind(ctx), created.id, request.source);
  return {
    id: created.id,
    calendarUrl: chosen.calendar.url,
    calendarName: chosen.calendar.displayName || name,
    calendarOwned: chosen.owned,
    manageToken: created.manageToken,
    reused: false,
  };
}

/**
 * The target a connection repeats: one of the same source, server host and login, in the same calendar (the
 * one given, or one of ours when none is). It keeps its calendar and index and takes the (checked) password.
 */
async function existingTarget(
  ctx: CalDavConnectDeps,
  request: CalDavConnectRequest,
  discovery: Discovery,
): Promise<CalDavTarget | undefined> {
  const host = new URL(request.url).host;
  return core.connectedBefore(ctx.caldav.targets, request.source, request.calendarUrl, (target) => {
    const details = caldavDetails(target);
    if (details.username !== request.username) return false;
    return new URL(details.serverUrl).host === host || details.homeUrl === discovery.homeUrl;
  });
}

/**
 * A repeated connection: the new password (already proved), the options it gives (if any), a new manage token,
 * a full comparison (which writes only the difference). A target whose calendar was deleted on the server gets a
 * new one of ours (or its given one again, when it is back).
 */
async function reconnect(
  ctx: CalDavConnectDeps,
  target: CalDavTarget,
  request: Pick<CalDavConnectRequest, 'password' | 'options'>,
  account: { client: CalDavClient; discovery: Discovery; name: string },
): Promise<CalDavConnected> {
  const moved = target.status === 'calendar-deleted' ? await liveCalendar(ctx, target, account) : undefined;
  const manageToken = await core.renewTarget(ctx, caldavKind(ctx), target, {
    secret: request.password,
    calendar: moved,
    options: request.options,
    deleteCalendar: (url) => account.client.deleteCalendar(url),
  });
  ctx.logger.info({ target: target.id, source: target.source }, 'caldav target connected again');
  await core.startPushing(ctx, caldavKind(ctx), target.id, target.source);
  return {
    id: target.id,
    calendarUrl: moved?.calendarId ?? target.calendarId,
    calendarName: moved?.calendarName ?? target.calendarName,
    calendarOwned: target.calendarOwned,
    manageToken,
    reused: true,
  };
}

/** A live calendar for a target whose calendar was deleted: a new one of ours, or its given one if back. */
async function liveCalendar(
  ctx: CalDavConnectDeps,
  target: CalDavTarget,
  account: { client: CalDavClient; discovery: Discovery; name: string },
): Promise<CalendarChoice> {
  const { client, discovery, name } = account;
  // A new name: the deleted one may still be taken (Nextcloud's trash bin).
  const slugId = `${target.id}-${Date.now().toString(36)}`;
  const given = target.calendarOwned ? undefined : target.calendarId;
  const chosen = await chooseCalendar(ctx, client, discovery, given, name, slugId);
  return {
    calendarId: chosen.calendar.url,
    calendarOwned: chosen.owned,
    calendarName: chosen.calendar.displayName || name,
    details: calendarDetailFields(chosen.calendar.url, chosen.calendar.supportsSync),
  };
}

/**
 * The calendar to push into: the given one (it must be a calendar for events; never ours to delete), else a
 * new one of ours under the calendar home. A server that makes none (MKCALENDAR refused) is answered with the
 * account's event calendars, for the person to pick one.
 */
async function chooseCalendar(
  ctx: CalDavConnectDeps,
  client: CalDavClient,
  discovery: Discovery,
  calendarUrl: string | undefined,
  name: string,
  slugId: string,
): Promise<{ calendar: CalDavCalendar; owned: boolean }> {
  if (calendarUrl !== undefined) {
    const calendar = await client.getCalendar(calendarUrl);
    if (!calendar.holdsEvents)
      throw new CalDavCalendarGoneError('this collection holds no events', { reason: 'no VEVENT' });
    return { calendar, owned: false };
  }
  // The slug is never reused: Nextcloud keeps a deleted calendar's name taken while it is in the trash bin.
  const slug = `timetable-sync-${slugId}`;
  try {
    const calendar = await client.makeCalendar(discovery.homeUrl, slug, name, CALENDAR_COLOR);
    return { calendar, owned: true };
  } catch (error) {
    if (!(error instanceof MkcalendarRefusedError)) throw error;
    ctx.logger.info({ host: new URL(discovery.homeUrl).host }, 'caldav server makes no calendar: asking for one');
    const calendars = discovery.calendars.filter((calendar) => calendar.holdsEvents);
    throw new CalDavNoCalendarError(
      calendars.map((calendar) => ({ url: calendar.url, displayName: calendar.displayName })),
      { cause: error },
    );
  }
}

/** A calendar URL as a collection's: checked as {@link checkedUrl}, ending in `/`. */
function collectionUrl(text: string, plainHttp: boolean): string {
  const url = checkedUrl(text, 'calendarUrl', plainHttp);
  return url.endsWith('/') ? url : `${url}/`;
}

/** What {@link changeCaldavPassword} uses. */
export type PasswordChangeDeps = ActivationDeps & {
  readonly config: Pick<Config, 'caldavRequestTimeoutMs'>;
  readonly logger: Logger;
  readonly caldav: CalDavConnectServices;
};

/**
 * A new app password for target `id` (the old one was revoked, or the person made a new one): proved against
 * the server first (CalDavAuthError, and nothing changes), then stored; a target that needed a password is
 * active again and pushes at once. Answers false when there is no such target.
 */
export async function changeCaldavPassword(
  ctx: PasswordChangeDeps,
  id: string,
  password: string,
  signal?: AbortSignal,
): Promise<boolean> {
  requireCaldavPush(ctx);
  const target = await ctx.caldav.targets.get(id);
  if (target === undefined) return false;
  const username = caldavDetails(target).username;
  await withinConnectBudget(ctx, signal, target.calendarId, (within) =>
    ctx.caldav.client({ username, password }, within).discover(target.calendarId),
  ).catch((error: unknown) => noteRefusedAnswer(ctx.logger, error));
  if (!(await ctx.caldav.targets.replaceCredential(id, password, ctx.now()))) return false;
  ctx.logger.info({ target: id, source: target.source }, 'caldav target password replaced');
  await enqueuePush(ctx.queues, 'caldav', id, target.source, 'connect');
  return true;
}
