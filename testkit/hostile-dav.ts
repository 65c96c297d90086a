/**
 * A hostile CalDAV server on loopback: whatever it is asked, it answers a multistatus no real server sends (tens
 * of MB of nested or flat XML, streamed as fast as the client reads), or trickles an answer a byte at a time. It
 * counts the requests it got and the ones whose client hung up before the answer ended, so that tests and the
 * measuring script can see when the service stopped reading and stopped asking.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the server answers every request with. */
export type HostileMode =
  /** 24 MB: 2,000,000 nested `<d:response>` elements, never closed. */
  | { kind: 'nested'; elements?: number }
  /** `bytes` of `<d:x/>` after `<d:x/>`, flat. */
  | { kind: 'flat'; bytes?: number }
  /** A small answer nested `depth` deep, with its Content-Length. */
  | { kind: 'deep'; depth: number }
  /** Headers at once, then one byte of a multistatus every `everyMs`, for ever. */
  | { kind: 'drip'; everyMs: number }
  /**
   * A small answer nested `depth` deep under two Content-Type headers, `text/plain` first: read whole by a
   * client that believes the first, parsed by one that joins them (`text/plain, application/xml`).
   */
  | { kind: 'two-types'; depth: number }
  /** Every request answered after `hopMs` with a redirect to the next path (`/hop/1`, `/hop/2`…), for ever. */
  | { kind: 'slow-redirects'; hopMs: number }
  /**
   * Every request answered after `delayMs`, each well within a deadline, with a multistatus that keeps
   * discovery going (a principal, a home, a collection that is no calendar): a connect of many slow requests.
   */
  | { kind: 'slow-dav'; delayMs: number }
  /** Every request answered 200 with `text` as calendar data (a resource's GET). */
  | { kind: 'calendar-data'; text: string };

/** A running hostile server. */
export interface HostileDav {
  url: string;
  /** Requests received. */
  readonly requests: number;
  /** Requests whose client closed the connection before the answer was whole. */
  readonly hungUp: number;
  close(): Promise<void>;
}

const HEAD = '<?xml version="1.0" encoding="utf-8"?><d:multistatus xmlns:d="DAV:">';
const CHUNK_BYTES = 64 * 1024;

/** Writes `total` bytes of `unit` repeated, waiting for the client to drain, until done or the client hangs up. */
async function stream(res: ServerResponse, unit: string, total: number): Promise<void> {
  const chunk = unit.repeat(Math.max(1, Math.floor(CHUNK_BYTES / unit.length)));
  res.write(HEAD);
  for (let sent = 0; sent < total && !res.destroyed; sent += chunk.length) {
    if (!res.write(chunk))
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.once('drain', done);
        res.once('close', done);
      });
  }
  if (!res.destroyed) res.end('</d:multistatus>');
}

function drip(res: ServerResponse, everyMs: number): void {
  res.writeHead(207, { 'content-type': 'application/xml; charset=utf-8' });
  res.flushHeaders();
  const text = `${HEAD}<d:response>`;
  let at = 0;
  const timer = setInterval(() => {
    if (res.destroyed) return;
    res.write(text[at % text.length] ?? ' ');
    at++;
  }, everyMs);
  res.once('close', () => clearInterval(timer));
}

function answer(mode: HostileMode, req: IncomingMessage, res: ServerResponse): void {
  if (mode.kind === 'slow-redirects') {
    const hop = Number(/^\/hop\/(\d+)/.exec(req.url ?? '')?.[1] ?? 0);
    const timer = setTimeout(() => {
      res.writeHead(302, { location: `/hop/${hop + 1}`, 'content-length': 0 });
      res.end();
    }, mode.hopMs);
    res.once('close', () => clearTimeout(timer));
    return;
  }
  if (mode.kind === 'slow-dav') {
    const body =
      '<?xml version="1.0" encoding="utf-8"?><d:multistatus xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">' +
      `<d:response><d:href>${req.url ?? '/'}</d:href><d:propstat><d:prop>` +
      '<d:current-user-principal><d:href>/principal/</d:href></d:current-user-principal>' +
      '<c:calendar-home-set><d:href>/home/</d:href></c:calendar-home-set>' +
      '<d:resourcetype><d:collection/></d:resourcetype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat>' +
      '</d:response></d:multistatus>';
    const timer = setTimeout(() => {
      res.writeHead(207, {
        'content-type': 'application/xml; charset=utf-8',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
    }, mode.delayMs);
    res.once('close', () => clearTimeout(timer));
    return;
  }
  if (mode.kind === 'calendar-data') {
    res.writeHead(200, { 'content-type': 'text/calendar; charset=utf-8', etag: '"1"' });
    res.end(mode.text);
    return;
  }
  if (mode.kind === 'two-types') {
    const body = `${HEAD}${'<d:prop>'.repeat(mode.depth)}${'</d:prop>'.repeat(mode.depth)}</d:multistatus>`;
    res.setHeader('content-type', ['text/plain', 'application/xml']);
    res.writeHead(207, { 'content-length': Buffer.byteLength(body) });
    res.end(body);
    return;
  }
  if (mode.kind === 'drip') {
    drip(res, mode.everyMs);
    return;
  }
  if (mode.kind === 'deep') {
    const body = `${HEAD}${'<d:prop>'.repeat(mode.depth)}${'</d:prop>'.repeat(mode.depth)}</d:multistatus>`;
    res.writeHead(207, { 'content-type': 'application/xml; charset=utf-8', 'content-length': Buffer.byteLength(body) });
    res.end(body);
    return;
  }
  res.writeHead(207, { 'content-type': 'application/xml; charset=utf-8' });
  const [unit, total] =
    mode.kind === 'nested' ? ['<d:response>', (mode.elements ?? 2_000_000) * 12] : ['<d:x/>', mode.bytes ?? 24e6];
  void stream(res, unit, total);
}

/** Starts a hostile server on a free loopback port. */
export async function startHostileDav(mode: HostileMode): Promise<HostileDav> {
  let requests = 0;
  let hungUp = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests++;
    req.resume();
    res.once('close', () => {
      if (!res.writableFinished) hungUp++;
    });
    answer(mode, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    get requests() {
      return requests;
    },
    get hungUp() {
      return hungUp;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
