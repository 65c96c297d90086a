import { describe, expect, it } from 'vitest';
import { toHttpError } from '../../src/http/errors.ts';
import { parseSubscriberQuery } from '../../src/http/subscriber-query.ts';
import { OptionRefusedError } from '../../src/serving/errors.ts';
import { FeedForms, type ServedFeed } from '../../src/serving/feed-forms.ts';
import { chooseEncoding, codingEtag, isNotModified, noneMatchHits } from '../../src/serving/negotiate.ts';
import { VariantCache } from '../../src/serving/variant-cache.ts';
import { compressFeed, etagOf } from '../../src/store/feed-store.ts';

describe('chooseEncoding', () => {
  it.each([
    [undefined, 'identity'],
    ['', 'identity'],
    ['gzip, deflate, br', 'br'],
    ['gzip', 'gzip'],
    ['BR', 'br'],
    ['br;q=0, gzip', 'gzip'],
    ['br;q=0.4, gzip;q=0.8', 'gzip'],
    ['br;q=0.8, gzip;q=0.8', 'br'],
    ['*', 'br'],
    ['*;q=0.5, br;q=0', 'gzip'],
    ['gzip;q=0, br;q=0', 'identity'],
    ['*;q=0', 'identity'],
    ['gzip;q=0.5, identity', 'identity'],
    ['deflate', 'identity'],
    ['gzip ; q = 0.9 , br;q=1', 'br'],
  ] as const)('%j → %s', (header, expected) => {
    expect(chooseEncoding(header)).toBe(expected);
  });
});

describe('conditional requests', () => {
  const etag = '"abc"';
  it('compares entity tags weakly, in lists, with *', () => {
    expect(noneMatchHits('"abc"', etag)).toBe(true);
    expect(noneMatchHits('W/"abc"', etag)).toBe(true);
    expect(noneMatchHits('"x", W/"abc"', etag)).toBe(true);
    expect(noneMatchHits('"x","y"', etag)).toBe(false);
    expect(noneMatchHits('*', etag)).toBe(true);
    expect(noneMatchHits('abc', etag)).toBe(false);
    expect(noneMatchHits('"ab"', etag)).toBe(false);
  });

  it('gives each content coding its own strong ETag, and matches any coding of the current feed', () => {
    expect(codingEtag(etag, 'identity')).toBe('"abc"');
    expect(codingEtag(etag, 'gzip')).toBe('"abc-gz"');
    expect(codingEtag(etag, 'br')).toBe('"abc-br"');
    expect(noneMatchHits('"abc-gz"', etag)).toBe(true);
    expect(noneMatchHits('W/"abc-br"', etag)).toBe(true);
    expect(noneMatchHits('"x", "abc-br"', etag)).toBe(true);
    expect(noneMatchHits('"abc-zz"', etag)).toBe(false);
    expect(noneMatchHits('"abc-gz-gz"', etag)).toBe(false);
    expect(noneMatchHits('"ab-gz"', etag)).toBe(false);
    expect(isNotModified({ ifNoneMatch: '"abc-br"' }, etag, 0)).toBe(true);
  });

  it('uses If-Modified-Since only without If-None-Match', () => {
    const lastModified = Date.UTC(2025, 9, 1, 12, 0, 0);
    expect(isNotModified({ ifModifiedSince: new Date(lastModified).toUTCString() }, etag, lastModified)).toBe(true);
    expect(isNotModified({ ifModifiedSince: new Date(lastModified - 1000).toUTCString() }, etag, lastModified)).toBe(
      false,
    );
    expect(
      isNotModified({ ifModifiedSince: new Date(lastModified).toUTCString(), ifNoneMatch: '"x"' }, etag, lastModified),
    ).toBe(false);
    expect(isNotModified({}, etag, lastModified)).toBe(false);
  });
});

