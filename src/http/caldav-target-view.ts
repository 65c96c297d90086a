/**
 * What CalDAV targets add to the views every kind shares (push-target-view.ts): the server, the calendar's URL
 * and the login beside the shared state; and the words of a connection's failures, for the fields of its form
 * or body.
 */
import { type CalDavTarget, caldavDetails } from '../caldav/caldav-targets.ts';
import {
  CalDavAddressRefusedError,
  CalDavAuthError,
  CalDavCalendarGoneError,
  CalDavError,
  CalDavForbiddenError,
  CalDavRateLimitError,
  CalDavResponseTooLargeError,
  CalDavTimeoutError,
  CalDavTransientError,
} from '../caldav/errors.ts';
import { type CalDavPendingDeps, caldavPendingChanges } from '../caldav/pending-resources.ts';
import { pendingPush } from '../jobs/job-status.ts';
import { retryAfterSeconds } from '../lib/retry-after.ts';
import type { PushIndex } from '../store/push-index.ts';
import { CalDavNoCalendarError, CalDavUrlError, type CalendarChoice } from '../subscriptions/errors.ts';
import { HttpError } from './errors.ts';
import type { LeftBehind, PushViewSources } from './push-target-view.ts';

/** What a CalDAV target's view reads: its queued push, its pending changes and its index. */
export type CalDavTargetViewDeps = {
  readonly caldav: { readonly targets: { index(id: string): Pick<PushIndex, 'read' | 'size'> } };
} & Parameters<typeof pendingPush>[0] &
  CalDavPendingDeps;

/** Where the views of CalDAV targets read their queued push, pending changes and own fields. */
export function caldavViewSources(ctx: CalDavTargetViewDeps): PushViewSources<CalDavTarget> {
  return {
    queuedPush: (id) => pendingPush(ctx, 'caldav', id),
    pendingChanges: (target) => caldavPendingChanges(ctx, target),
    indexSize: (id) => ctx.caldav.targets.index(id).size(),
    ownFields: (target) => {
      const details = caldavDetails(target);
      return {
        kind: 'caldav',
        serverUrl: details.serverUrl,
        calendarUrl: target.calendarId,
        username: details.username,
        needsPassword: target.status === 'needs-password',
      };
    },
  };
}

/** What the target wrote that a disconnection could not delete: its calendar is named, to clean it by hand. */
export const CALDAV_LEFT_BEHIND: LeftBehind = {
  code: 'CALDAV_NOT_CLEANED',
  field: 'calendarUrl',
  words: (calendarUrl, error) => ({
    en: `the target was removed, but what it wrote in ${calendarUrl} could not all be deleted (${error}); delete it by hand`,
    ru: `подключение удалено, но записанное им в ${calendarUrl} удалить не удалось (${error}); удалите это вручную`,
  }),
};

/** The 404 of a CalDAV target id nobody has. */
export function caldavTargetNotFound(id: string): HttpError {
  return new HttpError('CALDAV_TARGET_NOT_FOUND', {
    en: `no CalDAV target ${id}`,
    ru: `нет подключения CalDAV-календаря ${id}`,
  });
}

/** A failed connection as an HTTP error, with the account's calendars when the server made none for us. */
export interface ConnectFailure {
  error: HttpError;
  calendars?: readonly CalendarChoice[];
  /** The request field a refused URL was given in (`url`, `calendarUrl`), for the form to mark the right one. */
  field?: string;
}

/** Who reads a failure: an API client (the words name the body's fields) or a person at the connect form. */
export type FailureReader = 'api' | 'page';

/**
 * The connection's failures in words for the fields of its form or body: the password the server refused, the
 * calendar it does not have, the server that makes no calendar, the server that cannot be reached. Undefined
 * for errors that are not the server's (they answer as the catalog says).
 */
