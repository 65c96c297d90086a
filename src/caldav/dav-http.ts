/**
 * Every HTTP exchange of the CalDAV adapter: one undici Agent (connect, headers and body timeouts), a total
 * deadline per request, Basic auth, the per-host wait before each request, redirects followed by hand, the guard
 * against internal addresses, caps on the size and shape of answers, and the classification of statuses into the
 * typed errors of `errors.ts`. tsdav gets {@link DavHttp.fetch}, a
 * `fetch` over the same path, so discovery and XML go through these rules too.
 *
 * The password lives in one header built here; no message, reason or log line ever holds it.
 */
import { isIP } from 'node:net';
import { getDomain } from 'tldts';
import { type Dispatcher, request } from 'undici';
import { guardedAgent, isAddressRefused, isInternalLiteral } from '../lib/internal-address.ts';
import { parseRetryAfter } from '../lib/retry-after.ts';
import type { BeforeCalDavRequest, CalDavCredentials } from './caldav-client.ts';
import {
  CalDavAddressRefusedError,
  CalDavAuthError,
  type CalDavError,
  CalDavForbiddenError,
  CalDavPermanentError,
  CalDavQuotaError,
  CalDavRateLimitError,
  CalDavResponseTooLargeError,
  CalDavTimeoutError,
  CalDavTransientError,
} from './errors.ts';
import { elementBudget, MAX_XML_DEPTH, xmlShapeExcess } from './xml-shape.ts';

/** How long a request may take to connect, to get its headers, and between two chunks of its body. */
export interface DavTimeouts {
  connectMs: number;
  headersMs: number;
  bodyMs: number;
}

export const DEFAULT_DAV_TIMEOUTS: DavTimeouts = { connectMs: 10_000, headersMs: 30_000, bodyMs: 60_000 };

/** The settings of a transport (one Agent, shared by every account's client). */
export interface DavTransportOptions {
  timeouts?: Partial<DavTimeouts> | undefined;
  /**
   * Whether servers on loopback and private addresses may be reached (tests and self-hosted setups on the same
   * network). Off by default: a person could otherwise point the service at its own network.
   */
  allowPrivateHosts?: boolean | undefined;
  /**
   * The largest listing read (a PROPFIND or sync-collection of a whole calendar: about 400 bytes per event, so
   * 4 MiB holds some 10,000 events; a calendar-multiget of 100 events is about 200 KB).
   */
  maxResponseBytes?: number | undefined;
  /** The largest other answer read (discovery, a calendar's properties, a resource, a write's answer). */
  maxSmallResponseBytes?: number | undefined;
  /**
   * How long one request may take, whole: connecting, headers and every byte of the body. The header and
   * between-chunk timeouts alone let a server trickle a byte now and then for ever.
   */
  requestTimeoutMs?: number | undefined;
}

/** The connection pool of the adapter. */
export interface DavTransport {
  dispatcher: Dispatcher;
  allowPrivateHosts: boolean;
  maxResponseBytes: number;
  maxSmallResponseBytes: number;
  requestTimeoutMs: number;
  close(): Promise<void>;
}

const MAX_REDIRECTS = 5;
const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
/**
 * Discovery answers are a few KB; a calendar home listing a hundred calendars with their report sets about
 * 150 KB.
 */
const DEFAULT_MAX_SMALL_RESPONSE_BYTES = 256 * 1024;
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const REASON_LENGTH = 200;
/** Builds the adapter's Agent. */
export function createDavTransport(options: DavTransportOptions = {}): DavTransport {
  const timeouts = { ...DEFAULT_DAV_TIMEOUTS, ...options.timeouts };
  const allowPrivateHosts = options.allowPrivateHosts ?? false;
  const agent = guardedAgent({
    allowPrivate: allowPrivateHosts,
    connectMs: timeouts.connectMs,
    headersMs: timeouts.headersMs,
    bodyMs: timeouts.bodyMs,
    // Radicale speaks HTTP/1.0 and closes after each answer; others keep a few connections alive.
    connections: 8,
  });
  return {
    dispatcher: agent,
    allowPrivateHosts,
    maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    maxSmallResponseBytes: options.maxSmallResponseBytes ?? DEFAULT_MAX_SMALL_RESPONSE_BYTES,
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    close: () => agent.close(),
  };
}

