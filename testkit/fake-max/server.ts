// node:http rather than fastify: a fault must be able to hold or drop a request without any answer.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenClosable } from '../../src/lib/closable-server.ts';
import { faultReply, type MaxErrorReply, type MaxFaults, tooManyRequests } from './faults.ts';
import type { FakeMaxMessage, MaxState, Result } from './state.ts';

/** One request to the API, as the fake saw it. */
export interface FakeMaxCall {
  method: string;
  /** The path without its slash: `messages`, `updates`, `me`, … */
  path: string;
  query: Record<string, string>;
  body: unknown;
  /** Whether the Authorization header held the token. */
  authorized: boolean;
  /** Epoch ms when it arrived. */
  at: number;
  /** The HTTP status answered; undefined while held, or when the connection was dropped without one. */
  status?: number;
  /** Epoch ms when it was answered or dropped; undefined while held. */
  endedAt?: number;
}

/** A token bucket: `capacity` at once, refilled at `perSecond`. */
export class Bucket {
  private tokens: number;
  private at = performance.now();
  readonly capacity: number;
  readonly perSecond: number;

  constructor(capacity: number, perSecond: number) {
    this.capacity = capacity;
    this.perSecond = perSecond;
    this.tokens = capacity;
  }

  /** Takes a token: 0, or the ms until there is one (nothing taken). */
  take(): number {
    const now = performance.now();
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.at) * this.perSecond) / 1000);
    this.at = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.tokens) * 1000) / this.perSecond);
  }
}

/** Everything a request may touch. */
export interface FakeMaxContext {
  token: string;
  state: MaxState;
  faults: MaxFaults;
  calls: FakeMaxCall[];
  /** Requests held by a `stall` fault, released by `release()`. */
  stalled: Set<() => void>;
  /** MAX's 30 requests a second per bot (every request counts); undefined: not enforced. */
  global: Bucket | undefined;
  /** MAX's two messages a second per dialog, per dialog; `chatRate` undefined: not enforced. */
  chats: Map<string, Bucket>;
  chatRate: number | undefined;
  /** 429 answers given by the two buckets. */
  refusals: { global: number; chat: number };
}

type Outcome = { result: Result; retryAfter?: number; message?: FakeMaxMessage } | 'reset';

const MAX_BODY_BYTES = 1 << 20;

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > MAX_BODY_BYTES) throw new Error('body too large');
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function refused(reply: MaxErrorReply): Outcome {
  return {
    result: { ok: false, status: reply.status, code: reply.code, message: reply.message },
    ...(reply.retryAfter === undefined ? {} : { retryAfter: reply.retryAfter }),
  };
}

const ROUTES: Readonly<Record<string, readonly string[]>> = {
  me: ['GET'],
  messages: ['POST'],
  updates: ['GET'],
  subscriptions: ['GET', 'POST', 'DELETE'],
  answers: ['POST'],
};

async function route(
  ctx: FakeMaxContext,
  method: string,
  path: string,
  query: URLSearchParams,
  body: Record<string, unknown>,
  signal: AbortSignal,
): Promise<Outcome> {
  const { state } = ctx;
  switch (`${method} ${path}`) {
    case 'GET me':
      return { result: state.me() };
    case 'POST messages': {
      const sent = state.sendMessage(query, body);
      if (sent.result.ok && sent.chatId !== undefined && ctx.chatRate !== undefined) {
        let chat = ctx.chats.get(sent.chatId);
        if (chat === undefined) {
          chat = new Bucket(ctx.chatRate, ctx.chatRate);
          ctx.chats.set(sent.chatId, chat);
        }
        if (chat.take() > 0) {
          ctx.refusals.chat += 1;
          return refused(tooManyRequests(1));
        }
      }
      return { result: sent.result, ...(sent.message ? { message: sent.message } : {}) };
    }
    case 'GET updates':
      return { result: await state.updates(query, signal) };
    case 'GET subscriptions':
      return { result: state.listSubscriptions() };
    case 'POST subscriptions':
      return { result: state.subscribe(body) };
    case 'DELETE subscriptions':
      return { result: state.unsubscribe(query) };
    case 'POST answers':
      return { result: state.answer(query, body) };
    default:
      return { result: { ok: false, status: 405, code: 'method.not.allowed', message: `${method} not allowed` } };
  }
}

