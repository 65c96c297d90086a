/**
 * The fast path in front of fastify (src/serving/feed-fast-path.ts) must answer exactly as the feed routes do.
 * Two apps on the same stores, one with the fast path and one without, get the same requests over real HTTP;
 * every answer's status, body and raw header lines (names as sent, in order; only Date may differ) must agree,
 * and the requests the fast path is meant for must not reach fastify at all.
 */
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { silentLogger } from '../../src/logger.ts';
import { etagOf, type FeedValidators, type StoredFeed } from '../../src/store/feed-store.ts';
import { memoryLogger } from '../upstream/local-server.ts';
import { calendar, startTestApp, storeFeed, storeTimetable, type TestApp } from './helpers.ts';

let t: TestApp;
let routesOnly: FastifyInstance;
let fastUrl: string;
let routesUrl: string;
let group: StoredFeed;
let stale: StoredFeed;
let token: string;
/** Requests (method and URL) that reached fastify in the app with the fast path. */
const reachedFastify: string[] = [];

const GROUP = '/feeds/groups/4242.ics';
const STALE = '/feeds/employees/17.ics';
const VARIANT_SOURCE = '/feeds/groups/5151.ics';

beforeAll(async () => {
  t = await startTestApp();
  t.app.addHook('onRequest', async (request) => {
    reachedFastify.push(`${request.method} ${request.url}`);
  });
  routesOnly = await buildApp(t.ctx, { logger: silentLogger(), feeds: { demandWaitMs: 400 }, feedFastPath: false });
  group = await storeFeed(t.ctx, 'group:4242', calendar('Группа 4242'), {
    lastModified: Date.UTC(2025, 9, 1, 12, 0, 0, 700),
  });
  stale = await storeFeed(t.ctx, 'employee:17', calendar('Преподаватель 17'), {
    lastModified: Date.UTC(2025, 9, 2, 8, 30, 0),
    staleSince: Date.UTC(2025, 9, 3, 6, 0, 0),
  });
  await storeTimetable(t.ctx, 'group:5151');
  const created = await t.ctx.subscriptions.create({
    credential: 'secret-credential',
    name: 'Иван Петров',
    upstreamUserId: 7,
    now: Date.UTC(2025, 9, 1),
  });
  token = created.token;
  await storeFeed(t.ctx, created.subscription.source, calendar('mine'));
  fastUrl = await listen(t.app);
  routesUrl = await listen(routesOnly);
});
afterAll(async () => {
  await routesOnly?.close();
  await t?.close();
});

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

interface Answer {
  status: number;
  /** Raw header lines as received, Date left out. */
  headers: string[];
  body: string;
}

