import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import ICAL from 'ical.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { encodeFeed, type StoredFeed } from '../../src/store/feed-store.ts';
import { calendar, startTestApp, storeFeed, storeTimetable, type TestApp } from './helpers.ts';

let t: TestApp;
let feed: StoredFeed;
const FEED_URL = '/feeds/groups/4242.ics';
const ICS = calendar('Группа 4242 — расписание');

beforeAll(async () => {
  t = await startTestApp();
  feed = await storeFeed(t.ctx, 'group:4242', ICS, { lastModified: Date.UTC(2025, 9, 1, 12, 0, 0, 700) });
});
afterAll(() => t.close());

const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers });
/** The strong ETag of a compressed body: the stored one with a suffix inside the quotes. */
const coded = (etag: string, suffix: string) => `${etag.slice(0, -1)}${suffix}"`;

function summaries(ics: string): string[] {
  const component = new ICAL.Component(ICAL.parse(ics));
  return component.getAllSubcomponents('vevent').map((event) => String(event.getFirstPropertyValue('summary')));
}

describe('a stored feed', () => {
  it('answers 200 with the bytes, the validators and the caching headers', async () => {
    const response = await get(FEED_URL);
    expect(response.statusCode).toBe(200);
    expect(response.rawPayload.equals(Buffer.from(ICS, 'utf8'))).toBe(true);
    expect(response.headers['content-type']).toBe('text/calendar; charset=utf-8');
    expect(response.headers.etag).toBe(feed.etag);
    expect(response.headers['last-modified']).toBe('Wed, 01 Oct 2025 12:00:00 GMT');
    expect(response.headers['cache-control']).toBe('public, max-age=30');
    expect(response.headers.vary).toBe('Accept-Encoding');
    expect(response.headers['content-encoding']).toBeUndefined();
    expect(response.headers['x-timetable-stale']).toBeUndefined();
    expect(Number(response.headers['content-length'])).toBe(Buffer.byteLength(ICS));
  });

  it('sends br or gzip as asked, both decoding to the same bytes, and honours q=0', async () => {
    const br = await get(FEED_URL, { 'accept-encoding': 'gzip, deflate, br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.rawPayload).equals(Buffer.from(ICS))).toBe(true);
    const gzip = await get(FEED_URL, { 'accept-encoding': 'gzip, br;q=0' });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzip.rawPayload).equals(Buffer.from(ICS))).toBe(true);
    // Different bytes, different strong validators (RFC 9110 §8.8.3); identity keeps the stored one.
    expect(br.headers.etag).toBe(coded(feed.etag, '-br'));
    expect(gzip.headers.etag).toBe(coded(feed.etag, '-gz'));
    expect((await get(FEED_URL)).headers.etag).toBe(feed.etag);
    expect(
      (await get(FEED_URL, { 'accept-encoding': 'br;q=0, gzip;q=0' })).headers['content-encoding'],
    ).toBeUndefined();
    expect((await get(FEED_URL, { 'accept-encoding': 'identity' })).headers['content-encoding']).toBeUndefined();
    expect((await get(FEED_URL, { 'accept-encoding': '*' })).headers['content-encoding']).toBe('br');
    expect((await get(FEED_URL, { 'accept-encoding': 'br;q=0.5, gzip' })).headers['content-encoding']).toBe('gzip');
  });

  it('answers HEAD with the same headers and no body', async () => {
    for (const encoding of [undefined, 'gzip']) {
      const headers: Record<string, string> = encoding ? { 'accept-encoding': encoding } : {};
      const full = await get(FEED_URL, headers);
      const head = await t.app.inject({ method: 'HEAD', url: FEED_URL, headers });
      expect(head.statusCode).toBe(200);
      expect(head.rawPayload.length).toBe(0);
      for (const name of [
        'content-type',
        'etag',
        'last-modified',
        'cache-control',
        'vary',
        'content-encoding',
        'content-length',
      ]) {
        expect(head.headers[name], name).toBe(full.headers[name]);
      }
      expect(Number(head.headers['content-length'])).toBe(full.rawPayload.length);
    }
  });

  it('answers 304 to a matching If-None-Match of any coding: exact, weak, in a list, or *', async () => {
    const weak = `W/${feed.etag}`;
    const gz = coded(feed.etag, '-gz');
    const br = coded(feed.etag, '-br');
    for (const ifNoneMatch of [
      feed.etag,
      weak,
      `"other", ${feed.etag}`,
      `"a","b",${weak}`,
      '*',
      gz,
      `W/${gz}`,
      br,
      `"x", W/${br}`,
    ]) {
      const response = await get(FEED_URL, { 'if-none-match': ifNoneMatch, 'accept-encoding': 'gzip' });
      expect(response.statusCode, ifNoneMatch).toBe(304);
      expect(response.rawPayload.length).toBe(0);
      expect(response.headers.etag).toBe(gz);
      expect(response.headers['cache-control']).toBe('public, max-age=30');
    }
    expect((await get(FEED_URL, { 'if-none-match': br, 'accept-encoding': 'identity' })).headers.etag).toBe(feed.etag);
    expect((await get(FEED_URL, { 'if-none-match': '"nope", W/"other"' })).statusCode).toBe(200);
    expect((await get(FEED_URL, { 'if-none-match': coded(feed.etag, '-zz') })).statusCode).toBe(200);
    const head = await t.app.inject({ method: 'HEAD', url: FEED_URL, headers: { 'if-none-match': feed.etag } });
    expect(head.statusCode).toBe(304);
  });

  it('answers 304 to If-Modified-Since at or after Last-Modified, unless If-None-Match says otherwise', async () => {
    expect((await get(FEED_URL, { 'if-modified-since': 'Wed, 01 Oct 2025 12:00:00 GMT' })).statusCode).toBe(304);
    expect((await get(FEED_URL, { 'if-modified-since': 'Thu, 02 Oct 2025 08:00:00 GMT' })).statusCode).toBe(304);
    expect((await get(FEED_URL, { 'if-modified-since': 'Wed, 01 Oct 2025 11:59:59 GMT' })).statusCode).toBe(200);
    expect((await get(FEED_URL, { 'if-modified-since': 'not a date' })).statusCode).toBe(200);
    const both = await get(FEED_URL, {
      'if-modified-since': 'Thu, 02 Oct 2025 08:00:00 GMT',
      'if-none-match': '"other"',
    });
    expect(both.statusCode).toBe(200);
  });

  it('says since when a feed is stale', async () => {
    const since = Date.UTC(2025, 9, 3, 7, 30, 0);
    await storeFeed(t.ctx, 'employee:17', calendar('stale'), { staleSince: since });
    const response = await get('/feeds/employees/17.ics');
    expect(response.statusCode).toBe(200);
    expect(response.headers['x-timetable-stale']).toBe('2025-10-03T07:30:00.000Z');
  });
});

