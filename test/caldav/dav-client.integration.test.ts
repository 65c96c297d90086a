/**
 * The CalDAV client against a real Radicale (Debian's package, htpasswd users): every request of the plan's
 * probe table through `CalDavClient`, and what Radicale cannot show (absolute hrefs on another host, 415 on
 * a charset, 429/503/507 answers, redirects to another site) through a small rewriting proxy in front of it.
 */
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HASH_PROPERTY, MARKER_PROPERTY } from '../../src/caldav/caldav-client.ts';
import { type ClosableCalDavClientFactory, calDavClientFactory } from '../../src/caldav/dav-client.ts';
import {
  CalDavAddressRefusedError,
  CalDavAuthError,
  CalDavCalendarGoneError,
  CalDavPermanentError,
  CalDavQuotaError,
  CalDavRateLimitError,
  CalDavTransientError,
  EtagMismatchError,
  MkcalendarRefusedError,
  ResourceExistsError,
  ResourceMissingError,
  ResourceRefusedError,
  UidConflictError,
} from '../../src/caldav/errors.ts';
import { mergeOwned } from '../../src/caldav/ics-merge.ts';
import { desiredResources } from '../../src/caldav/ics-resource.ts';
import type { Occurrence } from '../../src/timetable/types.ts';
import { type Radicale, startRadicale } from '../../testkit/radicale.ts';

const PASSWORD = 'secret-Пароль-1';

function occurrence(uid: string, overrides: Partial<Occurrence> = {}): Occurrence {
  return {
    uid,
    entryId: 4711,
    date: '2025-10-01',
    beginTime: '09:00',
    endTime: '10:35',
    timezone: 'Europe/Moscow',
    startUtc: Date.UTC(2025, 9, 1, 6),
    endUtc: Date.UTC(2025, 9, 1, 7, 35),
    summary: 'Математика (лекция)',
    location: 'ауд. 101',
    description: 'Иванов И. И.',
    categories: ['лекция'],
    status: 'CONFIRMED',
    hash: 'h',
    sequence: 0,
    ...overrides,
  };
}

function resource(uid: string, overrides: Partial<Occurrence> = {}) {
  const [one] = desiredResources([occurrence(uid, overrides)], 'group:4242', {
    cancelledPrefix: 'Отменено: ',
    timeZone: 'Europe/Moscow',
    stamp: Date.UTC(2025, 8, 1),
  });
  if (!one) throw new Error('no resource');
  return one;
}

/** What the proxy saw of one request. */
interface Seen {
  method: string;
  path: string;
  contentType: string | undefined;
  authorized: boolean;
}

/** An answer the proxy gives instead of forwarding. */
type Intercept = (seen: Seen) => { status: number; headers?: Record<string, string>; body?: string } | undefined;

/**
 * A proxy in front of Radicale that can answer by itself (`intercept`) and can rewrite Radicale's relative
 * hrefs into absolute ones on its own address, as iCloud's partition hosts answer.
 */
