import type { AddressInfo } from 'node:net';
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import {
  createUniversityClient,
  type UniversityClient,
  type UniversityClientOptions,
} from '../../src/upstream/client.ts';
import {
  UpstreamHttpError,
  UpstreamNetworkError,
  UpstreamProtocolError,
  UpstreamRateLimitError,
  UpstreamTimeoutError,
} from '../../src/upstream/errors.ts';
import { rawEntry } from './fixtures.ts';
import { type LocalServer, sendJson, sleepSpy, startLocalServer } from './local-server.ts';

let server: LocalServer;
const clients: UniversityClient[] = [];

function client(overrides: Partial<UniversityClientOptions> = {}): UniversityClient {
  const created = createUniversityClient({
    baseUrl: server.url,
    logger: silentLogger(),
    retry: { attempts: 3, baseDelayMs: 5, maxDelayMs: 20 },
    ...overrides,
  });
  clients.push(created);
  return created;
}

beforeAll(async () => {
  server = await startLocalServer();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  server.seen.length = 0;
});
afterAll(() => server.close());

describe('requests', () => {
  it('keeps the base path prefix and sends accept and user-agent headers, no credential', async () => {
    server.handle((_req, res) => sendJson(res, 200, { success: true, subjects: [rawEntry()] }));
    const result = await client({ baseUrl: `${server.url}/api/v2/` }).groupSchedule('42');
    expect(result.entries).toHaveLength(1);
    expect(server.seen[0]).toMatchObject({ method: 'GET', url: '/api/v2/groups/42/schedule' });
    expect(server.seen[0]?.headers.accept).toBe('application/json');
    expect(server.seen[0]?.headers['user-agent']).toMatch(/^timetable-sync\/\d+\.\d+\.\d+/);
    expect(server.seen[0]?.headers.authorization).toBeUndefined();
  });

  it('encodes the search query with URLSearchParams', async () => {
    server.handle((_req, res) => sendJson(res, 200, { success: true, users: [] }));
    await client().searchEmployees('Иванов & Co/?=');
    const url = new URL(server.seen[0]?.url ?? '', server.url);
    expect(url.pathname).toBe('/employees');
    expect(url.searchParams.get('q')).toBe('Иванов & Co/?=');
  });

  it('POSTs { select } as JSON only when a selection is given', async () => {
    server.handle((_req, res) =>
      sendJson(res, 200, {
        success: true,
        user: { id: 1, username: 'u', firstName: 'a', lastName: 'b', gender: 'MALE' },
      }),
    );
    await client().me('secret-token');
    await client().me('secret-token', { gender: true });
    expect(server.seen.map((r) => [r.method, r.url, r.body])).toEqual([
      ['POST', '/users/@me', ''],
      ['POST', '/users/@me', '{"select":{"gender":true}}'],
    ]);
    expect(server.seen[1]?.headers['content-type']).toBe('application/json');
    expect(server.seen[0]?.headers.authorization).toBe('Bearer secret-token');
  });

  it('spells out group: true as every group key, since the API takes a nested object', async () => {
    server.handle((_req, res) =>
      sendJson(res, 200, {
        success: true,
        user: {
          group: {
            id: 1,
            name: 'g',
            instituteName: 'i',
            specialization: 's',
            speciality: 's',
            yearStart: 2024,
            yearEnd: 2028,
          },
        },
      }),
    );
    const user = await client().me('secret-token', { group: true });
    expect(user.group?.name).toBe('g');
    expect(JSON.parse(server.seen[0]?.body ?? '{}')).toEqual({
      select: {
        group: {
          id: true,
          name: true,
          instituteName: true,
          specialization: true,
          speciality: true,
          yearStart: true,
          yearEnd: true,
        },
      },
    });
  });

  it('scrubs a credential the upstream echoes back from error texts', async () => {
    server.handle((req, res) => {
      const token = String(req.headers.authorization).replace('Bearer ', '');
      if (req.url === '/users/@me/schedule') sendJson(res, 401, { error: `token ${token} is not valid` });
      else sendJson(res, 200, { success: false, error: `no user for ${token}` });
    });
    const denied = (await client()
      .mySchedule('echo-me-123')
      .catch((err: unknown) => err)) as Error;
    expect(denied.message).toContain('[redacted]');
    expect(denied.message).not.toContain('echo-me-123');
    const failed = (await client()
      .myPlan('echo-me-123')
      .catch((err: unknown) => err)) as Error;
    expect(failed.message).toContain('no user for [redacted]');
    expect(failed.message).not.toContain('echo-me-123');
  });

  it('refuses a credential that cannot travel in a header, without sending anything or echoing it', async () => {
    const error = await client()
      .mySchedule('tok\r\nX-Evil: 1')
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).not.toContain('tok');
    expect(server.seen).toHaveLength(0);
  });
});

