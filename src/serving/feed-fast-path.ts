/**
 * The fast path of the hottest requests: GET and HEAD of a public feed URL without a query, whose feed is
 * trusted in the api's memory cache. They are answered in front of fastify, straight on `node:http`, with
 * header lists and bodies made once per stored feed and coding. Fastify's routing, hooks, promises and reply
 * objects were about a fifth of the CPU time of such a request (a 4.6 kB gzip body went at 0.6× to 0.75×
 * nginx's rate through them); the rest is Node's HTTP parser and response, and the kernel's send.
 *
 * The answer is the one the feed route gives, header for header (test/http/feed-fast-path.integration.test.ts
 * compares them): same ETag per coding, 304 on If-None-Match or If-Modified-Since, the coding the
 * Accept-Encoding q-values choose, the stale mark, the security header, the served-feeds counter, the
 * registry's record of the request and the forwarding check. Everything else is left to fastify: a feed not
 * in memory (first requests, an outage's stale copies), a query (subscriber variants), personal feeds (their
 * token is looked up in Redis, so that a revoked one stops at once, or in memory only while Redis does not
 * answer: personal-tokens.ts), a 200 in a coding whose
 * bytes are not made yet (identity and br are made from the stored gzip form on first demand, which the route
 * awaits: feed-forms.ts), any other URL or method,
 * and every request once the app's preClose hooks have run (fastify answers those 503). Between fastify's
 * own mark of closing and those hooks, a cached feed may still be answered 200 here, without
 * `Connection: close`: a correct answer, and the connection ends with the server.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { InvalidSourceError } from '../timetable/errors.ts';
import { parseSource, type SourceKind } from '../timetable/source.ts';
import type { FeedCounters } from './feed-counters.ts';
import type { ServedFeed } from './feed-forms.ts';
import { feedHeaders, PUBLIC_MAX_AGE_SECONDS } from './feed-headers.ts';
import type { FeedProvider } from './feed-provider.ts';
import { chooseEncoding, type FeedEncoding, isNotModified } from './negotiate.ts';

/** A request handler of the server: true when it answered, false to leave the request to the next one. */
export type FastHandler = (request: IncomingMessage, response: ServerResponse) => boolean;

/**
 * What is sent for one feed in one coding: header lists as `writeHead` takes them (never changed once made), and
 * the body. The 200's list and body are filled in once the coding's bytes are made.
 */
interface CodedAnswer {
  ok: string[] | undefined;
  notModified: string[];
  /** Fastify's HEAD route adds `content-length: 0` to a 304 (its payload is empty); kept alike. */
  notModifiedHead: string[];
  body: Buffer | undefined;
}

/**
 * Accept-Encoding values remembered with the coding they choose (parsing one costs 2 to 4 % of a request):
 * clients send few distinct values, over and over. The first ones seen are kept; any others are parsed each time.
 * Values longer than real clients send are never kept, so that junk cannot take the places.
 */
const KNOWN_ACCEPTS = 64;
const KNOWN_ACCEPT_MAX_LENGTH = 128;

/**
 * Paths of public feeds remembered with their source key, so that a path asked again costs one lookup rather
 * than being cut up and checked again. Only valid keys are kept, the first ones seen (a feed-shaped path with an
 * id that is not one goes on to fastify, which answers 400); any others are parsed each time.
 */
const KNOWN_PATHS = 4096;

const GROUPS = '/feeds/groups/';
const EMPLOYEES = '/feeds/employees/';
const SUFFIX = '.ics';

/** Answers cached public feeds; see the module comment. */
export class FeedFastPath {
  private readonly provider: Pick<FeedProvider, 'cachedFeed'>;
  private readonly counters: FeedCounters;
  private readonly hookHeaders: readonly string[];
  private readonly noteRequest: (request: IncomingMessage) => void;
  private readonly publicMaxAge: number;
  private readonly answers = new WeakMap<ServedFeed, Partial<Record<FeedEncoding, CodedAnswer>>>();
  private readonly codings = new Map<string | undefined, FeedEncoding>();
  private readonly paths = new Map<string, { kind: SourceKind; source: string }>();
  private closing = false;

  /**
   * `hookHeaders` (a `[name, value, …]` list) are what the app's onSend hooks add to every answer (the security
   * header), sent here alike; `noteRequest` sees every request answered here, as the app's onRequest hooks would;
   * `publicMaxAge` is the provider's (the feed routes').
   */
  constructor(
    provider: Pick<FeedProvider, 'cachedFeed'>,
    counters: FeedCounters,
    hookHeaders: readonly string[],
    noteRequest: (request: IncomingMessage) => void,
    publicMaxAge = PUBLIC_MAX_AGE_SECONDS,
  ) {
    this.provider = provider;
    this.counters = counters;
    this.hookHeaders = hookHeaders;
    this.noteRequest = noteRequest;
    this.publicMaxAge = publicMaxAge;
  }

  /** From now on every request is left to fastify (which answers 503 while the app closes). */
  close(): void {
    this.closing = true;
  }

