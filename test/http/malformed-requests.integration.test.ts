/**
 * Requests fastify or Node refuse before any route runs, slow clients, and the headers every answer carries:
 * all answered on a real loopback socket, since Node's parser and timers are what is tested.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN_TOKEN } from '../support/service.ts';
import { startTestApp, storeTimetable, type TestApp } from './helpers.ts';

let t: TestApp;
let port: number;

beforeAll(async () => {
  t = await startTestApp({ env: { HTTP_REQUEST_TIMEOUT: '2s', HTTP_HEADERS_TIMEOUT: '1s' } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as { port: number }).port;
});
afterAll(() => t.close());

/** What came back on a raw socket: status, headers (lower-cased names), body, and when the server closed. */
interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  closedAfterMs: number;
}

/** Writes `head` (and then `dribble`, one byte every `everyMs`) on a fresh connection; reads until it closes. */
function rawRequest(head: Buffer | string, dribble = '', everyMs = 300): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const [headText = '', body = ''] = text.split('\r\n\r\n', 2);
      const [statusLine = '', ...lines] = headText.split('\r\n');
      const headers = Object.fromEntries(
        lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      const status = Number(statusLine.split(' ')[1]);
      if (Number.isNaN(status)) reject(new Error(`no answer: ${JSON.stringify(text)}`));
      resolve({ status, headers, body, closedAfterMs: performance.now() - started });
    });
    socket.write(head);
    let sent = 0;
    if (dribble !== '') {
      timer = setInterval(() => {
        if (sent < dribble.length && socket.writable) socket.write(dribble.charAt(sent++));
      }, everyMs);
    }
  });
}

describe('malformed requests answer our error format', () => {
  it('refuses raw UTF-8 in a query string with a 400 saying how to encode it', async () => {
    const head = Buffer.from('GET /feeds/groups/4005.ics?exclude=лекция HTTP/1.1\r\nHost: x\r\n\r\n', 'utf8');
    const answer = await rawRequest(head);
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
    expect(JSON.parse(answer.body)).toEqual({
      error: expect.stringMatching(/must be percent-encoded/),
      code: 'MALFORMED_URL',
    });
  });

  it('reads a percent-encoded exclude value as UTF-8', async () => {
    // Two Monday classes of kind "практика" and a lecture ("лекция"), on a real group.
    await storeTimetable(t.ctx, 'group:4005');
    const feed = (query: string) => fetch(`http://127.0.0.1:${port}/feeds/groups/4005.ics?${query}`);
    const all = await (await feed('')).text();
    expect(all).toContain('SUMMARY:История (лекция)');
    const excluded = await feed(`exclude=${encodeURIComponent('лекция')}`);
    expect(excluded.status).toBe(200);
    const body = await excluded.text();
    expect(body).not.toContain('(лекция)');
    expect(body).toContain('SUMMARY:Алгебра (практика)');
    // A kind it does not have comes back in the error as the same Cyrillic text.
    const unknown = await feed(`exclude=${encodeURIComponent('семинар')}`);
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: string }).error).toMatch(/^query parameter exclude: "семинар" is not/);
  });

  it('answers a malformed percent-escape in the path with 400, without echoing the path', async () => {
    const response = await fetch(`http://127.0.0.1:${port}/feeds/personal/%E0%A4%A.ics`);
    expect(response.status).toBe(400);
    const body = await response.json();
    expect(body).toEqual({ error: expect.stringMatching(/^malformed URL/), code: 'MALFORMED_URL' });
    expect(JSON.stringify(body)).not.toContain('%E0');
  });

  it('answers an over-long path parameter with 414', async () => {
    const response = await fetch(`http://127.0.0.1:${port}/feeds/personal/${'a'.repeat(400)}.ics`);
    expect(response.status).toBe(414);
    expect(await response.json()).toEqual({ error: expect.stringMatching(/^URL too long/), code: 'URL_TOO_LONG' });
  });

  it('answers an unknown route, a bad JSON body and a wrong content type as {"error", "code"} only', async () => {
    const cases = [
      { url: '/nothing/here', init: {}, status: 404 },
      {
        url: '/api/subscriptions',
        init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"credential":' },
        status: 400,
      },
      {
        url: '/api/subscriptions',
        init: { method: 'POST', headers: { 'content-type': 'text/csv' }, body: 'a,b' },
        status: 415,
      },
    ];
    for (const { url, init, status } of cases) {
      const response = await fetch(`http://127.0.0.1:${port}${url}`, init);
      expect(response.status, url).toBe(status);
      const body = (await response.json()) as Record<string, unknown>;
      expect(Object.keys(body), url).toEqual(['error', 'code']);
      expect(body.error, url).toEqual(expect.any(String));
    }
  });
});

describe('slow clients', () => {
  it('answers 408 and closes a connection whose body arrives one byte at a time', async () => {
    const head =
      'POST /api/subscriptions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n';
    const answer = await rawRequest(head, '{"credential":"'.padEnd(100, 'x'), 300);
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toEqual({ error: 'the request took too long to arrive', code: 'REQUEST_TIMEOUT' });
    // HTTP_REQUEST_TIMEOUT is 2 s; Node checks every quarter of the headers timeout.
    expect(answer.closedAfterMs).toBeLessThan(4_000);
  });

  it('closes a connection whose headers never finish', async () => {
    const answer = await rawRequest('GET /healthz HTTP/1.1\r\nHost: x\r\n', 'X-Slow: 1111111111111111', 300);
    expect(answer.status).toBe(408);
    expect(answer.closedAfterMs).toBeLessThan(3_000);
  });
});

describe('security headers', () => {
  it('sends nosniff on every answer, and no framing headers on JSON or calendars', async () => {
    const response = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('x-frame-options')).toBeNull();
    const missing = await fetch(`http://127.0.0.1:${port}/nothing`);
    expect(missing.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('refuses framing of the HTML pages (Bull Board)', async () => {
    const response = await fetch(`http://127.0.0.1:${port}/admin/queues`, {
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
