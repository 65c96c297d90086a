/**
 * The CalDAV adapter against hostile servers on loopback: answers of tens of MB (nested or flat) and small ones
 * nested absurdly deep are refused with a typed error before anything parses them, and a server trickling a byte
 * every 2 s is cut off at the request's total deadline; a caller's signal cancels what is under way.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { calDavClientFactory } from '../../src/caldav/dav-client.ts';
import { createDavTransport, DavHttp, failureReason } from '../../src/caldav/dav-http.ts';
import { CalDavResponseTooLargeError, CalDavTimeoutError } from '../../src/caldav/errors.ts';
import { elementBudget, xmlShapeExcess } from '../../src/caldav/xml-shape.ts';
import { type HostileDav, type HostileMode, startHostileDav } from '../../testkit/hostile-dav.ts';

const CREDENTIALS = { username: 'alice', password: 'app-password' };
const noWait = async () => undefined;

let servers: HostileDav[] = [];
let closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.all(closers.map((close) => close()));
  await Promise.all(servers.map((server) => server.close()));
  servers = [];
  closers = [];
});

async function hostile(mode: HostileMode): Promise<HostileDav> {
  const server = await startHostileDav(mode);
  servers.push(server);
  return server;
}

function client(options: { requestTimeoutMs?: number } = {}, signal?: AbortSignal) {
  const factory = calDavClientFactory({ allowPrivateHosts: true, ...options });
  closers.push(factory.close);
  return factory(CREDENTIALS, noWait, signal);
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error,
  );
}

describe('answers no real server sends', () => {
  it('refuses 24 MB of 2,000,000 nested elements after 256 KiB, unparsed', async () => {
    const server = await hostile({ kind: 'nested' });
    const error = await failure(client().discover(server.url));
    expect(error).toBeInstanceOf(CalDavResponseTooLargeError);
    expect(error).toMatchObject({ measure: 'bytes', limit: 256 * 1024, host: new URL(server.url).host });
    expect((error as CalDavResponseTooLargeError).bytesRead).toBeLessThan(1024 * 1024);
    expect(server.requests).toBe(1);
  });

  it('refuses a huge flat answer the same way', async () => {
    const server = await hostile({ kind: 'flat', bytes: 50e6 });
    const error = await failure(client().discover(server.url));
    expect(error).toMatchObject({ name: 'CalDavResponseTooLargeError', measure: 'bytes' });
  });

  it('names the setting that raises the cap when a listing or a resource is refused for its size', async () => {
    const server = await hostile({ kind: 'flat', bytes: 6e6 });
    const error = await failure(client().get(`${server.url}calendar/tts-1.ics`));
    expect(error).toMatchObject({ name: 'CalDavResponseTooLargeError', measure: 'bytes', limit: 4 * 1024 * 1024 });
    expect((error as Error).message).toContain('4 MiB, CALDAV_MAX_RESPONSE_MB');
  });

  it('refuses a small answer nested 10,000 deep for its depth', async () => {
    const server = await hostile({ kind: 'deep', depth: 10_000 });
    const error = await failure(client().discover(server.url));
    expect(error).toMatchObject({ name: 'CalDavResponseTooLargeError', measure: 'depth', limit: 64 });
  });
  it('scans an answer whatever its Content-Type says: two headers, `text/plain` first, are no way around it', async () => {
    const server = await hostile({ kind: 'two-types', depth: 10_000 });
    const error = await failure(client().discover(server.url));
    expect(error).toMatchObject({ name: 'CalDavResponseTooLargeError', measure: 'depth', limit: 64 });
  });
});

describe('xmlShapeExcess', () => {
  const limits = { maxDepth: 64, maxElements: 1_000 };

  it('lets a real multistatus through, comments, CDATA and quoted `>` included', () => {
    const response =
      '<d:response><d:href>/c/tts-1.ics</d:href><d:propstat><d:prop><d:getetag>"1"</d:getetag>' +
      '<c:calendar-data><![CDATA[BEGIN:VCALENDAR <not a tag>]]></c:calendar-data><x a="1>2"/></d:prop>' +
      '<d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>';
    const xml = `<?xml version="1.0"?><!-- a comment <a> --><d:multistatus xmlns:d="DAV:">${response.repeat(50)}</d:multistatus>`;
    expect(xmlShapeExcess(xml, limits)).toBeUndefined();
  });

  it('stops at the first element past the depth or the count', () => {
    expect(xmlShapeExcess('<a>'.repeat(65), limits)).toEqual({ measure: 'depth', limit: 64 });
    expect(xmlShapeExcess('<a>'.repeat(64), limits)).toBeUndefined();
    expect(xmlShapeExcess(`<r>${'<a/>'.repeat(1_000)}</r>`, limits)).toEqual({ measure: 'elements', limit: 1_000 });
  });

  it('budgets an element per 16 bytes of the cap', () => {
    expect(elementBudget(4 * 1024 * 1024)).toBe(262_144);
  });
});

describe('failureReason', () => {
  it('reads a hostile error body in linear time (quadratic searches took seconds)', () => {
    const started = performance.now();
    expect(failureReason('<message'.repeat(32 * 1024), 'pw')).toBeUndefined();
    expect(failureReason('<error'.repeat(40 * 1024), 'pw')).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe('the total deadline of a request', () => {
  it('ends a request to a server dripping a byte every 2 s at the deadline, with a typed error', async () => {
    const server = await hostile({ kind: 'drip', everyMs: 2_000 });
    const started = Date.now();
    const error = await failure(client({ requestTimeoutMs: 1_500 }).discover(server.url));
    const elapsed = Date.now() - started;
    expect(error).toBeInstanceOf(CalDavTimeoutError);
    expect(error).toMatchObject({ timeoutMs: 1_500, host: new URL(server.url).host });
    expect(elapsed).toBeGreaterThanOrEqual(1_400);
    expect(elapsed).toBeLessThan(4_000);
    await expect.poll(() => server.hungUp).toBe(1);
    expect(server.requests).toBe(1);
  });

  it("stops at once when the caller's signal aborts (a push job cancelled, a client gone)", async () => {
    const server = await hostile({ kind: 'drip', everyMs: 2_000 });
    const controller = new AbortController();
    const reason = new Error('job cancelled');
    setTimeout(() => controller.abort(reason), 300);
    const started = Date.now();
    const error = await failure(client({ requestTimeoutMs: 30_000 }, controller.signal).discover(server.url));
    expect(error).toBe(reason);
    expect(Date.now() - started).toBeLessThan(2_000);
    await expect.poll(() => server.hungUp).toBe(1);
    expect(server.requests).toBe(1);
  });
});

describe('the total deadline across redirects', () => {
  it('ends a chain of slow redirects at one deadline, not one per hop', async () => {
    // Each hop answers in 0.6 s, under a deadline of 1.5 s per hop: six hops took 3.6 s (180 s with 30 s).
    const server = await hostile({ kind: 'slow-redirects', hopMs: 600 });
    const transport = createDavTransport({ allowPrivateHosts: true, requestTimeoutMs: 1_500 });
    closers.push(() => transport.close());
    const http = new DavHttp(transport, CREDENTIALS, noWait);
    const started = Date.now();
    const error = await failure(http.send({ method: 'PROPFIND', url: server.url }));
    const elapsed = Date.now() - started;
    expect(error).toBeInstanceOf(CalDavTimeoutError);
    expect(elapsed).toBeGreaterThanOrEqual(1_400);
    expect(elapsed).toBeLessThan(2_500);
    expect(server.requests).toBe(3);
  });
});

describe('calendar data no calendar holds', () => {
  it("reads a resource of 20,000 nested BEGIN lines as nobody's, at once (a path per line took 1.9 GB)", async () => {
    const server = await hostile({ kind: 'calendar-data', text: 'BEGIN:A\r\n'.repeat(20_000) });
    const started = Date.now();
    const resource = await client().get(`${server.url}calendar/tts-1.ics`);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(resource?.etag).toBe('"1"');
    expect([resource?.uid, resource?.markerValue, resource?.hash]).toEqual([undefined, undefined, undefined]);
  });
});