/** Which cap an answer is read under: a listing of a whole calendar, or anything else (small). */
export type AnswerSize = 'small' | 'listing';

/** One request. */
export interface DavRequest {
  /** The cap its answer is read under; small unless said. */
  answer?: AnswerSize | undefined;
  method: string;
  url: string;
  headers?: Record<string, string> | undefined;
  body?: string | undefined;
  /** Follow 3xx answers (at most five); false hands them back (tsdav's `.well-known` probe reads Location). */
  followRedirects?: boolean | undefined;
}

/** An answer, read whole. */
export interface DavResponse {
  status: number;
  statusText: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The URL that answered (after redirects). */
  url: string;
}

/** `https://host/path` of a URL, without credentials, query or fragment: what messages may show. */
export function shownUrl(url: string | URL): string {
  try {
    const parsed = typeof url === 'string' ? new URL(url) : url;
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '(an unreadable URL)';
  }
}

/** The header's first value. */
export function header(response: DavResponse, name: string): string | undefined {
  const value = response.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** The ETag of an answer as sent (quotes kept), '' when there is none. A weak ETag is no use for If-Match. */
export function etagOf(response: DavResponse): string {
  const etag = header(response, 'etag') ?? '';
  return etag.startsWith('W/') ? '' : etag;
}

/**
 * Shared hosts whose subdomains are different people's sites, which the public suffix list does not name: each
 * `<name>.narod.ru` is a site of its own.
 */
const UNLISTED_SHARED_HOSTS = ['narod.ru', 'ucoz.ru'];

/**
 * The registrable site of a host name by the public suffix list, its private part included (`a.github.io` and
 * `b.github.io` are two sites; `caldav.icloud.com` and `p62-caldav.icloud.com` one); undefined for an IP literal
 * and a name with no registrable part (`localhost`, a bare suffix), which only match themselves.
 */
function siteOf(hostname: string): string | undefined {
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  if (isIP(name.replace(/^\[|\]$/g, '')) !== 0) return undefined;
  // Every unlisted host has two labels: the site is the label under it.
  if (UNLISTED_SHARED_HOSTS.some((host) => name.endsWith(`.${host}`))) return name.split('.').slice(-3).join('.');
  return getDomain(name, { allowPrivateDomains: true }) ?? undefined;
}

/**
 * Whether a redirect from `from` to `to` may carry the password: same host, or same registrable site (see
 * {@link siteOf}), never to plain http.
 */
export function mayCarryCredentials(from: URL, to: URL): boolean {
  if (from.protocol === 'https:' && to.protocol !== 'https:') return false;
  if (from.host === to.host) return true;
  const site = siteOf(from.hostname);
  return site !== undefined && site === siteOf(to.hostname);
}

/** The server's own short words about a failure: a DAV precondition (`valid-sync-token`) or Sabre's message. */
export function failureReason(body: string, secret: string): string | undefined {
  // Bounded repetitions over the answer's start: with `[^>]*` a body of `<message<message…` made these searches
  // quadratic (3.6 s for 256 KiB); real error bodies are short and say it first.
  const head = body.slice(0, 64 * 1024);
  const message = /<(?:\w{1,40}:)?message[^>]{0,400}>([^<]{1,2000})</.exec(head)?.[1]?.trim();
  const precondition = /<(?:\w{1,40}:)?error[^>]{0,400}>\s{0,400}<(?:\w{1,40}:)?([\w-]{1,100})/.exec(head)?.[1];
  const reason = message || precondition;
  if (!reason) return undefined;
  return (secret === '' ? reason : reason.replaceAll(secret, '[redacted]')).slice(0, REASON_LENGTH);
}

/** Whether an answer's body names the DAV precondition `name` (e.g. `no-uid-conflict`). */
export function hasPrecondition(response: DavResponse, name: string): boolean {
  return new RegExp(`<(?:[\\w-]+:)?${name}[\\s/>]`).test(response.body);
}

/**
 * The error for a status no method expects: 401 auth, 403 forbidden, 429/503/504 slow down (with Retry-After),
 * 507 quota, other 5xx transient, anything else permanent. Methods map their own statuses (412, 404, 409…) first.
 */
export function statusError(response: DavResponse, what: string, secret: string): CalDavError {
  const { status } = response;
  const host = hostOf(response.url);
  const reason = failureReason(response.body, secret) ?? response.statusText.slice(0, REASON_LENGTH);
  const details = { status, host, reason: reason || undefined };
  const message = `${what} ${shownUrl(response.url)} answered ${status}${reason ? ` (${reason})` : ''}`;
  if (status === 401) return new CalDavAuthError(message, details);
  if (status === 403) return new CalDavForbiddenError(message, details);
  if (status === 429 || status === 503 || status === 504) {
    const retryAfterMs = parseRetryAfter(header(response, 'retry-after'), Date.now());
    return new CalDavRateLimitError(message, { ...details, retryAfterMs });
  }
  if (status === 507) return new CalDavQuotaError(message, details);
  if (status >= 500) return new CalDavTransientError(message, details);
  return new CalDavPermanentError(message, details);
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}

function errorCode(error: unknown): string | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** A minimal `Response` for tsdav: what it reads (ok, status, statusText, url, headers, text()). */
function responseForTsdav(response: DavResponse): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  const { body } = response;
  return {
    ok: response.status >= 200 && response.status < 300,
    status: response.status,
    statusText: response.statusText,
    url: response.url,
    redirected: false,
    headers,
    text: async () => body,
    json: async () => JSON.parse(body) as unknown,
  } as unknown as Response;
}