/** Waits for `release()` or for the client to go; answers whether the client is still there. */
function stall(ctx: FakeMaxContext, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (): void => {
      ctx.stalled.delete(done);
      signal.removeEventListener('abort', done);
      resolve(!signal.aborted);
    };
    ctx.stalled.add(done);
    signal.addEventListener('abort', done, { once: true });
  });
}

async function respond(
  ctx: FakeMaxContext,
  call: FakeMaxCall,
  query: URLSearchParams,
  raw: string,
  signal: AbortSignal,
): Promise<Outcome> {
  if (!call.authorized)
    return { result: { ok: false, status: 401, code: 'verify.token', message: 'Invalid access_token' } };
  if (ctx.global !== undefined && ctx.global.take() > 0) {
    ctx.refusals.global += 1;
    return refused(tooManyRequests(1));
  }
  const rule = ctx.faults.decide(call.path, query.get('chat_id') ?? undefined);
  if (rule?.kind === 'reset') return 'reset';
  if (rule?.kind === 'stall') {
    if (!(await stall(ctx, signal))) return 'reset';
  } else if (rule) return refused(faultReply(rule) as MaxErrorReply);
  let body: Record<string, unknown> = {};
  if (raw.trim() !== '') {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as Record<string, unknown>;
    } catch {
      return { result: { ok: false, status: 400, code: 'proto.payload', message: 'Could not parse the body' } };
    }
  }
  return route(ctx, call.method, call.path, query, body, signal);
}

function write(res: ServerResponse, outcome: Exclude<Outcome, 'reset'>): void {
  const { result } = outcome;
  const json = result.ok ? result.body : { code: result.code, message: result.message };
  const body = Buffer.from(JSON.stringify(json));
  const headers: Record<string, string> = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(body.length),
  };
  if (outcome.retryAfter !== undefined) headers['retry-after'] = String(outcome.retryAfter);
  res.writeHead(result.ok ? 200 : result.status, headers);
  res.end(body);
}

async function handle(
  ctx: FakeMaxContext,
  req: IncomingMessage,
  res: ServerResponse,
  signal: AbortSignal,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://fake-max.invalid');
  const path = url.pathname.replace(/^\/+|\/+$/g, '');
  let raw: string;
  try {
    raw = await readBody(req);
  } catch {
    return write(res, { result: { ok: false, status: 413, code: 'too.large', message: 'Request entity too large' } });
  }
  if (!(path in ROUTES))
    return write(res, { result: { ok: false, status: 404, code: 'not.found', message: `Path /${path} not found` } });
  let body: unknown;
  try {
    body = raw === '' ? undefined : JSON.parse(raw);
  } catch {
    body = raw;
  }
  const call: FakeMaxCall = {
    method: req.method ?? 'GET',
    path,
    query: Object.fromEntries(url.searchParams),
    body,
    // MAX takes the token in the Authorization header only, bare (no "Bearer"); `access_token` in the query no more.
    authorized: req.headers.authorization === ctx.token,
    at: Date.now(),
  };
  ctx.calls.push(call);
  const outcome = await respond(ctx, call, url.searchParams, raw, signal);
  // A client that went away (killed while its request was held) got no answer: nothing was sent.
  call.endedAt = Date.now();
  if (outcome === 'reset' || signal.aborted) {
    req.socket.destroy();
    return;
  }
  write(res, outcome);
  call.status = outcome.result.ok ? 200 : outcome.result.status;
  if (outcome.message) ctx.state.messages.push(outcome.message);
}

/** A listening fake. */
export interface Listening {
  origin: string;
  close(): Promise<void>;
}

/** Starts listening on 127.0.0.1, a free port; `close()` destroys open sockets so held requests cannot delay it. */
export async function listen(ctx: FakeMaxContext): Promise<Listening> {
  const abort = new AbortController();
  const server = createServer((req, res) => {
    // One signal per request: aborted when its client goes (or the fake closes) before the answer is written.
    const gone = new AbortController();
    const onStop = (): void => gone.abort();
    abort.signal.addEventListener('abort', onStop, { once: true });
    res.on('close', () => {
      abort.signal.removeEventListener('abort', onStop);
      if (!res.writableEnded) gone.abort();
    });
    handle(ctx, req, res, gone.signal).catch(() => req.socket.destroy());
  });
  const { port, close } = await listenClosable(server, '127.0.0.1', 0, abort);
  return {
    origin: `http://127.0.0.1:${port}`,
    close: async () => {
      ctx.state.close();
      for (const release of [...ctx.stalled]) release();
      await close();
    },
  };
}
