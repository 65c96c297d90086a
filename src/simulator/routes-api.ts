import type { IncomingMessage } from 'node:http';
import type { EndpointName } from './faults.ts';
import { parseSelect, selectUser } from './me.ts';
import type { User } from './model.ts';
import { errorReply, failureReply, json, type Reply, readJson } from './reply.ts';
import type { SimulatorState } from './state.ts';

/** A matched API request: which endpoint, and the raw path parameter if it has one. */
export interface ApiRoute {
  endpoint: EndpointName;
  param?: string;
}

const ROUTES: readonly { method: string; path: string; pattern: RegExp; endpoint: EndpointName }[] = [
  { method: 'GET', path: '/groups/{id}/schedule', pattern: /^\/groups\/([^/]+)\/schedule$/, endpoint: 'groupSchedule' },
  {
    method: 'GET',
    path: '/employees/{id}/schedule',
    pattern: /^\/employees\/([^/]+)\/schedule$/,
    endpoint: 'employeeSchedule',
  },
  { method: 'GET', path: '/employees?q={name}', pattern: /^\/employees$/, endpoint: 'employeeSearch' },
  { method: 'POST', path: '/users/@me', pattern: /^\/users\/@me$/, endpoint: 'me' },
  { method: 'GET', path: '/users/@me/schedule', pattern: /^\/users\/@me\/schedule$/, endpoint: 'mySchedule' },
  { method: 'GET', path: '/users/@me/plan', pattern: /^\/users\/@me\/plan$/, endpoint: 'myPlan' },
];

/** The endpoints, as `METHOD /path` lines for the index at `/`. */
export const API_ROUTES: readonly string[] = ROUTES.map(({ method, path }) => `${method} ${path}`);

/** Finds the API endpoint of a request; `'method'` when the path exists but not with this method. */
export function matchApi(method: string, path: string): ApiRoute | 'method' | undefined {
  let pathMatched = false;
  for (const route of ROUTES) {
    const match = route.pattern.exec(path);
    if (!match) continue;
    pathMatched = true;
    if (route.method !== method) continue;
    return match[1] === undefined ? { endpoint: route.endpoint } : { endpoint: route.endpoint, param: match[1] };
  }
  return pathMatched ? 'method' : undefined;
}

function parseId(param: string | undefined): number | undefined {
  return param !== undefined && /^\d{1,15}$/.test(param) && Number(param) > 0 ? Number(param) : undefined;
}

function groupSchedule(state: SimulatorState, param: string | undefined): Reply {
  const id = parseId(param);
  if (id === undefined) return failureReply(400, `Некорректный идентификатор группы: ${param ?? ''}`);
  const body = state.store.groupSchedule(id);
  return body ? json(200, body) : failureReply(404, `Группа ${id} не найдена`);
}

function employeeSchedule(state: SimulatorState, param: string | undefined): Reply {
  const id = parseId(param);
  if (id === undefined) return failureReply(400, `Некорректный идентификатор сотрудника: ${param ?? ''}`);
  const body = state.store.employeeSchedule(id);
  return body ? json(200, body) : failureReply(404, `Сотрудник ${id} не найден`);
}

function employeeSearch(state: SimulatorState, url: URL): Reply {
  const q = url.searchParams.get('q');
  if (q === null || q.trim() === '') return errorReply(400, 'Параметр q обязателен');
  return json(200, state.store.searchBody(state.store.search.find(q)));
}

/** The user a request is authorized as, or the 401 to answer. */
function authorize(state: SimulatorState, req: IncomingMessage): User | Reply {
  const { authHeader, authScheme } = state.options;
  const raw = req.headers[authHeader.toLowerCase()];
  const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  if (!value) return errorReply(401, 'Требуется авторизация');
  let token = value;
  if (authScheme !== '') {
    const prefix = `${authScheme} `;
    if (value.slice(0, prefix.length).toLowerCase() !== prefix.toLowerCase())
      return errorReply(401, 'Требуется авторизация');
    token = value.slice(prefix.length).trim();
  }
  return state.store.userByToken(token) ?? errorReply(401, 'Недействительный токен');
}

async function me(state: SimulatorState, req: IncomingMessage, user: User): Promise<Reply> {
  const body = await readJson(req);
  if ('error' in body) return errorReply(400, body.error);
  const parsed = parseSelect(body.value);
  if ('error' in parsed) return errorReply(400, parsed.error);
  const { store } = state;
  return json(200, store.userBody(selectUser(user, store.groups.get(user.groupId), parsed.select)));
}

/** Answers one API request (faults already applied by the server). */
export async function handleApi(
  state: SimulatorState,
  route: ApiRoute,
  req: IncomingMessage,
  url: URL,
): Promise<Reply> {
  switch (route.endpoint) {
    case 'groupSchedule':
      return groupSchedule(state, route.param);
    case 'employeeSchedule':
      return employeeSchedule(state, route.param);
    case 'employeeSearch':
      return employeeSearch(state, url);
    default:
      break;
  }
  const user = authorize(state, req);
  if ('status' in user) return user;
  if (route.endpoint === 'me') return me(state, req, user);
  if (route.endpoint === 'mySchedule') return json(200, state.store.personalSchedule(user));
  return json(200, state.store.plan(user));
}
