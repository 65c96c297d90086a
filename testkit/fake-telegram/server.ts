// node:http rather than fastify: a fault must be able to hold or drop a request without any answer.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenClosable } from '../../src/lib/closable-server.ts';
import { faultReply, type TelegramFaults } from './faults.ts';
import { type BotState, type FakeMessage, intParam, type MethodResult } from './state.ts';

/** One request to the Bot API, as the fake saw it. */
export interface FakeCall {
  method: string;
  params: Record<string, unknown>;
  /** Epoch ms when it arrived. */
  at: number;
  /** The HTTP status answered; undefined while held, or when the connection was dropped without one. */
  status?: number;
}

/** Everything a request may touch. */
export interface FakeTelegramContext {
  token: string;
  state: BotState;
  faults: TelegramFaults;
  calls: FakeCall[];
  /** Requests held by a `stall` fault, released by `release()`. */
  stalled: Set<() => void>;
  /** Telegram's per-chat limit, when enforced: a chat's messages this far apart at least, else 429. */
  chatPaceMs?: number;
  /** When each chat's last message was accepted (performance.now()). */
  lastSent: Map<string, number>;
  /** 429 answers given by the per-chat limit. */
  paceRefusals: number;
}

interface Answer {
  status: number;
  body: unknown;
  retryAfter?: number;
  message?: FakeMessage;
}

type Outcome = Answer | 'reset';

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

/** The parameters of a call: query string, then a JSON or form body (as the Bot API accepts them). */
function parseParams(url: URL, contentType: string, body: string): Record<string, unknown> | undefined {
  const params: Record<string, unknown> = Object.fromEntries(url.searchParams);
  if (body.trim() === '') return params;
  if (contentType.includes('application/json')) {
    try {
      const parsed: unknown = JSON.parse(body);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
      return { ...params, ...(parsed as Record<string, unknown>) };
    } catch {
      return undefined;
    }
  }
  if (contentType.includes('application/x-www-form-urlencoded'))
    return { ...params, ...Object.fromEntries(new URLSearchParams(body)) };
  return undefined;
}

function fromResult(result: MethodResult, message?: FakeMessage): Answer {
  if (result.ok) return { status: 200, body: { ok: true, result: result.result }, ...(message ? { message } : {}) };
  return { status: result.status, body: { ok: false, error_code: result.status, description: result.description } };
}

function errorOutcome(status: number, description: string, retryAfter?: number): Answer {
  const body: Record<string, unknown> = { ok: false, error_code: status, description };
  if (retryAfter !== undefined) body.parameters = { retry_after: retryAfter };
  return { status, body, ...(retryAfter === undefined ? {} : { retryAfter }) };
}

async function callMethod(
  ctx: FakeTelegramContext,
  method: string,
  params: Record<string, unknown>,
  signal: AbortSignal,
): Promise<Outcome> {
  const { state } = ctx;
  switch (method.toLowerCase()) {
    case 'getme':
      return fromResult(state.getMe());
    case 'getupdates':
      return fromResult(await state.getUpdates(params, signal));
    case 'setwebhook':
      return fromResult(state.setWebhook(params));
    case 'deletewebhook':
      return fromResult(state.deleteWebhook(params));
    case 'getwebhookinfo':
      return fromResult(state.getWebhookInfo());
    case 'sendmessage': {
      const refused = paceRefusal(ctx, params);
      if (refused !== undefined) return refused;
      const { result, message } = state.sendMessage(params);
      if (result.ok) ctx.lastSent.set(String(params.chat_id), performance.now());
      return fromResult(result, message);
    }
    case 'answercallbackquery':
      return fromResult(state.answerCallbackQuery(params));
    case 'editmessagereplymarkup':
      return fromResult(state.editMessageReplyMarkup(params));
    case 'setmycommands':
    case 'deletemycommands':
    case 'sendchataction':
    case 'setmydescription':
    case 'setmyshortdescription':
      return fromResult({ ok: true, result: true });
    case 'getmycommands':
      return fromResult({ ok: true, result: [] });
    case 'close':
    case 'logout':
      return fromResult({ ok: true, result: true });
    default:
      return errorOutcome(404, 'Not Found: method not found');
  }
}

/**
 * Telegram's «one message a second» per chat, when enforced: a message sooner than `chatPaceMs` after the chat's
 * last one answers 429 with `retry_after` (whole seconds, at least one), as Telegram does.
 */
function paceRefusal(ctx: FakeTelegramContext, params: Record<string, unknown>): Answer | undefined {
  if (ctx.chatPaceMs === undefined) return undefined;
  const last = ctx.lastSent.get(String(params.chat_id));
  if (last === undefined) return undefined;
  const left = ctx.chatPaceMs - (performance.now() - last);
  if (left <= 0) return undefined;
  ctx.paceRefusals += 1;
  const retryAfter = Math.max(1, Math.ceil(left / 1000));
  return errorOutcome(429, `Too Many Requests: retry after ${retryAfter}`, retryAfter);
}

/** Waits for `release()` or for the client to go; answers whether the client is still there. */
function stall(ctx: FakeTelegramContext, signal: AbortSignal): Promise<boolean> {
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
  ctx: FakeTelegramContext,
  method: string,
  params: Record<string, unknown>,
  signal: AbortSignal,
): Promise<Outcome> {
  const rule = ctx.faults.decide(method, intParam(params.chat_id));
  if (rule?.kind === 'reset') return 'reset';
  if (rule?.kind === 'stall') {
    if (!(await stall(ctx, signal))) return 'reset';
  } else if (rule) {
    const reply = faultReply(rule);
    if (reply) return errorOutcome(reply.status, reply.description, reply.retryAfter);
  }
  return callMethod(ctx, method, params, signal);
}

function write(res: ServerResponse, outcome: Answer): void {
  const body = Buffer.from(JSON.stringify(outcome.body));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(body.length),
  };
  if (outcome.retryAfter !== undefined) headers['retry-after'] = String(outcome.retryAfter);
  res.writeHead(outcome.status, headers);
  res.end(body);
}

async function handle(
  ctx: FakeTelegramContext,
  req: IncomingMessage,
  res: ServerResponse,
  signal: AbortSignal,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://fake-telegram.invalid');
  const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
  if (!match) return write(res, errorOutcome(404, 'Not Found'));
  const [, token, method] = match as unknown as [string, string, string];
  let body: string;
  try {
    body = await readBody(req);
  } catch {
    return write(res, errorOutcome(413, 'Request Entity Too Large'));
  }
  if (decodeURIComponent(token) !== ctx.token) return write(res, errorOutcome(401, 'Unauthorized'));
  const params = parseParams(url, req.headers['content-type'] ?? '', body);
  const call: FakeCall = { method, params: params ?? {}, at: Date.now() };
  ctx.calls.push(call);
  if (!params) return write(res, errorOutcome(400, "Bad Request: can't parse request body"));
  const outcome = await respond(ctx, method, params, signal);
  // A client that went away (killed while its request was held) got no answer: nothing was sent.
  if (outcome === 'reset' || signal.aborted) {
    req.socket.destroy();
    return;
  }
  write(res, outcome);
  call.status = outcome.status;
  if (outcome.message) ctx.state.messages.push(outcome.message);
}

/** A listening fake. */
export interface Listening {
  origin: string;
  close(): Promise<void>;
}

/** Starts listening on 127.0.0.1, a free port; `close()` destroys open sockets so held requests cannot delay it. */
export async function listen(ctx: FakeTelegramContext): Promise<Listening> {
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
