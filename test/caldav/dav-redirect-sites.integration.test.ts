/**
 * Where a CalDAV redirect may take the password, against a real server on loopback that answers for many host
 * names: an Agent whose lookup sends every name to 127.0.0.1 plays the DNS of shared domains (`a.github.io`,
 * `x.narod.ru`), and the server records, per `Host`, whether each request carried the Authorization header.
 */
import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDavTransport, DavHttp, type DavTransport } from '../../src/caldav/dav-http.ts';
import { CalDavAddressRefusedError } from '../../src/caldav/errors.ts';

const CREDENTIALS = { username: 'student', password: 'app-пароль-1' };

/** What the server saw: `host path` and whether the password came with it. */
let seen: { host: string; path: string; authorized: boolean }[] = [];
let server: Server;
let port: number;

beforeAll(async () => {
  // `/from?to=<url>` redirects there; anything else answers 200.
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://placeholder');
    seen.push({
      host: (req.headers.host ?? '').replace(/:\d+$/, ''),
      path: url.pathname,
      authorized: !!req.headers.authorization,
    });
    const to = url.searchParams.get('to');
    if (url.pathname === '/from' && to) res.writeHead(307, { location: to }).end();
    else res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Every name resolves to the server on loopback. */
function loopbackLookup(
  _hostname: string,
  options: { all?: boolean },
  callback: (error: null, address: string | LookupAddress[], family?: number) => void,
): void {
  if (options.all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
  else callback(null, '127.0.0.1', 4);
}

describe('a redirect carries the password to the same registrable site only', () => {
  let agent: Agent;
  let transport: DavTransport;
  let base: DavTransport;

  beforeAll(() => {
    base = createDavTransport({ allowPrivateHosts: true });
    agent = new Agent({ connect: { lookup: loopbackLookup as never } });
    transport = { ...base, dispatcher: agent };
  });
  afterAll(async () => {
    await agent.close();
    await base.close();
  });

  /** Follows `from` → `to` and tells whether the request that reached `to` held the password. */
  async function carried(from: string, to: string): Promise<boolean> {
    seen = [];
    const http = new DavHttp(transport, CREDENTIALS, async () => undefined);
    const start = `http://${from}:${port}/from?to=${encodeURIComponent(`http://${to}:${port}/cal/`)}`;
    const response = await http.send({ method: 'PROPFIND', url: start, body: '<propfind xmlns="DAV:"/>' });
    expect(response.status).toBe(200);
    expect(seen.map((one) => `${one.host}${one.path}`)).toEqual([`${from}/from`, `${to}/cal/`]);
    expect(seen[0]?.authorized).toBe(true);
    return seen[1]?.authorized ?? false;
  }

  it('never to another tenant of a shared domain', async () => {
    expect(await carried('a.github.io', 'b.github.io')).toBe(false);
    expect(await carried('x.narod.ru', 'y.narod.ru')).toBe(false);
    expect(await carried('cal.example.co.uk', 'other.co.uk')).toBe(false);
  });

  it('within one site (a partition host), and never between a name and an address', async () => {
    expect(await carried('caldav.icloud.com', 'p62-caldav.icloud.com')).toBe(true);
    expect(await carried('dav.a.github.io', 'p1.a.github.io')).toBe(true);
    expect(await carried('www.x.narod.ru', 'x.narod.ru')).toBe(true);
    expect(await carried('localhost', '127.0.0.1')).toBe(false);
  });
});

describe('loopback names', () => {
  it('are refused by the guarded transport, with or without the final dot, before any request', async () => {
    const strict = createDavTransport();
    try {
      const http = new DavHttp(strict, CREDENTIALS, async () => undefined);
      seen = [];
      for (const host of ['localhost.', 'a.localhost.', 'caldav.localhost', '[::ffff:0:127.0.0.1]', '[2002:7f00:1::1]'])
        await expect(http.send({ method: 'GET', url: `http://${host}:${port}/` }), host).rejects.toBeInstanceOf(
          CalDavAddressRefusedError,
        );
      expect(seen).toEqual([]);
    } finally {
      await strict.close();
    }
  });
});