/** Headers tsdav sends as any `HeadersInit`, as a plain record. */
function headerRecord(init: RequestInit['headers']): Record<string, string> {
  const record: Record<string, string> = {};
  new Headers(init ?? {}).forEach((value, name) => {
    record[name] = value;
  });
  return record;
}

/**
 * Headers never sent: iCloud's discovery fails with them (tsdav "cannot find homeUrl", natelindev/tsdav#238),
 * and a compressed multistatus would need decoding for nothing. Authorization is ours to set.
 */
const DROPPED_HEADERS = new Set(['accept-language', 'accept-encoding', 'authorization', 'host', 'content-length']);

/** One account's HTTP: credentials, the per-host wait and the caller's signal bound to a transport. */
export class DavHttp {
  private readonly authorization: string;
  private readonly transport: DavTransport;
  private readonly credentials: CalDavCredentials;
  private readonly beforeRequest: BeforeCalDavRequest;
  private readonly signal: AbortSignal | undefined;

  constructor(
    transport: DavTransport,
    credentials: CalDavCredentials,
    beforeRequest: BeforeCalDavRequest,
    signal?: AbortSignal | undefined,
  ) {
    this.transport = transport;
    this.credentials = credentials;
    this.beforeRequest = beforeRequest;
    this.signal = signal;
    this.authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
  }

  /** The password, to scrub from anything a server echoes back. */
  get secret(): string {
    return this.credentials.password;
  }

  /** The error for an answer no method expects (see {@link statusError}). */
  fail(response: DavResponse, what: string): CalDavError {
    return statusError(response, what, this.secret);
  }

