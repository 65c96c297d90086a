/** The Calendar API v3 routes of the fake: path matching and the call into {@link CalendarState}. */
import type { CalendarState, ListQuery } from './calendar-state.ts';
import type { ApiMethod } from './counts.ts';
import { selectFields } from './fields.ts';
import { apiErrors, json, parseJsonObject, type Reply } from './reply.ts';

/** A matched API request. */
export interface ApiRoute {
  method: ApiMethod;
  calendarId: string;
  eventId: string;
}

const PREFIX = ['calendar', 'v3', 'calendars'];

function decode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** Matches `calendar/v3/calendars[/{calendarId}[/events[/{eventId}]]]`, or undefined. */
export function matchRoute(httpMethod: string, pathname: string): ApiRoute | undefined {
  const segments = pathname
    .split('/')
    .filter((segment) => segment !== '')
    .map(decode);
  if (segments.some((segment) => segment === undefined)) return undefined;
  if (PREFIX.some((part, i) => segments[i] !== part)) return undefined;
  const [calendarId = '', events, eventId = ''] = segments.slice(PREFIX.length) as string[];
  const extra = segments.length - PREFIX.length;
  const pick = (method: ApiMethod | undefined): ApiRoute | undefined =>
    method ? { method, calendarId, eventId } : undefined;
  if (extra === 0) return pick(httpMethod === 'POST' ? 'calendars.insert' : undefined);
  if (extra === 1) {
    const byVerb = {
      GET: 'calendars.get',
      PATCH: 'calendars.patch',
      PUT: 'calendars.update',
      DELETE: 'calendars.delete',
    };
    return pick((byVerb as Record<string, ApiMethod>)[httpMethod]);
  }
  if (events !== 'events') return undefined;
  if (extra === 2) return pick(({ GET: 'events.list', POST: 'events.insert' } as const)[httpMethod as 'GET']);
  if (extra !== 3) return undefined;
  const byVerb = { GET: 'events.get', PATCH: 'events.patch', PUT: 'events.update', DELETE: 'events.delete' } as const;
  return pick(byVerb[httpMethod as 'GET']);
}

function listQuery(params: URLSearchParams): ListQuery {
  const raw = params.get('maxResults');
  const maxResults = raw === null ? 250 : Number(raw);
  if (!Number.isInteger(maxResults) || maxResults < 1) {
    throw apiErrors.invalidParameter(`Invalid value '${raw ?? ''}'. Values must be within the range: [1, 2500]`);
  }
  const query: ListQuery = {
    privateExtendedProperty: params.getAll('privateExtendedProperty'),
    sharedExtendedProperty: params.getAll('sharedExtendedProperty'),
    showDeleted: params.get('showDeleted') === 'true',
    // Google caps the page size at 2500 rather than refusing larger values.
    maxResults: Math.min(maxResults, 2500),
  };
  const pageToken = params.get('pageToken');
  if (pageToken !== null) query.pageToken = pageToken;
  return query;
}

function call(state: CalendarState, route: ApiRoute, user: string, params: URLSearchParams, body: string): unknown {
  const { calendarId: cal, eventId: id } = route;
  switch (route.method) {
    case 'calendars.insert':
      return state.createCalendar(user, parseJsonObject(body));
    case 'calendars.get':
      return state.getCalendar(user, cal);
    case 'calendars.delete':
      return state.deleteCalendar(user, cal);
    case 'calendars.patch':
      return state.changeCalendar(user, cal, parseJsonObject(body), 'patch');
    case 'calendars.update':
      return state.changeCalendar(user, cal, parseJsonObject(body), 'update');
    case 'events.insert':
      return state.insertEvent(user, cal, parseJsonObject(body));
    case 'events.get':
      return state.getEvent(user, cal, id);
    case 'events.patch':
      return state.patchEvent(user, cal, id, parseJsonObject(body));
    case 'events.update':
      return state.updateEvent(user, cal, id, parseJsonObject(body));
    case 'events.delete':
      return state.deleteEvent(user, cal, id);
    case 'events.list':
      return state.listEvents(user, cal, listQuery(params));
  }
}

/** Runs a matched request for `user`; throws ApiError for Google's error answers. Deletes answer 204. */
export function runRoute(
  state: CalendarState,
  route: ApiRoute,
  user: string,
  params: URLSearchParams,
  body: string,
): Reply {
  const result = call(state, route, user, params, body);
  if (result === undefined) return { status: 204 };
  const fields = params.get('fields');
  return json(200, fields === null ? result : selectFields(result, fields));
}
