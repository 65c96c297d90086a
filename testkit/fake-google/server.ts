// node:http rather than fastify: a fault must be able to drop the connection without any answer, and the
// fake has no routes worth a framework.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { listenClosable } from '../../src/lib/closable-server.ts';
import type { CalendarState } from './calendar-state.ts';
import { handleConsent } from './consent.ts';
import type { Counter } from './counts.ts';
import { type Faults, faultError, type UserQuota } from './faults.ts';
import { CALENDAR_SCOPES, type OAuthState } from './oauth.ts';
import { ApiError, apiErrors, json, oauthError, type Reply, readBody } from './reply.ts';
import { matchRoute, runRoute } from './routes.ts';

/** Paths of the OAuth endpoints (the Calendar API lives under `calendar/v3/`). */
export const PATHS = { token: '/token', revoke: '/revoke', auth: '/o/oauth2/v2/auth' } as const;

/** Everything a request may touch. */
export interface FakeContext {
  state: CalendarState;
  oauth: OAuthState;
  faults: Faults;
  quota: UserQuota;
  counter: Counter;
}

/** A listening server. */
export interface Listening {
  origin: string;
  close(): Promise<void>;
}

type Outcome = Reply | 'reset';

async function serveApi(ctx: FakeContext, req: IncomingMessage, url: URL, body: string): Promise<Outcome> {
  const httpMethod = req.method ?? 'GET';
  const route = matchRoute(httpMethod, url.pathname);
  if (!route) throw apiErrors.notFound();
  const caller = ctx.oauth.authenticate(req.headers.authorization);
  if (!caller) throw apiErrors.unauthenticated();
  if (!caller.scopes.some((scope) => CALENDAR_SCOPES.includes(scope))) throw apiErrors.insufficientPermissions();
  if (!ctx.quota.admit(caller.user)) {
    ctx.counter.quota();
    throw apiErrors.userRateLimit();
  }
  const fault = ctx.faults.decide(route.method, route.eventId || bodyEventId(body));
  if (fault) {
    ctx.counter.fault();
    const error = faultError(fault);
    if (!error) return 'reset';
    throw error;
  }
  ctx.counter.served(route.method, httpMethod);
  return runRoute(ctx.state, route, caller.user, url.searchParams, body);
}

/** The `id` of an insert's body, for faults aimed at one event; undefined when there is none. */
function bodyEventId(body: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    const id = typeof parsed === 'object' && parsed !== null ? (parsed as { id?: unknown }).id : undefined;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

function tokenFault(ctx: FakeContext): Outcome | undefined {
  const fault = ctx.faults.decide('token');
  if (!fault) return undefined;
  ctx.counter.fault();
  if (fault === 'reset') return 'reset';
  if (fault === '500' || fault === '503') return oauthError(Number(fault), 'internal_failure', 'Backend Error');
  return oauthError(429, 'rate_limit_exceeded', 'Rate Limit Exceeded');
}

function serveOAuth(ctx: FakeContext, req: IncomingMessage, url: URL, body: string): Outcome {
  const form = new URLSearchParams(body);
  if (url.pathname === PATHS.auth) return handleConsent(ctx.oauth, url);
  if (req.method !== 'POST') return oauthError(405, 'invalid_request', 'Method Not Allowed');
  if (url.pathname === PATHS.revoke) {
    const token = url.searchParams.get('token') ?? form.get('token') ?? '';
    return ctx.oauth.revokeAny(token) ? json(200, {}) : oauthError(400, 'invalid_token', 'Token expired or revoked');
  }
  ctx.counter.token();
  const reply = tokenFault(ctx) ?? ctx.oauth.token(form, req.headers.authorization);
  if (reply !== 'reset' && reply.status >= 400) {
    const { error } = JSON.parse(reply.body?.toString('utf8') ?? '{}') as { error?: string };
    ctx.counter.tokenError(reply.status, error ?? 'unknown');
  }
  return reply;
}

async function respond(ctx: FakeContext, req: IncomingMessage, signal: AbortSignal): Promise<Outcome> {
  const url = new URL(req.url ?? '/', 'http://fake-google.invalid');
  const isOAuth = (Object.values(PATHS) as string[]).includes(url.pathname);
  if (!isOAuth) ctx.counter.received();
  try {
    const body = await readBody(req);
    if (ctx.faults.latencyMs > 0) await sleep(ctx.faults.latencyMs, undefined, { signal });
    return isOAuth ? serveOAuth(ctx, req, url, body) : await serveApi(ctx, req, url, body);
  } catch (error) {
    if (signal.aborted) return 'reset';
    const apiError =
      error instanceof ApiError ? error : new ApiError(500, 'backendError', `fake-google bug: ${String(error)}`);
    ctx.counter.error(apiError.status, apiError.reason);
    return apiError.reply();
  }
}

function write(res: ServerResponse, reply: Reply): void {
  const headers: Record<string, string> = { ...reply.headers };
  if (reply.body) headers['content-length'] = String(reply.body.length);
  res.writeHead(reply.status, headers);
  res.end(reply.body);
}

/** Starts listening on `host`, port 0; `close()` destroys open sockets so slow requests cannot delay it. */
export async function listen(ctx: FakeContext, host: string): Promise<Listening> {
  const abort = new AbortController();
  const server = createServer((req, res) => {
    void respond(ctx, req, abort.signal).then((outcome) =>
      outcome === 'reset' ? req.socket.destroy() : write(res, outcome),
    );
  });
  const { port, close } = await listenClosable(server, host, 0, abort);
  return { origin: `http://${host}:${port}`, close };
}