describe('the feed cache', () => {
  it('serves a hit without Redis and picks up a new feed as soon as it is announced', async () => {
    const source = 'group:77';
    // Stored without an announcement: a late one would drop the copy the first GET caches.
    const first = await storeFeed(t.ctx, source, calendar('first'), { announce: false });
    expect((await get('/feeds/groups/77.ics')).headers.etag).toBe(first.etag);
    // Deleted behind the cache's back (no announcement): the cached copy is still served.
    await t.ctx.redis.del(t.ctx.keys.feed(source));
    expect((await get('/feeds/groups/77.ics')).headers.etag).toBe(first.etag);
    const second = await storeFeed(t.ctx, source, calendar('second'));
    await vi.waitFor(async () => expect((await get('/feeds/groups/77.ics')).headers.etag).toBe(second.etag), {
      timeout: 2_000,
      interval: 20,
    });
    expect((await get('/feeds/groups/77.ics')).body).toContain('second');
  });
});

describe('bad requests', () => {
  it('answers 400 naming a malformed id', async () => {
    for (const [url, shown] of [
      ['/feeds/groups/abc.ics', '"abc"'],
      ['/feeds/groups/0.ics', '"0"'],
      ['/feeds/groups/042.ics', '"042"'],
      ['/feeds/groups/-5.ics', '"-5"'],
      ['/feeds/groups/4.2.ics', '"4.2"'],
      ['/feeds/employees/9007199254740993.ics', '"9007199254740993"'],
      ['/feeds/groups/9007199254740992.ics', '"9007199254740992"'],
    ] as const) {
      const response = await get(url);
      expect(response.statusCode, url).toBe(400);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      const { error } = response.json<{ error: string }>();
      expect(error).toContain(shown);
      // The message names the range accepted, so that its upper end is not itself refused by surprise.
      expect(error).toMatch(/(group|employee) id must be a whole number from 1 to 9007199254740991,/);
    }
    expect((await get('/feeds/groups/9007199254740991.ics')).statusCode).not.toBe(400);
  });

  it('answers 400 naming a bad subscriber option', async () => {
    for (const [query, name] of [
      ['subgroup=0', 'subgroup'],
      ['subgroup=x', 'subgroup'],
      ['subgroup=1&subgroup=2', 'subgroup'],
      ['alarm=10081', 'alarm'],
      ['alarm=-5', 'alarm'],
      [`title=${'x'.repeat(201)}`, 'title'],
      ['title=', 'title'],
      [`exclude=${'k'.repeat(65)}`, 'exclude'],
    ] as const) {
      const response = await get(`${FEED_URL}?${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(response.json<{ error: string }>().error).toContain(`query parameter ${name}`);
    }
  });

  it('ignores query parameters it does not know', async () => {
    const response = await get(`${FEED_URL}?utm_source=app&x=1`);
    expect(response.statusCode).toBe(200);
    expect(response.headers.etag).toBe(feed.etag);
  });
});

describe('subscriber variants', () => {
  it('renders the options into a variant with its own validators', async () => {
    const base = await storeTimetable(t.ctx, 'group:500');
    const url = `/feeds/groups/500.ics?subgroup=1&title=${encodeURIComponent('{subject}: {kind}')}&alarm=15`;
    const response = await get(url);
    expect(response.statusCode).toBe(200);
    const etag = response.headers.etag as string;
    expect(etag).not.toBe(base.etag);
    const titles = new Set(summaries(response.body));
    expect(titles).toEqual(new Set(['Алгебра: практика', 'История: лекция']));
    expect(response.body).toContain('BEGIN:VALARM');
    expect(response.headers['last-modified']).toBe(new Date(Date.UTC(2025, 8, 20, 9, 0, 0)).toUTCString());
    expect(new Set(summaries((await get('/feeds/groups/500.ics')).body))).toEqual(
      new Set(['Алгебра (практика)', 'Геометрия (практика)', 'История (лекция)']),
    );

    const br = await get(url, { 'accept-encoding': 'br' });
    expect(br.headers.etag).toBe(coded(etag, '-br'));
    expect(brotliDecompressSync(br.rawPayload).toString('utf8')).toBe(response.body);
    expect((await get(url, { 'if-none-match': etag })).statusCode).toBe(304);
    expect((await get(url, { 'if-none-match': br.headers.etag as string })).statusCode).toBe(304);
    // The same options in another order and case are the same variant.
    const reordered = await get(
      `/feeds/groups/500.ics?alarm=15&title=${encodeURIComponent('{subject}: {kind}')}&subgroup=1`,
    );
    expect(reordered.headers.etag).toBe(etag);
  });

  it('leaves out excluded kinds, given as a list or repeated', async () => {
    await storeTimetable(t.ctx, 'group:501');
    for (const query of ['exclude=ЛЕКЦИЯ', 'exclude=лекция,ЛЕКЦИЯ', 'exclude=лекция&exclude=Лекция']) {
      const response = await get(`/feeds/groups/501.ics?${query}`);
      expect(new Set(summaries(response.body)), query).toEqual(new Set(['Алгебра (практика)', 'Геометрия (практика)']));
    }
  });

  it('marks a stale variant too', async () => {
    const since = Date.UTC(2025, 9, 5, 6, 0, 0);
    await storeTimetable(t.ctx, 'group:502', undefined, { staleSince: since });
    const response = await get('/feeds/groups/502.ics?subgroup=2');
    expect(response.headers['x-timetable-stale']).toBe(new Date(since).toISOString());
    expect(response.body).toContain('X-TIMETABLE-STALE:2025-10-05T06:00:00.000Z');
  });
});

describe('a stored feed whose gzip form is damaged', () => {
  it('answers an error for the forms made from it, without the caching headers of a feed', async () => {
    const damaged = await encodeFeed(ICS, Date.UTC(2025, 9, 1, 12, 0, 0));
    // The trailer is kept (its ISIZE says the length), the deflate data in the middle is not.
    damaged.gzip.fill(0xff, 10, damaged.gzip.length - 8);
    await t.ctx.feeds.write(t.ctx.redis.multi(), 'group:4343', damaged).exec();
    for (const encoding of ['identity', 'br']) {
      const response = await get('/feeds/groups/4343.ics', { 'accept-encoding': encoding });
      expect(response.statusCode, encoding).toBeGreaterThanOrEqual(500);
      for (const header of ['etag', 'last-modified', 'cache-control', 'content-encoding'])
        expect(response.headers[header], `${encoding} ${header}`).toBeUndefined();
    }
  });
});