async function startProxy(target: string, options: { absolute?: boolean } = {}) {
  const seen: Seen[] = [];
  let intercept: Intercept = () => undefined;
  const server: Server = createServer((incoming: IncomingMessage, outgoing: ServerResponse) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const one: Seen = {
        method: incoming.method ?? '',
        path: incoming.url ?? '',
        contentType: incoming.headers['content-type'],
        authorized: incoming.headers.authorization !== undefined,
      };
      seen.push(one);
      const answer = intercept(one);
      if (answer) {
        outgoing.writeHead(answer.status, answer.headers ?? {});
        outgoing.end(answer.body ?? '');
        return;
      }
      const upstream = new URL(one.path, target);
      const forwarded = request(
        upstream,
        { method: one.method, headers: { ...incoming.headers, host: upstream.host } },
        (response) => {
          const body: Buffer[] = [];
          response.on('data', (chunk: Buffer) => body.push(chunk));
          response.on('end', () => {
            let text = Buffer.concat(body).toString('utf8');
            const headers = { ...response.headers };
            delete headers['content-length'];
            if (options.absolute) text = text.replace(/<href>\//g, `<href>${address()}`);
            outgoing.writeHead(response.statusCode ?? 502, headers);
            outgoing.end(text);
          });
        },
      );
      forwarded.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = () => `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    url: address(),
    seen,
    intercept: (next: Intercept) => {
      intercept = next;
    },
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

describe('the CalDAV client on a real Radicale', () => {
  let radicale: Radicale;
  let factory: ClosableCalDavClientFactory;
  const hosts: string[] = [];
  let userCount = 0;

  /** A fresh user and its client (each test its own account, so tests do not see each other's calendars). */
  async function account(password = PASSWORD) {
    const user = `user${++userCount}`;
    await radicale.addUser(user, PASSWORD);
    const client = factory({ username: user, password }, async (host) => {
      hosts.push(host);
    });
    return { user, client, home: `${radicale.url}${user}/` };
  }

  async function calendarOf(password = PASSWORD) {
    const owner = await account(password);
    const calendar = await owner.client.makeCalendar(owner.home, 'tts-test', 'Группа 4242', '#1E88E5');
    return { ...owner, calendar };
  }

  beforeAll(async () => {
    radicale = await startRadicale();
    factory = calDavClientFactory({ allowPrivateHosts: true });
  });

  afterAll(async () => {
    await factory?.close();
    await radicale?.close();
  });

  it('discovers an account from the server URL (current-user-principal, calendar-home-set)', async () => {
    const { client, user } = await account();
    const discovery = await client.discover(radicale.url);
    expect(discovery.principalUrl).toBe(`${radicale.url}${user}/`);
    expect(discovery.homeUrl).toBe(`${radicale.url}${user}/`);
    expect(discovery.calendars).toEqual([]);
    expect(hosts.at(-1)).toBe(new URL(radicale.url).host);
  });

  it('finds CalDAV through /.well-known/caldav when the URL given is no DAV resource', async () => {
    const { client, user } = await account();
    const discovery = await client.discover(`${radicale.url}no-dav-here`);
    expect(discovery.principalUrl).toBe(`${radicale.url}${user}/`);
  });

  it('discovers from a calendar URL, and lists the calendar it was given', async () => {
    const { client, user, calendar } = await calendarOf();
    const discovery = await client.discover(calendar.url);
    expect(discovery.homeUrl).toBe(`${radicale.url}${user}/`);
    expect(discovery.calendars.map((found) => found.url)).toEqual([calendar.url]);
    expect(discovery.calendars[0]).toMatchObject({ displayName: 'Группа 4242', supportsSync: true, holdsEvents: true });
  });

  it('answers a wrong password with CalDavAuthError, and never puts the password in the error', async () => {
    const { client } = await account('wrong-Пароль');
    const error = await client.discover(radicale.url).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CalDavAuthError);
    expect((error as CalDavAuthError).status).toBe(401);
    const text = `${String(error)} ${JSON.stringify(error)} ${(error as Error).stack}`;
    expect(text).not.toContain('wrong-Пароль');
    expect(text).not.toContain(Buffer.from('wrong-Пароль').toString('base64').slice(0, 12));
  });

  it('notices a changed password at the next request (htpasswd re-read)', async () => {
    const { client, user } = await account();
    await client.discover(radicale.url);
    await radicale.setPassword(user, 'another');
    await expect(client.discover(radicale.url)).rejects.toBeInstanceOf(CalDavAuthError);
  });

  it('makes a calendar with MKCALENDAR, adopts it when asked again, and is refused in another home', async () => {
    const { client, user, calendar } = await calendarOf();
    expect(calendar).toMatchObject({
      url: `${radicale.url}${user}/tts-test/`,
      displayName: 'Группа 4242',
      supportsSync: true,
      holdsEvents: true,
    });
    expect(calendar.syncToken).toMatch(/^http:\/\/radicale.org\/ns\/sync\//);
    expect(calendar.ctag).toBeTruthy();
    // Radicale answers 409 to the second MKCALENDAR: a retried connect uses the calendar it made.
    const again = await client.makeCalendar(`${radicale.url}${user}/`, 'tts-test', 'Группа 4242', '#1E88E5');
    expect(again.url).toBe(calendar.url);
    const other = await account();
    await expect(client.makeCalendar(other.home, 'mine', 'x', '#000000')).rejects.toBeInstanceOf(
      MkcalendarRefusedError,
    );
    await expect(client.getCalendar(`${radicale.url}${user}/nothing/`)).rejects.toBeInstanceOf(CalDavCalendarGoneError);
    const named = await client.makeCalendar(`${radicale.url}${user}/`, 'amp', 'Физика & химия <1>', '#1E88E5');
    expect(named.displayName).toBe('Физика & химия <1>');
    await client.deleteCalendar(calendar.url);
    await expect(client.getCalendar(calendar.url)).rejects.toBeInstanceOf(CalDavCalendarGoneError);
    await client.deleteCalendar(calendar.url); // gone already: fine
  });

  it('creates, refuses a second create, updates, refuses a stale ETag, deletes, and says missing', async () => {
    const { client, calendar } = await calendarOf();
    const desired = resource('4711-2025-10-01');
    const href = `${calendar.url}${desired.id}.ics`;
    const { etag } = await client.create(href, desired.ics);
    expect(etag).toMatch(/^".+"$/);
    await expect(client.create(href, desired.ics)).rejects.toBeInstanceOf(ResourceExistsError);

    const read = await client.get(href);
    expect(read).toMatchObject({
      href,
      etag,
      uid: '4711-2025-10-01',
      markerValue: 'group:4242',
      hash: desired.hash,
    });
    expect(read?.ics).toContain(`${MARKER_PROPERTY}:group:4242`);
    expect(read?.ics).toContain(`${HASH_PROPERTY}:${desired.hash}`);

    const moved = resource('4711-2025-10-01', { location: 'ауд. 202', sequence: 1 });
    const updated = await client.update(href, moved.ics, etag);
    expect(updated.etag).not.toBe(etag);
    await expect(client.update(href, moved.ics, etag)).rejects.toBeInstanceOf(EtagMismatchError);
    await expect(client.update(href, moved.ics, '"nope"')).rejects.toBeInstanceOf(EtagMismatchError);
    // '' (no ETag known, as after Sabre altered the data): read first, then a conditional write.
    const blind = await client.update(href, desired.ics, '');
    expect((await client.get(href))?.etag).toBe(blind.etag);

    await expect(client.remove(href, updated.etag)).rejects.toBeInstanceOf(EtagMismatchError);
    expect(await client.remove(href, blind.etag)).toBe('deleted');
    expect(await client.remove(href, blind.etag)).toBe('missing');
    expect(await client.get(href)).toBeUndefined();
    await expect(client.update(href, desired.ics, blind.etag)).rejects.toBeInstanceOf(ResourceMissingError);
  });

  it("merges our change into a person's edit as Radicale stores it: their alarm stays, our room wins", async () => {
    const { client, calendar } = await calendarOf();
    const desired = resource('merge-1');
    const href = `${calendar.url}${desired.id}.ics`;
    const { etag } = await client.create(href, desired.ics);
    const alarm = 'BEGIN:VALARM\r\nACTION:DISPLAY\r\nTRIGGER:-PT30M\r\nDESCRIPTION:Скоро\r\nEND:VALARM\r\n';
    const theirs = desired.ics.replace('END:VEVENT', `COLOR:tomato\r\nCATEGORIES:Учёба\r\n${alarm}END:VEVENT`);
    await client.update(href, theirs, etag);
    const moved = resource('merge-1', { location: 'ауд. 303', sequence: 1 });
    await expect(client.update(href, moved.ics, etag)).rejects.toBeInstanceOf(EtagMismatchError);
    const current = await client.get(href);
    await client.update(href, mergeOwned(current?.ics ?? '', moved.ics), current?.etag ?? '');
    const merged = await client.get(href);
    expect(merged).toMatchObject({ uid: 'merge-1', markerValue: 'group:4242', hash: moved.hash });
    expect(merged?.ics).toContain('LOCATION:ауд. 303');
    expect(merged?.ics).toContain('TRIGGER:-PT30M');
    expect(merged?.ics).toContain('COLOR:tomato');
    expect(merged?.ics).toContain('CATEGORIES:Учёба');
  });

  it('answers a second resource with the same UID with UidConflictError (409 no-uid-conflict)', async () => {
    const { client, calendar } = await calendarOf();
    const desired = resource('4711-2025-10-08');
    await client.create(`${calendar.url}${desired.id}.ics`, desired.ics);
    await expect(client.create(`${calendar.url}tts-another.ics`, desired.ics)).rejects.toBeInstanceOf(UidConflictError);
  });

  it('lists in full, then what changed since a sync token, and in full again after a bogus token', async () => {
    const { client, calendar } = await calendarOf();
    const first = resource('a-1');
    const second = resource('a-2');
    await client.create(`${calendar.url}${first.id}.ics`, first.ics);
    const secondEtag = (await client.create(`${calendar.url}${second.id}.ics`, second.ics)).etag;
    // A person's own event: listed with its ETag, never read.
    const theirs = resource('their-own').ics.replace(/^X-TIMETABLE-SYNC-.*\r\n/gm, '');
    await client.create(`${calendar.url}their-own.ics`, theirs);

    const full = await client.list(calendar.url);
    expect(full.full).toBe(true);
    expect(full.removed).toEqual([]);
    expect(full.syncToken).toMatch(/^http:\/\/radicale.org\/ns\/sync\//);
    const byHref = new Map(full.resources.map((one) => [one.href, one]));
    expect([...byHref.keys()].sort()).toEqual(
      [`${calendar.url}${first.id}.ics`, `${calendar.url}${second.id}.ics`, `${calendar.url}their-own.ics`].sort(),
    );
    expect(byHref.get(`${calendar.url}${second.id}.ics`)).toMatchObject({
      etag: secondEtag,
      uid: 'a-2',
      markerValue: 'group:4242',
      hash: second.hash,
    });
    expect(byHref.get(`${calendar.url}their-own.ics`)?.ics).toBeUndefined();

    const third = resource('a-3');
    await client.create(`${calendar.url}${third.id}.ics`, third.ics);
    await client.remove(`${calendar.url}${first.id}.ics`, '');
    const changes = await client.list(calendar.url, full.syncToken);
    expect(changes.full).toBe(false);
    expect(changes.resources.map((one) => [one.href, one.uid])).toEqual([[`${calendar.url}${third.id}.ics`, 'a-3']]);
    expect(changes.removed).toEqual([`${calendar.url}${first.id}.ics`]);
    expect(changes.syncToken).not.toBe(full.syncToken);

    const none = await client.list(calendar.url, changes.syncToken);
    expect(none).toMatchObject({ resources: [], removed: [], full: false, syncToken: changes.syncToken });

    // Radicale answers 403 valid-sync-token: a full listing by PROPFIND, with a token that works next time.
    const bogus = await client.list(calendar.url, 'http://radicale.org/ns/sync/deadbeef');
    expect(bogus.full).toBe(true);
    expect(bogus.resources.map((one) => one.uid).sort()).toEqual(['a-2', 'a-3', undefined]);
    expect(bogus.ctag).toBeTruthy();
    expect((await client.list(calendar.url, bogus.syncToken)).full).toBe(false);
  });

  it('finds a duplicate planted in the calendar folder, as another client would have written it', async () => {
    const { client, calendar, user } = await calendarOf();
    const desired = resource('dup-1');
    await client.create(`${calendar.url}${desired.id}.ics`, desired.ics);
    await radicale.plantFile(user, 'tts-test', 'tts-duplicate.ics', desired.ics);
    const listing = await client.list(calendar.url);
    expect(listing.resources.filter((one) => one.uid === 'dup-1')).toHaveLength(2);
  });

  describe('behind a proxy', () => {
    let proxy: Awaited<ReturnType<typeof startProxy>>;

    beforeAll(async () => {
      proxy = await startProxy(radicale.url, { absolute: true });
    });
    afterAll(async () => {
      await proxy?.close();
    });
    const reset = () => {
      proxy.intercept(() => undefined);
      proxy.seen.length = 0;
    };

    it('resolves absolute hrefs (iCloud answers them on its partition hosts)', async () => {
      reset();
      const { client, user } = await account();
      const discovery = await client.discover(proxy.url);
      expect(discovery.principalUrl).toBe(`${proxy.url}${user}/`);
      const calendar = await client.makeCalendar(discovery.homeUrl, 'abs', 'Абсолютный', '#1E88E5');
      expect(calendar.url).toBe(`${proxy.url}${user}/abs/`);
      const desired = resource('abs-1');
      await client.create(`${calendar.url}${desired.id}.ics`, desired.ics);
      const listing = await client.list(calendar.url);
      expect(listing.resources.map((one) => [one.href, one.uid])).toEqual([
        [`${calendar.url}${desired.id}.ics`, 'abs-1'],
      ]);
      const again = await client.list(calendar.url, 'bogus-token');
      expect(again.resources.map((one) => one.uid)).toEqual(['abs-1']);
    });

    it('retries a PUT refused with 415 as plain text/calendar, and keeps to it', async () => {
      reset();
      const { client, home } = await account();
      const calendar = await client.makeCalendar(home, 'ct', 'ct', '#1E88E5');
      proxy.intercept((seen) =>
        seen.method === 'PUT' && seen.contentType?.includes('charset') ? { status: 415 } : undefined,
      );
      const [one, two] = [resource('ct-1'), resource('ct-2')];
      const proxied = (href: string) => href.replace(radicale.url, proxy.url);
      await client.create(proxied(`${calendar.url}${one.id}.ics`), one.ics);
      await client.create(proxied(`${calendar.url}${two.id}.ics`), two.ics);
      expect(proxy.seen.filter((seen) => seen.method === 'PUT').map((seen) => seen.contentType)).toEqual([
        'text/calendar; charset=utf-8',
        'text/calendar',
        'text/calendar',
      ]);
      proxy.intercept((seen) => (seen.method === 'PUT' ? { status: 415 } : undefined));
      await expect(client.create(proxied(`${calendar.url}x.ics`), one.ics)).rejects.toBeInstanceOf(
        ResourceRefusedError,
      );
    });

    it('classifies 429/503/504 with Retry-After, other 5xx, 507 on a write, and 507 on a REPORT', async () => {
      reset();
      const { client, home } = await account();
      const calendar = await client.makeCalendar(home, 'st', 'st', '#1E88E5');
      const url = calendar.url.replace(radicale.url, proxy.url);
      const href = `${url}tts-1.ics`;
      const { ics } = resource('st-1');
      const answer = (status: number, headers: Record<string, string> = {}) =>
        proxy.intercept((seen) => (seen.method === 'PUT' ? { status, headers } : undefined));

      answer(503, { 'retry-after': '7' });
      const limited = await client.create(href, ics).catch((error: unknown) => error);
      expect(limited).toBeInstanceOf(CalDavRateLimitError);
      expect((limited as CalDavRateLimitError).retryAfterMs).toBe(7000);
      expect((limited as CalDavRateLimitError).host).toBe(new URL(proxy.url).host);

      answer(429, { 'retry-after': new Date(Date.now() + 60_000).toUTCString() });
      const dated = (await client.create(href, ics).catch((error: unknown) => error)) as CalDavRateLimitError;
      expect(dated).toBeInstanceOf(CalDavRateLimitError);
      expect(dated.retryAfterMs).toBeGreaterThan(50_000);

      answer(504);
      await expect(client.create(href, ics)).rejects.toBeInstanceOf(CalDavRateLimitError);
      answer(500);
      await expect(client.create(href, ics)).rejects.toBeInstanceOf(CalDavTransientError);
      answer(507);
      await expect(client.create(href, ics)).rejects.toBeInstanceOf(CalDavQuotaError);
      answer(403);
      await expect(client.create(href, ics)).rejects.toBeInstanceOf(ResourceRefusedError);

      // Yandex answers 507 to a sync-collection over a large calendar: a full listing instead.
      reset();
      await client.create(href, ics);
      proxy.intercept((seen) => (seen.method === 'REPORT' && proxy.seen.length < 3 ? { status: 507 } : undefined));
      const listing = await client.list(url);
      expect(listing.full).toBe(true);
      expect(listing.resources.map((one) => one.uid)).toEqual(['st-1']);
      expect(proxy.seen.map((seen) => seen.method)).toEqual(['PUT', 'REPORT', 'PROPFIND', 'REPORT']);
    });

    it('follows a redirect, but carries the password to the same site only', async () => {
      reset();
      const { client } = await account();
      const elsewhere = await startProxy(radicale.url);
      try {
        // Same host: followed with the password.
        proxy.intercept((seen) =>
          seen.path === '/here/' ? { status: 307, headers: { location: `${proxy.url}` } } : undefined,
        );
        await client.discover(`${proxy.url}here/`);
        expect(proxy.seen.filter((seen) => seen.path === '/').every((seen) => seen.authorized)).toBe(true);
        // Another host (another port is another origin): followed without it; its 401 is no password problem.
        proxy.intercept((seen) =>
          seen.path === '/away/' ? { status: 307, headers: { location: elsewhere.url } } : undefined,
        );
        const error = await client.discover(`${proxy.url}away/`).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(CalDavPermanentError);
        expect(error).not.toBeInstanceOf(CalDavAuthError);
        expect(elsewhere.seen.length).toBeGreaterThan(0);
        expect(elsewhere.seen.some((seen) => seen.authorized)).toBe(false);
      } finally {
        await elsewhere.close();
      }
    });
  });

  it('refuses loopback servers unless private hosts are allowed, judging names by what they resolve to', async () => {
    const strict = calDavClientFactory();
    try {
      const client = strict({ username: 'x', password: PASSWORD }, async () => undefined);
      await expect(client.discover(radicale.url)).rejects.toBeInstanceOf(CalDavAddressRefusedError);
      const byName = radicale.url.replace('127.0.0.1', 'localhost');
      await expect(client.discover(byName)).rejects.toBeInstanceOf(CalDavAddressRefusedError);
      await expect(client.get('http://[::ffff:127.0.0.1]:1/x.ics')).rejects.toBeInstanceOf(CalDavAddressRefusedError);
    } finally {
      await strict.close();
    }
  });

  it('answers a server that stays silent past the headers timeout with CalDavTransientError', async () => {
    const silent = createServer(() => undefined); // never answers
    await new Promise<void>((done) => silent.listen(0, '127.0.0.1', done));
    const quick = calDavClientFactory({ allowPrivateHosts: true, timeouts: { headersMs: 300 } });
    try {
      const client = quick({ username: 'x', password: PASSWORD }, async () => undefined);
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/x.ics`;
      const error = await client.get(url).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(CalDavTransientError);
      expect((error as CalDavTransientError).reason).toBe('UND_ERR_HEADERS_TIMEOUT');
    } finally {
      await quick.close();
      silent.closeAllConnections();
      await new Promise((done) => silent.close(done));
    }
  });

  it('calls beforeRequest with the host before every request', async () => {
    const { client, calendar } = await calendarOf();
    hosts.length = 0;
    await client.get(`${calendar.url}none.ics`);
    await client.list(calendar.url);
    expect(hosts).toEqual([new URL(radicale.url).host, new URL(radicale.url).host]);
  });
});