export function caldavConnectFailure(error: unknown, reader: FailureReader = 'api'): ConnectFailure | undefined {
  if (error instanceof CalDavUrlError) {
    const words =
      reader === 'page' ? URL_PAGE_WORDS[error.problem](error.field) : URL_WORDS[error.problem](error.field);
    return { error: new HttpError('CALDAV_URL_REFUSED', words), field: error.field };
  }
  // A private address is the URL's fault, known before any server answered: said as the docs promise.
  if (error instanceof CalDavAddressRefusedError)
    return {
      error: new HttpError('CALDAV_URL_REFUSED', {
        en: `The address${hostOf(error)} leads into a private or internal network: the service does not connect there. Give the public address of the CalDAV server.`,
        ru: `Адрес${hostOf(error)} ведёт во внутреннюю или частную сеть: сервис туда не обращается. Укажите публичный адрес CalDAV-сервера.`,
      }),
    };
  if (error instanceof CalDavResponseTooLargeError)
    return {
      error: new HttpError('CALDAV_RESPONSE_TOO_LARGE', {
        en: `The server${hostOf(error)} sent an answer no CalDAV server sends (too large or too deeply nested). Nothing was stored: check the server address.`,
        ru: `Сервер${hostOf(error)} прислал ответ, какого не бывает у CalDAV-серверов (слишком большой или слишком вложенный). Ничего не сохранено: проверьте адрес сервера.`,
      }),
    };
  if (error instanceof CalDavTimeoutError) {
    const seconds = Math.round(error.timeoutMs / 1000);
    return {
      error: new HttpError('CALDAV_UNREACHABLE', {
        en: `The calendar server${hostOf(error)} did not answer within ${seconds} s. Nothing was stored; try again in a few minutes.`,
        ru: `Сервер календаря${hostOf(error)} не ответил за ${seconds} с. Ничего не сохранено; попробуйте через несколько минут.`,
      }),
    };
  }
  if (error instanceof CalDavNoCalendarError)
    return {
      error: new HttpError('CALDAV_NO_CALENDAR', {
        en: 'The server does not let us make a calendar of our own: pick one of your calendars below (or give its URL) and connect again.',
        ru: 'Сервер не даёт создать отдельный календарь: выберите один из ваших календарей ниже (или укажите его адрес) и подключите ещё раз.',
      }),
      calendars: error.calendars,
    };
  if (error instanceof CalDavAuthError)
    return {
      error: new HttpError('CALDAV_CREDENTIALS_REFUSED', {
        en: 'The server did not accept the login or the app password. Check the login and make a new app password: the ordinary account password does not work here.',
        ru: 'Сервер не принял логин или пароль приложения. Проверьте логин и создайте новый пароль приложения: обычный пароль от аккаунта здесь не подойдёт.',
      }),
    };
  if (error instanceof CalDavCalendarGoneError)
    return {
      error: new HttpError(
        'CALDAV_CALENDAR_NOT_FOUND',
        reader === 'page'
          ? {
              en: 'There is no calendar for events at the address given that this account can reach: check the calendar address, or leave it empty.',
              ru: 'По указанному адресу нет календаря для событий, доступного этой учётной записи: проверьте адрес календаря или оставьте поле пустым.',
            }
          : {
              en: 'calendarUrl: no calendar for events at this address that this account can reach',
              ru: 'calendarUrl: по этому адресу нет календаря для событий, доступного этой учётной записи',
            },
      ),
    };
  if (error instanceof CalDavRateLimitError || error instanceof CalDavTransientError) {
    const headers =
      error instanceof CalDavRateLimitError && error.retryAfterMs !== undefined
        ? { 'retry-after': String(retryAfterSeconds(error.retryAfterMs)) }
        : undefined;
    return {
      error: new HttpError(
        'CALDAV_UNREACHABLE',
        {
          en: `The calendar server${hostOf(error)} did not answer or is busy. Nothing was stored; try again in a few minutes.`,
          ru: `Сервер календаря${hostOf(error)} не ответил или перегружен. Ничего не сохранено; попробуйте через несколько минут.`,
        },
        headers,
      ),
    };
  }
  if (error instanceof CalDavForbiddenError || error instanceof CalDavError)
    return {
      error: new HttpError('CALDAV_REFUSED', {
        en: `The server${hostOf(error)} refused: is this the address of a CalDAV server, and does the account have a calendar there?${reasonOf(error)}`,
        ru: `Сервер${hostOf(error)} отказал: это точно адрес CalDAV-сервера, и есть ли у учётной записи календарь на нём?${reasonOf(error)}`,
      }),
    };
  return undefined;
}

const URL_WORDS = {
  'not-url': (field: string) => ({ en: `${field}: not a URL`, ru: `${field}: это не адрес` }),
  'not-https': (field: string) => ({
    en: `${field}: must start with https://`,
    ru: `${field}: адрес должен начинаться с https://`,
  }),
  credentials: (field: string) => ({
    en: `${field}: must not hold a login or password (they have fields of their own)`,
    ru: `${field}: в адресе не должно быть логина или пароля (для них есть отдельные поля)`,
  }),
} as const;

/**
 * The same refusals for a person at the form, who never sees the body's field names: the field is called as its
 * label calls it (the server's address, or the address of a calendar of theirs).
 */
const URL_PAGE_WORDS = {
  'not-url': (field: string) =>
    field === 'calendarUrl'
      ? {
          en: 'This does not look like a calendar address: paste it whole, starting with https://',
          ru: 'Это не похоже на адрес календаря: вставьте его целиком, начиная с https://',
        }
      : {
          en: 'This does not look like a CalDAV server address: paste it whole, starting with https://',
          ru: 'Это не похоже на адрес CalDAV-сервера: вставьте его целиком, начиная с https://',
        },
  'not-https': (field: string) =>
    field === 'calendarUrl'
      ? { en: 'The calendar address must start with https://', ru: 'Адрес календаря должен начинаться с https://' }
      : {
          en: 'The CalDAV server address must start with https://',
          ru: 'Адрес CalDAV-сервера должен начинаться с https://',
        },
  credentials: (field: string) =>
    field === 'calendarUrl'
      ? {
          en: 'The calendar address must not hold a login or password: they have fields of their own.',
          ru: 'В адресе календаря не должно быть логина или пароля: для них есть отдельные поля.',
        }
      : {
          en: 'The CalDAV server address must not hold a login or password: they have fields of their own.',
          ru: 'В адресе CalDAV-сервера не должно быть логина или пароля: для них есть отдельные поля.',
        },
} as const;

function hostOf(error: CalDavError): string {
  return error.host === undefined ? '' : ` ${error.host}`;
}

function reasonOf(error: CalDavError): string {
  const parts = [error.status === undefined ? undefined : String(error.status), error.reason].filter(Boolean);
  return parts.length === 0 ? '' : ` (${parts.join(' ')})`;
}