  /** Answers `request` when it is a cached public feed's GET or HEAD and returns true; else false, untouched. */
  handle(request: IncomingMessage, response: ServerResponse): boolean {
    const method = request.method;
    if (this.closing || (method !== 'GET' && method !== 'HEAD')) return false;
    const path = this.pathOf(request.url ?? '');
    if (path === undefined) return false;
    const { kind, source } = path;
    const feed = this.provider.cachedFeed(source);
    if (feed === undefined) return false;
    const headers = request.headers;
    const answer = this.answerOf(feed, this.codingOf(headers['accept-encoding']));
    const ifNoneMatch = headers['if-none-match'];
    const ifModifiedSince = headers['if-modified-since'];
    if (
      (ifNoneMatch !== undefined || ifModifiedSince !== undefined) &&
      isNotModified({ ifNoneMatch, ifModifiedSince }, feed.etag, feed.lastModified)
    ) {
      this.noteRequest(request);
      response.writeHead(304, method === 'HEAD' ? answer.notModifiedHead : answer.notModified);
      response.end();
      this.counters.served(kind, 304);
      return true;
    }
    if (answer.ok === undefined) return false;
    this.noteRequest(request);
    response.writeHead(200, answer.ok);
    if (method === 'HEAD') response.end();
    else response.end(answer.body);
    this.counters.served(kind, 200);
    return true;
  }

  /** The kind and source key of a public feed's path without a query; undefined for any other URL. */
  private pathOf(url: string): { kind: SourceKind; source: string } | undefined {
    const known = this.paths.get(url);
    if (known !== undefined) return known;
    const kind: SourceKind | undefined = url.startsWith(GROUPS)
      ? 'group'
      : url.startsWith(EMPLOYEES)
        ? 'employee'
        : undefined;
    if (kind === undefined || !url.endsWith(SUFFIX)) return undefined;
    const source = sourceOfPath(kind, url.slice(kind === 'group' ? GROUPS.length : EMPLOYEES.length, -SUFFIX.length));
    if (source === undefined) return undefined;
    const path = { kind, source };
    if (this.paths.size < KNOWN_PATHS) this.paths.set(url, path);
    return path;
  }

  private codingOf(accept: string | undefined): FeedEncoding {
    let coding = this.codings.get(accept);
    if (coding === undefined) {
      coding = chooseEncoding(accept);
      if (this.codings.size < KNOWN_ACCEPTS && (accept?.length ?? 0) <= KNOWN_ACCEPT_MAX_LENGTH)
        this.codings.set(accept, coding);
    }
    return coding;
  }

  /** The answer of `feed` in `encoding`, with its 200 once the coding's bytes are made. */
  private answerOf(feed: ServedFeed, encoding: FeedEncoding): CodedAnswer {
    let made = this.answers.get(feed);
    if (made === undefined) {
      made = {};
      this.answers.set(feed, made);
    }
    let answer = made[encoding];
    if (answer === undefined) {
      answer = coded(feed, encoding, this.hookHeaders, this.publicMaxAge);
      made[encoding] = answer;
    }
    if (answer.body === undefined) {
      const body = feed.forms.ready(encoding);
      if (body !== undefined) {
        answer.ok = [
          ...feedHeaders(feed, encoding, false, this.publicMaxAge),
          ...codingHeader(encoding),
          ...this.hookHeaders,
          'content-length',
          String(body.length),
        ];
        answer.body = body;
      }
    }
    return answer;
  }
}

/** The source key of a public feed path's id, or undefined when the id is not one (fastify answers 400). */
function sourceOfPath(kind: SourceKind, id: string): string | undefined {
  const key = `${kind}:${id}`;
  try {
    parseSource(key);
    return key;
  } catch (error) {
    if (error instanceof InvalidSourceError) return undefined;
    throw error;
  }
}

/**
 * The 304 header lists of `feed` in `encoding`, in the order the feed route, the security hook and fastify send
 * them; the 200's follow once its bytes are made ({@link FeedFastPath}).
 */
function coded(
  feed: ServedFeed,
  encoding: FeedEncoding,
  hookHeaders: readonly string[],
  publicMaxAge: number,
): CodedAnswer {
  const notModified = [...feedHeaders(feed, encoding, false, publicMaxAge), ...hookHeaders];
  return { ok: undefined, notModified, notModifiedHead: [...notModified, 'content-length', '0'], body: undefined };
}

function codingHeader(encoding: FeedEncoding): string[] {
  return encoding === 'identity' ? [] : ['content-encoding', encoding];
}

/**
 * Puts `handler` in front of the framework's request handler on `server`: a request it does not answer goes on
 * to the framework. Call right after the app is built, while the framework's handler is the only listener, so
 * that listeners added later (connection-limits.ts) still see every request after both.
 *
 * The handler runs in the server's own listener, where nothing would catch what it throws: the process would
 * die of it. So a throw is passed to `onError` and the request goes on to the framework, which answers it
 * (its route meets the same fault and answers 500) — or, when the handler had already begun to answer, the
 * connection is cut, since a half-sent answer cannot be taken back.
 */
export function answerFirst(server: Server, handler: FastHandler, onError: (error: unknown) => void): void {
  const listeners = server.listeners('request');
  const framework = listeners[0] as ((request: IncomingMessage, response: ServerResponse) => void) | undefined;
  if (framework === undefined || listeners.length !== 1)
    throw new Error(`the fast path goes in front of the framework's one request listener; found ${listeners.length}`);
  server.removeListener('request', framework);
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    let handled: boolean;
    try {
      handled = handler(request, response);
    } catch (error) {
      onError(error);
      handled = response.headersSent;
      if (handled) response.destroy();
    }
    if (!handled) framework.call(server, request, response);
  });
}