/** One request on a connection of its own, answered as raw header lines and body bytes. */
function send(base: string, method: string, path: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(`${base}${path}`, { method, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const lines: string[] = [];
        for (let index = 0; index < response.rawHeaders.length; index += 2) {
          const name = response.rawHeaders[index] as string;
          if (name.toLowerCase() !== 'date') lines.push(`${name}: ${response.rawHeaders[index + 1]}`);
        }
        resolve({ status: response.statusCode ?? 0, headers: lines, body: Buffer.concat(chunks).toString('base64') });
      });
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

/** The same request to both apps; their answers must agree. */
async function compare(method: string, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const routes = await send(routesUrl, method, path, headers);
  const fast = await send(fastUrl, method, path, headers);
  expect(fast, `${method} ${path} ${JSON.stringify(headers)}`).toEqual(routes);
  return fast;
}

const ENCODINGS = [
  undefined,
  'gzip',
  'br',
  'gzip, deflate, br',
  'gzip, br;q=0',
  'br;q=0.5, gzip',
  'gzip;q=0.4, br;q=0.3, identity;q=0.5',
  'br;q=0, gzip;q=0',
  'identity',
  '*',
  '*;q=0',
  'deflate',
];

function conditions(feed: FeedValidators): (Record<string, string> | undefined)[] {
  const coded = (suffix: string) => `${feed.etag.slice(0, -1)}${suffix}"`;
  const modified = new Date(feed.lastModified);
  return [
    undefined,
    { 'if-none-match': feed.etag },
    { 'if-none-match': coded('-gz') },
    { 'if-none-match': `W/${coded('-br')}` },
    { 'if-none-match': `"other", ${coded('-gz')}` },
    { 'if-none-match': '*' },
    { 'if-none-match': '"other"' },
    { 'if-modified-since': modified.toUTCString() },
    { 'if-modified-since': new Date(feed.lastModified - 60_000).toUTCString() },
    { 'if-modified-since': 'not a date' },
    { 'if-none-match': '"other"', 'if-modified-since': modified.toUTCString() },
  ];
}

describe('the feed fast path', () => {
  it('answers cached public feeds as the feed routes do, without reaching fastify', async () => {
    for (const [path, feed] of [
      [GROUP, group],
      [STALE, stale],
    ] as const) {
      // The first request reads the feed into each app's memory cache; only then is it the fast path's. Its
      // identity and br forms are made on the first request for each (the next test is about that).
      for (const encoding of ['gzip', 'identity', 'br']) await compare('GET', path, { 'accept-encoding': encoding });
      reachedFastify.length = 0;
      for (const method of ['GET', 'HEAD']) {
        for (const encoding of ENCODINGS) {
          for (const condition of conditions(feed)) {
            await compare(method, path, {
              ...(encoding === undefined ? {} : { 'accept-encoding': encoding }),
              ...condition,
            });
          }
        }
      }
      expect(reachedFastify).toEqual([]);
    }
  });

  it('answers a feed stored in the old layout, its identity and br not made yet, alike; each made once', async () => {
    const ics = Buffer.from(calendar('Группа 4343 (old layout)'));
    const old = { etag: etagOf(ics), lastModified: Date.UTC(2025, 9, 1, 12, 0, 0) };
    // As versions that stored three forms wrote it; the api reads the gzip form only.
    await t.ctx.redis.hset(t.ctx.keys.feed('group:4343'), {
      body: ics,
      gzip: gzipSync(ics),
      brotli: brotliCompressSync(ics),
      etag: old.etag,
      lastModified: String(old.lastModified),
    });
    const path = '/feeds/groups/4343.ics';
    reachedFastify.length = 0;
    const first = await compare('GET', path, { 'accept-encoding': 'gzip' });
    expect(gunzipSync(Buffer.from(first.body, 'base64'))).toEqual(ics);
    expect(first.headers).toContain(`etag: ${old.etag.slice(0, -1)}-gz"`);
    // A 304 needs no bytes: answered in front of fastify in every coding at once.
    for (const encoding of ['identity', 'br'])
      await compare('GET', path, { 'accept-encoding': encoding, 'if-none-match': old.etag });
    const afterRead = [...reachedFastify];
    // The first 200 in br (a HEAD too) and in identity waits in fastify for its bytes; the next are answered here.
    const [br] = await Promise.all([
      compare('GET', path, { 'accept-encoding': 'br' }),
      compare('GET', path, { 'accept-encoding': 'br' }),
    ]);
    expect(brotliDecompressSync(Buffer.from(br?.body ?? '', 'base64'))).toEqual(ics);
    await compare('HEAD', path, { 'accept-encoding': 'br' });
    const identity = await compare('GET', path);
    expect(Buffer.from(identity.body, 'base64')).toEqual(ics);
    expect(identity.headers).toContain(`etag: ${old.etag}`);
    expect(identity.headers).toContain('last-modified: Wed, 01 Oct 2025 12:00:00 GMT');
    const madeInFastify = reachedFastify.length - afterRead.length;
    for (const method of ['GET', 'HEAD'])
      for (const encoding of ENCODINGS)
        for (const condition of conditions({ ...old, staleSince: undefined }))
          await compare(method, path, {
            ...(encoding === undefined ? {} : { 'accept-encoding': encoding }),
            ...condition,
          });
    expect(afterRead).toEqual([`GET ${path}`]);
    expect(madeInFastify).toBeLessThanOrEqual(3);
    expect(reachedFastify).toHaveLength(afterRead.length + madeInFastify);
  });

  it('counts what it serves in the served-feeds metric', async () => {
    const counted = async (kind: string, status: string) =>
      (await t.ctx.metrics.feedsServed.get()).values.find(
        (value) => value.labels.kind === kind && value.labels.status === status,
      )?.value ?? 0;
    await send(fastUrl, 'GET', GROUP, {});
    const before = { ok: await counted('group', '200'), notModified: await counted('group', '304') };
    await send(fastUrl, 'GET', GROUP, { 'accept-encoding': 'gzip' });
    await send(fastUrl, 'HEAD', GROUP, {});
    await send(fastUrl, 'GET', GROUP, { 'if-none-match': group.etag });
    expect({ ok: await counted('group', '200'), notModified: await counted('group', '304') }).toEqual({
      ok: before.ok + 2,
      notModified: before.notModified + 1,
    });
  });

  it('leaves variants, personal feeds, misses, odd URLs and other methods to fastify, which answers alike', async () => {
    const cases: [string, string, Record<string, string>?][] = [
      ['GET', `${VARIANT_SOURCE}?subgroup=1`, { 'accept-encoding': 'gzip' }],
      ['GET', `${VARIANT_SOURCE}?subgroup=1`],
      ['GET', `${GROUP}?`],
      ['GET', `${GROUP}?unknown=1`],
      ['GET', `/feeds/personal/${token}.ics`, { 'accept-encoding': 'br' }],
      ['HEAD', `/feeds/personal/${token}.ics`],
      ['GET', `/feeds/personal/${'A'.repeat(43)}.ics`],
      ['GET', '/feeds/groups/abc.ics'],
      ['GET', '/feeds/groups/0.ics'],
      ['GET', '/feeds/groups/04242.ics'],
      ['GET', '/feeds/groups/99999999999999999.ics'],
      ['GET', '/feeds/groups/%34242.ics'],
      ['GET', '/feeds/groups/4242.ics/'],
      ['GET', '/feeds/groups/4242.ICS'],
      ['GET', '/feeds/groups/.ics'],
      ['POST', GROUP],
      ['OPTIONS', GROUP],
    ];
    for (const [method, path, headers] of cases) {
      // Twice: the second request finds whatever the first one put in memory.
      await compare(method, path, headers);
      await compare(method, path, headers);
    }
  });

  it('records the request in the registry and checks X-Forwarded-For, as the routes do', async () => {
    const { logger, output } = memoryLogger();
    const own = await startTestApp({ logger, feeds: { touchEveryMs: 0 } });
    try {
      const reached: string[] = [];
      own.app.addHook('onRequest', async (request) => void reached.push(request.url));
      await storeFeed(own.ctx, 'group:4242', calendar('Группа 4242'));
      const base = await listen(own.app);
      await send(base, 'GET', GROUP, {});
      reached.length = 0;
      const isActive = vi.spyOn(own.ctx.registry, 'isActive');
      await send(base, 'GET', GROUP, { 'x-forwarded-for': '198.51.100.7' });
      expect(reached).toEqual([]);
      expect(isActive).toHaveBeenCalledWith('group:4242');
      const warnings = output()
        .split('\n')
        .filter((line) => line.includes('X-Forwarded-For'));
      expect(warnings).toHaveLength(1);
    } finally {
      await own.close();
    }
  });
});