  /**
   * Sends a request and reads the answer whole, whatever its status. Network failures and timeouts become
   * {@link CalDavTransientError}, internal addresses {@link CalDavAddressRefusedError}; the caller's abort
   * rethrows its reason.
   */
  async send(req: DavRequest): Promise<DavResponse> {
    let url = this.parse(req.url);
    const origin = url;
    let method = req.method.toUpperCase();
    let body = req.body;
    let withCredentials = true;
    // One deadline for the request and all its redirects: per hop, six slow hops made 180 s of a 30 s budget. A
    // timer of our own, cleared at the end, so that no 30 s timer outlives the request.
    const deadline = new Deadline(this.transport.requestTimeoutMs);
    try {
      for (let hop = 0; ; hop++) {
        const exchange = { method, url, given: req.headers, body, withCredentials };
        const response = await this.exchange(exchange, req.answer, deadline);
        const location = header(response, 'location');
        if (req.followRedirects === false || response.status < 300 || response.status >= 400 || !location) {
          // Our password was not sent there: its 401 says nothing about the password.
          if (!withCredentials && response.status === 401)
            throw new CalDavPermanentError(
              `${req.method} ${shownUrl(origin)} was redirected to ${url.host}, another site, which asks for a login`,
              { status: 401, host: url.host },
            );
          return response;
        }
        if (hop >= MAX_REDIRECTS)
          throw new CalDavPermanentError(`${method} ${shownUrl(origin)}: more than ${MAX_REDIRECTS} redirects`, {
            status: response.status,
            host: origin.host,
          });
        const next = this.parse(new URL(location, url).href);
        withCredentials = withCredentials && mayCarryCredentials(url, next);
        if (response.status === 303) {
          method = 'GET';
          body = undefined;
        }
        url = next;
      }
    } finally {
      deadline.clear();
    }
  }

  /**
   * A `fetch` for tsdav over {@link send} (same timeouts, auth, waits and guards; statuses handed back as they
   * are), and the last answer it got, whose status and headers tsdav's results do not always keep.
   */
  capture(answer: AnswerSize = 'small'): { fetch: typeof fetch; last(): DavResponse | undefined } {
    let last: DavResponse | undefined;
    const fetchOverDav = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      last = await this.send({
        method: init.method ?? 'GET',
        url,
        headers: headerRecord(init.headers),
        body: typeof init.body === 'string' ? init.body : undefined,
        followRedirects: init.redirect !== 'manual',
        answer,
      });
      // tsdav parses a successful answer into an object per element when any of its Content-Type headers says
      // XML (it reads them joined): every successful answer is scanned, whatever it says it is.
      refuseHostileXml(last, this.capOf(answer));
      return responseForTsdav(last);
    };
    return { fetch: fetchOverDav as typeof fetch, last: () => last };
  }

  private parse(href: string): URL {
    let url: URL;
    try {
      url = new URL(href);
    } catch (error) {
      throw new CalDavPermanentError('the server URL is not a URL', { cause: error });
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new CalDavPermanentError(`${url.protocol} is not an HTTP URL`);
    if (url.username !== '' || url.password !== '')
      throw new CalDavPermanentError(`${shownUrl(url)}: a URL may not carry a login; give it separately`);
    // Names are judged on what they resolve to, when connecting (the guarded Agent); literals never resolve.
    if (!this.transport.allowPrivateHosts && isInternalLiteral(url))
      throw new CalDavAddressRefusedError(`${shownUrl(url)}: an internal address`, { host: url.host });
    return url;
  }

  private capOf(answer: AnswerSize | undefined): number {
    return answer === 'listing' ? this.transport.maxResponseBytes : this.transport.maxSmallResponseBytes;
  }

  private async exchange(
    { method, url, given, body, withCredentials }: Exchange,
    answer: AnswerSize | undefined,
    deadline: Deadline,
  ): Promise<DavResponse> {
    this.signal?.throwIfAborted();
    await this.beforeRequest(url.host);
    this.signal?.throwIfAborted();
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(given ?? {}))
      if (!DROPPED_HEADERS.has(name.toLowerCase())) headers[name.toLowerCase()] = value;
    if (withCredentials) headers.authorization = this.authorization;
    // The deadline runs once our own wait for the host's first turn is over: it bounds what the server does.
    deadline.start();
    const timeoutMs = this.transport.requestTimeoutMs;
    const signal = this.signal ? AbortSignal.any([this.signal, deadline.signal]) : deadline.signal;
    try {
      deadline.signal.throwIfAborted();
      const res = await request(url, {
        dispatcher: this.transport.dispatcher,
        method: method as Dispatcher.HttpMethod,
        headers,
        body: body ?? null,
        signal,
      });
      const text = await this.readBody(res, method, url, answer);
      return {
        status: res.statusCode,
        statusText: statusTextOf(res.statusCode),
        headers: res.headers,
        body: text,
        url: url.href,
      };
    } catch (error) {
      if (this.signal?.aborted) throw this.signal.reason;
      if (error instanceof CalDavPermanentError) throw error;
      if (deadline.signal.aborted)
        throw new CalDavTimeoutError(`${method} ${shownUrl(url)}: no whole answer within ${timeoutMs} ms`, {
          host: url.host,
          reason: 'timeout',
          timeoutMs,
          cause: error,
        });
      const code = errorCode(error) ?? errorCode((error as { cause?: unknown })?.cause);
      if (isAddressRefused(error))
        throw new CalDavAddressRefusedError(`${shownUrl(url)}: resolves to an internal address`, { host: url.host });
      throw new CalDavTransientError(`${method} ${shownUrl(url)} failed: ${code ?? 'network error'}`, {
        host: url.host,
        reason: code,
        cause: error,
      });
    }
  }

  /**
   * The answer's text; refused unread beyond its cap (a `Content-Length` past it is not even started). A listing
   * refused names the setting that raises its cap: a calendar can outgrow it.
   */
  private async readBody(
    res: Dispatcher.ResponseData,
    method: string,
    url: URL,
    answer: AnswerSize | undefined,
  ): Promise<string> {
    const cap = this.capOf(answer);
    const raise = answer === 'listing' ? ` (${cap / 1024 / 1024} MiB, CALDAV_MAX_RESPONSE_MB)` : '';
    const tooLarge = (bytesRead: number) => {
      res.body.on('error', () => undefined);
      res.body.destroy();
      const message = `${method} ${shownUrl(url)}: the answer is larger than ${cap} bytes${raise}`;
      return new CalDavResponseTooLargeError(message, {
        status: res.statusCode,
        host: url.host,
        measure: 'bytes',
        limit: cap,
        bytesRead,
      });
    };
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > cap) throw tooLarge(0);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > cap) throw tooLarge(size);
      chunks.push(chunk);
    }
    return new TextDecoder().decode(Buffer.concat(chunks));
  }
}