describe('parseSubscriberQuery', () => {
  it('reads every option and writes one canonical key for equal options', () => {
    const a = parseSubscriberQuery({
      subgroup: '2',
      exclude: ['Лекция, семинар', 'лекция'],
      alarm: '0',
      title: '{subject}',
    });
    expect(a.options).toEqual({
      subgroup: 2,
      excludeKinds: ['лекция', 'семинар'],
      alarmMinutes: 0,
      titleTemplate: '{subject}',
    });
    const b = parseSubscriberQuery({ title: '{subject}', alarm: '0', exclude: 'семинар,ЛЕКЦИЯ', subgroup: '2' });
    expect(b.canonical).toBe(a.canonical);
    expect(parseSubscriberQuery({}).canonical).toBe('');
    expect(parseSubscriberQuery({ exclude: ' , ' }).canonical).toBe('');
    expect(parseSubscriberQuery({ other: 'x' }).options).toEqual({});
  });

  it.each([
    [{ subgroup: '0' }, 'subgroup'],
    [{ subgroup: '1.5' }, 'subgroup'],
    [{ subgroup: ['1', '2'] }, 'subgroup'],
    [{ alarm: '10081' }, 'alarm'],
    [{ alarm: '1e3' }, 'alarm'],
    [{ title: 'x'.repeat(201) }, 'title'],
    [{ title: 'a\nb' }, 'title'],
    [{ exclude: Array.from({ length: 21 }, (_, i) => `k${i}`).join(',') }, 'exclude'],
  ])('refuses %j naming %s', (query, name) => {
    const attempt = () => parseSubscriberQuery(query);
    expect(attempt).toThrow(OptionRefusedError);
    expect(attempt).toThrow(`query parameter ${name}`);
    expect(toHttpError(catchError(attempt))).toMatchObject({ statusCode: 400, code: 'INVALID_QUERY' });
    expect(catchError(attempt)).toMatchObject({ field: name });
  });

  it('accepts the limits', () => {
    expect(parseSubscriberQuery({ alarm: '10080', title: 'x'.repeat(200) }).options).toEqual({
      alarmMinutes: 10080,
      titleTemplate: 'x'.repeat(200),
    });
  });
});

describe('VariantCache', () => {
  const variant = async (text: string): Promise<ServedFeed> => {
    const body = Buffer.from(text.repeat(50));
    const { gzip, brotli } = await compressFeed(body);
    return { forms: new FeedForms(gzip, { identity: body, brotli }), etag: etagOf(body), lastModified: 0 };
  };

  it('renders a variant once for concurrent requests and evicts the least recently used', async () => {
    const cache = new VariantCache({ maxEntries: 2 });
    let renders = 0;
    const render = (text: string) => async () => {
      renders += 1;
      return variant(text);
    };
    const [one, two] = await Promise.all([cache.get('a', render('a')), cache.get('a', render('a'))]);
    expect(one).toBe(two);
    expect(renders).toBe(1);
    await cache.get('b', render('b'));
    await cache.get('a', render('a'));
    await cache.get('c', render('c'));
    expect(cache.size).toBe(2);
    expect(renders).toBe(3);
    await cache.get('a', render('a'));
    expect(renders).toBe(3);
    await cache.get('b', render('b'));
    expect(renders).toBe(4);
  });

  it('keeps within its byte budget and forgets a failed render', async () => {
    const budget = (await variant('x')).forms.bytes * 2 + 10;
    const cache = new VariantCache({ maxBytes: budget });
    for (const key of ['x', 'y', 'z']) await cache.get(key, async () => variant(key));
    expect(cache.size).toBe(2);
    expect(cache.budgetBytes).toBe(budget);
    expect(cache.cachedBytes).toBe((await variant('y')).forms.bytes + (await variant('z')).forms.bytes);
    await expect(cache.get('bad', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await cache.get('bad', async () => variant('ok'))).toBeDefined();
  });
});

/** The error `attempt` throws. */
function catchError(attempt: () => unknown): Error {
  try {
    attempt();
  } catch (error) {
    return error as Error;
  }
  throw new Error('nothing thrown');
}
