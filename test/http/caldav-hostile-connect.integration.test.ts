/**
 * Connecting a CalDAV calendar against hostile servers on loopback, through the routes: an answer no real server
 * sends is refused with a stable code (the page says it in Russian) and logged once with its host and size; a
 * client that hangs up stops the questions to the server; a private address is the URL's fault, as the docs say.
 */
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HostileDav, startHostileDav } from '../../testkit/hostile-dav.ts';
import { BEARER } from '../admin/admin-app.ts';
import { type GoogleApp, PUBLIC_URL, startGoogleApp } from './google-helpers.ts';
import { storeTimetable } from './helpers.ts';

const PUBLIC_HOST = new URL(PUBLIC_URL).host;
const FORM = {
  accept: 'text/html,application/xhtml+xml,*/*;q=0.8',
  host: PUBLIC_HOST,
  origin: PUBLIC_URL,
  'content-type': 'application/x-www-form-urlencoded',
};
const CONNECT = { CALDAV_RATE_LIMIT: '1000', CALDAV_CONNECTS_PER_CLIENT: '1000/1m' };

describe('a hostile server at connect', () => {
  let g: GoogleApp;
  let nested: HostileDav;

  beforeAll(async () => {
    g = await startGoogleApp({ ...CONNECT, CALDAV_ALLOW_PRIVATE: 'true' });
    await storeTimetable(g.ctx, 'group:4301');
    nested = await startHostileDav({ kind: 'nested' });
  }, 60_000);
  afterAll(async () => {
    await nested?.close();
    await g?.close();
  });

  it('refuses 24 MB of nested XML with CALDAV_RESPONSE_TOO_LARGE, logged once with host and size', async () => {
    const answer = await g.app.inject({
      method: 'POST',
      url: '/admin/caldav-targets',
      headers: BEARER,
      payload: { source: 'group:4301', url: nested.url, username: 'u', password: 'secret-app-password' },
    });
    expect(answer.statusCode).toBe(502);
    expect(answer.json()).toMatchObject({ code: 'CALDAV_RESPONSE_TOO_LARGE' });
    const lines = g
      .logs()
      .split('\n')
      .filter((line) => line.includes('caldav answer refused'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ host: new URL(nested.url).host, measure: 'bytes' });
    expect(await g.ctx.caldav.targets.idsForSource('group:4301')).toEqual([]);
  });

  it('says so on the connect page in Russian', async () => {
    const answer = await g.app.inject({
      method: 'POST',
      url: '/caldav/connect',
      headers: FORM,
      payload: new URLSearchParams({
        source: 'group:4301',
        preset: 'other',
        address: nested.url,
        username: 'u',
        password: 'secret-app-password',
      }).toString(),
    });
    expect(answer.statusCode).toBe(502);
    expect(answer.body).toContain('прислал ответ, какого не бывает у CalDAV-серверов');
  });

  it('stops asking the server when the client hangs up', async () => {
    const drip = await startHostileDav({ kind: 'drip', everyMs: 2_000 });
    try {
      await g.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = g.app.server.address() as AddressInfo;
      const body = JSON.stringify({ source: 'group:4301', url: drip.url, username: 'u', password: 'pw-123456' });
      const sent = httpRequest({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/admin/caldav-targets',
        headers: { ...BEARER, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      });
      sent.on('error', () => undefined);
      sent.end(body);
      await expect.poll(() => drip.requests, { timeout: 5_000 }).toBe(1);
      sent.destroy();
      // The service hangs up on the server at once, well before the 30 s deadline, and asks nothing more.
      await expect.poll(() => drip.hungUp, { timeout: 3_000 }).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(drip.requests).toBe(1);
    } finally {
      await drip.close();
    }
  });
});

describe('a private address', () => {
  let g: GoogleApp;

  beforeAll(async () => {
    g = await startGoogleApp({ ...CONNECT, CALDAV_ALLOW_PRIVATE: 'false' });
    await storeTimetable(g.ctx, 'group:4302');
  }, 60_000);
  afterAll(async () => {
    await g?.close();
  });

  it('is 400 CALDAV_URL_REFUSED in the JSON API, a literal or a name resolving to one', async () => {
    for (const url of ['https://127.0.0.1:9/', 'https://10.0.0.1/', 'https://localhost:9/']) {
      const answer = await g.app.inject({
        method: 'POST',
        url: '/admin/caldav-targets',
        headers: BEARER,
        payload: { source: 'group:4302', url, username: 'u', password: 'secret-app-password' },
      });
      expect(answer.statusCode, url).toBe(400);
      expect(answer.json(), url).toMatchObject({ code: 'CALDAV_URL_REFUSED' });
    }
  });

  it('is said on the page as the address, never «is this a CalDAV server?»', async () => {
    const answer = await g.app.inject({
      method: 'POST',
      url: '/caldav/connect',
      headers: FORM,
      payload: new URLSearchParams({
        source: 'group:4302',
        preset: 'other',
        address: 'https://192.168.1.1/',
        username: 'u',
        password: 'secret-app-password',
      }).toString(),
    });
    expect(answer.statusCode).toBe(400);
    expect(answer.body).toContain('ведёт во внутреннюю или частную сеть');
    expect(answer.body).not.toContain('это точно адрес CalDAV-сервера');
    expect(answer.body).toMatch(/id="caldav-address"[^>]*aria-invalid="true"/);
  });
});

describe('a connect of many slow requests, asked by a client that waits', () => {
  let g: GoogleApp;
  let slow: HostileDav;

  beforeAll(async () => {
    g = await startGoogleApp({ ...CONNECT, CALDAV_ALLOW_PRIVATE: 'true', CALDAV_REQUEST_TIMEOUT: '1s' });
    await storeTimetable(g.ctx, 'group:4302');
    slow = await startHostileDav({ kind: 'slow-dav', delayMs: 800 });
  }, 60_000);
  afterAll(async () => {
    await slow?.close();
    await g?.close();
  });

  it('ends at twice the request deadline, though every request answered within it', async () => {
    const started = Date.now();
    const answer = await g.app.inject({
      method: 'POST',
      url: '/admin/caldav-targets',
      headers: BEARER,
      payload: { source: 'group:4302', url: slow.url, username: 'u', password: 'secret-app-password' },
    });
    const elapsed = Date.now() - started;
    // Five requests of 0.8 s took 4 s before, and ended in whatever the last answer meant.
    expect(answer.json()).toMatchObject({ code: 'CALDAV_UNREACHABLE' });
    expect(elapsed).toBeGreaterThanOrEqual(1_900);
    expect(elapsed).toBeLessThan(3_200);
    expect(slow.requests).toBeLessThanOrEqual(3);
    await expect.poll(() => slow.hungUp).toBe(1);
    expect(await g.ctx.caldav.targets.idsForSource('group:4302')).toEqual([]);
  });
});