/**
 * The total deadline of one request, redirects included: started when the first hop is sent (the wait for the
 * host's turn before it is ours, not the server's), cleared when the request ends.
 */
class Deadline {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  private readonly ms: number;

  constructor(ms: number) {
    this.ms = ms;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Starts the clock; later calls (the next hops) leave it running. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.timer = setTimeout(() => this.controller.abort(new Error(`deadline of ${this.ms} ms`)), this.ms);
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

/** One HTTP request of a {@link DavHttp.send}: a hop of its redirects. */
interface Exchange {
  method: string;
  url: URL;
  given: Record<string, string> | undefined;
  body: string | undefined;
  withCredentials: boolean;
}

/**
 * Throws {@link CalDavResponseTooLargeError} when a successful answer (what tsdav parses) nests deeper, holds more
 * elements or declares more than a real one of its size would (see xml-shape.ts). Its Content-Type is not
 * trusted: a server may send two, and tsdav parses when either says XML. Failed answers are only searched by
 * bounded patterns ({@link failureReason}).
 */
function refuseHostileXml(response: DavResponse, cap: number): void {
  if (response.status < 200 || response.status >= 300) return;
  const excess = xmlShapeExcess(response.body, { maxDepth: MAX_XML_DEPTH, maxElements: elementBudget(cap) });
  if (excess === undefined) return;
  const what =
    excess.measure === 'depth'
      ? `nests deeper than ${excess.limit}`
      : excess.measure === 'elements'
        ? `holds more elements than ${excess.limit}`
        : 'holds a document type or markup declaration';
  throw new CalDavResponseTooLargeError(`${shownUrl(response.url)}: the answer ${what}`, {
    status: response.status,
    host: hostOf(response.url),
    measure: excess.measure,
    limit: excess.limit,
    bytesRead: Buffer.byteLength(response.body),
  });
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  412: 'Precondition Failed',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
  507: 'Insufficient Storage',
};

/** undici gives no reason phrase (HTTP/2 has none): the standard one. */
function statusTextOf(status: number): string {
  return STATUS_TEXT[status] ?? '';
}