describe('failures the simulator cannot produce', () => {
  it('stops reading a body over maxResponseBytes, with or without content-length, and does not retry', async () => {
    const big = JSON.stringify({ success: true, subjects: Array.from({ length: 50 }, () => rawEntry()) });
    for (const chunked of [false, true]) {
      server.seen.length = 0;
      server.handle((_req, res) => {
        res.writeHead(
          200,
          chunked ? { 'content-type': 'application/json' } : { 'content-length': Buffer.byteLength(big) },
        );
        if (chunked) res.write(big.slice(0, 100));
        res.end(chunked ? big.slice(100) : big);
      });
      const error = await client({ maxResponseBytes: 1000 })
        .groupSchedule(1)
        .catch((err: unknown) => err);
      expect(error).toBeInstanceOf(UpstreamProtocolError);
      expect(error).toMatchObject({ reason: 'too-large', retryable: false });
      expect(server.seen).toHaveLength(1);
    }
  });

  it('maps a refused connection to UpstreamNetworkError and retries it', async () => {
    const closed = await startLocalServer();
    await closed.close();
    const { sleep, delays } = sleepSpy();
    const error = await client({ baseUrl: closed.url, sleep })
      .groupSchedule(1)
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamNetworkError);
    expect(error).toMatchObject({ code: 'ECONNREFUSED', attempts: 3, retryable: true });
    expect(delays).toHaveLength(2);
    expect((error as Error).cause).toBeDefined();
  });

  it('maps a connection that never completes to a connect timeout', async () => {
    // A TLS connection is only "connected" after the handshake: a silent TCP peer makes it time out.
    const sockets: Socket[] = [];
    const silent: Server = createNetServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const slow = client({
        baseUrl: `https://127.0.0.1:${port}`,
        timeouts: { connectMs: 100 },
        retry: { attempts: 2, baseDelayMs: 1 },
      });
      const error = await slow.groupSchedule(1).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(UpstreamTimeoutError);
      expect(error).toMatchObject({ phase: 'connect', attempts: 2 });
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  it('keeps a short text snippet of a non-JSON error body', async () => {
    server.handle((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end(`<html><body>Bad   gateway\n${'x'.repeat(500)}</body></html>`);
    });
    const error = await client({ retry: { attempts: 1 } })
      .groupSchedule(1)
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamHttpError);
    const message = (error as UpstreamHttpError).upstreamMessage ?? '';
    expect(message.startsWith('<html><body>Bad gateway x')).toBe(true);
    expect(message.length).toBeLessThanOrEqual(200);
  });

  it('treats 401 on a public endpoint as a plain HTTP error', async () => {
    server.handle((_req, res) => sendJson(res, 401, { error: 'Нет доступа' }));
    const error = await client()
      .employeeSchedule(5)
      .catch((err: unknown) => err);
    expect(error).toMatchObject({ name: 'UpstreamHttpError', status: 401, upstreamMessage: 'Нет доступа' });
    expect(server.seen).toHaveLength(1);
  });

  it('honours a Retry-After HTTP-date against the injected clock', async () => {
    const now = Date.parse('2025-10-01T12:00:00Z');
    let calls = 0;
    server.handle((_req, res) => {
      calls += 1;
      if (calls === 1)
        sendJson(res, 429, { error: 'Слишком много запросов' }, { 'retry-after': 'Wed, 01 Oct 2025 12:00:02 GMT' });
      else sendJson(res, 200, { success: true, subjects: [] });
    });
    const { sleep, delays } = sleepSpy();
    await expect(client({ sleep, now: () => now }).groupSchedule(1)).resolves.toEqual({ entries: [], problems: [] });
    expect(delays).toEqual([2000]);
  });

  it('backs off with full jitter when 429 has no Retry-After', async () => {
    server.handle((_req, res) => sendJson(res, 429, { error: 'Подождите' }));
    const { sleep, delays } = sleepSpy();
    const retry = { attempts: 4, baseDelayMs: 100, maxDelayMs: 250 };
    const error = await client({ sleep, retry, random: () => 0.5 })
      .groupSchedule(1)
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamRateLimitError);
    expect(delays).toEqual([50, 100, 125]);
  });

  it('rejects with the caller’s abort reason, mid-request and between retries', async () => {
    server.handle(() => undefined); // never answers
    const controller = new AbortController();
    const reason = new Error('stop');
    const pending = client().groupSchedule(1, { signal: controller.signal });
    setTimeout(() => controller.abort(reason), 50);
    await expect(pending).rejects.toBe(reason);

    server.handle((_req, res) => sendJson(res, 503, { error: 'busy' }));
    const second = new AbortController();
    const waiting = client({ retry: { attempts: 3, baseDelayMs: 10_000 }, random: () => 1 }).groupSchedule(1, {
      signal: second.signal,
    });
    setTimeout(() => second.abort(reason), 50);
    await expect(waiting).rejects.toBe(reason);
  });
});
