// The simulator uses node:http directly rather than fastify: fault injection needs raw control over the socket
// (a body cut off mid-way, a request held forever, a connection reset without any answer), which a framework's
// reply abstraction exists to prevent.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { listenClosable } from '../lib/closable-server.ts';
import { encodeWindows1251 } from './charset.ts';
import { isLegacy } from './dialect.ts';
import { BodyTooLargeError } from './errors.ts';
import type { EndpointName, FaultRule } from './faults.ts';
import { errorReply, failureReply, json, type Reply } from './reply.ts';
import { API_ROUTES, type ApiRoute, handleApi, matchApi } from './routes-api.ts';
import { CONTROL_ROUTES, handleControl } from './routes-control.ts';
import type { SimulatorState } from './state.ts';

/** A listening simulator server. */
export interface ServerHandle {
  url: string;
  port: number;
  close(): Promise<void>;
}

const DEFAULT_ERRORS: Readonly<Record<number, string>> = {
  500: 'Внутренняя ошибка сервера',
  502: 'Ошибка шлюза',
  503: 'Сервис временно недоступен',
  504: 'Превышено время ожидания ответа',
};

// The start of a body of the right shape, cut off where no JSON parser can accept it.
const MALFORMED: Readonly<Record<EndpointName, string>> = {
  groupSchedule: '{"success":true,"subjects":[{',
  employeeSchedule: '{"success":true,"subjects":[{',
  mySchedule: '{"success":true,"subjects":[{',
  myPlan: '{"success":true,"subjects":[{',
  employeeSearch: '{"success":true,"users":[{',
  me: '{"success":true,"user":{',
};

function write(res: ServerResponse, reply: Reply): void {
  const headers: Record<string, string> = { ...reply.headers };
  if (reply.body) {
    headers['content-type'] ??= 'application/json; charset=utf-8';
    headers['content-length'] = String(reply.body.length);
  }
  res.writeHead(reply.status, headers);
  res.end(reply.body);
}

/** Writes the headers and about half of the body, then drops the connection. */
function writeTruncated(res: ServerResponse, reply: Reply): void {
  const body = reply.body ?? Buffer.from('{}');
  res.writeHead(reply.status, {
    'content-type': reply.headers?.['content-type'] ?? 'application/json; charset=utf-8',
    'content-length': String(body.length),
  });
  res.write(body.subarray(0, Math.floor(body.length / 2)), () => res.socket?.destroy());
}

/** The canned reply of a failure rule, or undefined for kinds that mangle the transport instead. */
function failureResponse(rule: FaultRule, endpoint: EndpointName): Reply | undefined {
  switch (rule.kind) {
    case 'status': {
      const status = rule.status ?? 500;
      return failureReply(status, rule.error ?? DEFAULT_ERRORS[status] ?? 'Ошибка сервера');
    }
    case 'rate-limit': {
      const seconds = String(rule.retryAfterSeconds ?? 1);
      return json(429, { error: rule.error ?? 'Слишком много запросов, повторите позже' }, { 'retry-after': seconds });
    }
    case 'unsuccessful':
      return failureReply(200, rule.error ?? 'Не удалось получить данные из информационной системы');
    case 'malformed-json':
      return { status: 200, body: Buffer.from(MALFORMED[endpoint]) };
    default:
      return undefined;
  }
}

/**
 * A reply as the deployment's dialect sends it: the legacy dialects answer in windows-1251, `legacy` saying so,
 * `legacy-unlabelled` not.
 */
function inDialect(state: SimulatorState, reply: Reply): Reply {
  if (!isLegacy(state.dialect) || !reply.body) return reply;
  const charset = state.dialect === 'legacy' ? '; charset=windows-1251' : '';
  const headers = { ...reply.headers, 'content-type': `application/json${charset}` };
  return { ...reply, body: encodeWindows1251(reply.body.toString('utf8')), headers };
}

interface Served {
  state: SimulatorState;
  closing: AbortSignal;
}

async function serveApi(
  ctx: Served,
  req: IncomingMessage,
  res: ServerResponse,
  route: ApiRoute,
  url: URL,
): Promise<string> {
  const { state } = ctx;
  state.stats.count(route.endpoint, url.pathname);
  const { delayMs, failure } = state.faults.decide(route.endpoint);
  if (delayMs > 0) await sleep(delayMs, undefined, { signal: ctx.closing });
  if (failure?.kind === 'timeout') return 'timeout (held)';
  if (failure?.kind === 'reset') {
    req.socket.destroy();
    return 'reset';
  }
  const canned = failure ? failureResponse(failure, route.endpoint) : undefined;
  if (canned) {
    write(res, inDialect(state, canned));
    return `${failure?.kind} ${canned.status}`;
  }
  const reply = inDialect(state, await handleApi(state, route, req, url));
  if (failure?.kind === 'truncated') {
    writeTruncated(res, reply);
    return 'truncated';
  }
  write(res, reply);
  return String(reply.status);
}

async function handle(ctx: Served, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://simulator.invalid');
  const method = req.method ?? 'GET';
  const path = url.pathname;
  let outcome: string;
  if (path === '/_sim' || path.startsWith('/_sim/')) {
    const reply = await handleControl(ctx.state, req, url);
    write(res, reply);
    outcome = String(reply.status);
  } else if (path === '/' && method === 'GET') {
    // Where a newcomer who opens the simulator's address lands: what there is to call, not a bare 404.
    write(res, json(200, { service: 'timetable-sync university simulator', api: API_ROUTES, control: CONTROL_ROUTES }));
    outcome = '200';
  } else {
    const route = matchApi(method, path);
    if (route === undefined) write(res, errorReply(404, `Не найдено: ${method} ${path}`));
    if (route === 'method') write(res, errorReply(405, `Метод ${method} не поддерживается для ${path}`));
    outcome = typeof route === 'object' ? await serveApi(ctx, req, res, route, url) : String(res.statusCode);
  }
  ctx.state.options.logger.debug({ method, path, outcome }, 'simulator request');
}

function onError(ctx: Served, res: ServerResponse, error: unknown): void {
  if (ctx.closing.aborted) return;
  if (res.headersSent) {
    res.socket?.destroy();
    return;
  }
  if (error instanceof BodyTooLargeError) {
    write(res, errorReply(413, error.message));
    return;
  }
  ctx.state.options.logger.error({ err: error }, 'simulator request failed');
  write(res, errorReply(500, 'Внутренняя ошибка симулятора'));
}

/** Starts the HTTP server; `close()` destroys every open socket, so held (timeout) requests cannot delay it. */
export async function serve(state: SimulatorState): Promise<ServerHandle> {
  const abort = new AbortController();
  const ctx: Served = { state, closing: abort.signal };
  const server = createServer((req, res) => {
    handle(ctx, req, res).catch((error: unknown) => onError(ctx, res, error));
  });
  const { host } = state.options;
  const { port, close } = await listenClosable(server, host, state.options.port, abort);
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, port, close };
}
