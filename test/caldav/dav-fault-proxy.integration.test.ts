/**
 * The CalDAV fault proxy in front of a real Radicale, through the real client: faults before and after a write
 * (after: the server holds the write, the client heard 503), Retry-After, the same seed giving the same faults,
 * absolute hrefs on a second port; then the push engine itself through 30 % of such faults, ending exact with no
 * UID stored twice in Radicale's folder.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CalDavClient } from '../../src/caldav/caldav-client.ts';
import { type ClosableCalDavClientFactory, calDavClientFactory } from '../../src/caldav/dav-client.ts';
import { CalDavRateLimitError } from '../../src/caldav/errors.ts';
import { desiredResources } from '../../src/caldav/ics-resource.ts';
import { type CalDavIndex, hrefFor, ownedValue } from '../../src/caldav/resource-index.ts';
import { syncCaldav } from '../../src/caldav/sync-caldav.ts';
import { silentLogger } from '../../src/logger.ts';
import type { Occurrence } from '../../src/timetable/types.ts';
import { type DavFaultProxy, startDavFaultProxy } from '../../testkit/dav-fault-proxy.ts';
import { type Radicale, startRadicale } from '../../testkit/radicale.ts';

const PASSWORD = 'secret-1';
const SOURCE = 'group:4242';

function occurrences(count: number, room = 'ауд. 101'): Occurrence[] {
  return Array.from({ length: count }, (_, n) => {
    const day = String((n % 28) + 1).padStart(2, '0');
    return {
      uid: `${n}-fault@timetable`,
      entryId: n,
      date: `2025-10-${day}`,
      beginTime: '09:00',
      endTime: '10:35',
      timezone: 'Europe/Moscow',
      startUtc: Date.UTC(2025, 9, n % 28, 6),
      endUtc: Date.UTC(2025, 9, n % 28, 7, 35),
      summary: `Предмет ${n}`,
      location: room,
      description: '',
      categories: [],
      status: 'CONFIRMED',
      hash: 'h',
      sequence: 0,
    };
  });
}

const desired = (count: number, room?: string) =>
  desiredResources(occurrences(count, room), SOURCE, {
    cancelledPrefix: 'Отменено: ',
    timeZone: 'Europe/Moscow',
    stamp: Date.UTC(2025, 8, 1),
  });

class MapIndex implements CalDavIndex {
  map = new Map<string, string>();
  async read() {
    return new Map(this.map);
  }
  async set(id: string, value: string) {
    this.map.set(id, value);
  }
  async remove(id: string) {
    this.map.delete(id);
  }
  async replace(entries: Map<string, string>) {
    this.map = new Map(entries);
  }
}

/** UID → the files holding it, from Radicale's own folder. */
async function uidsOnDisk(folder: string): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  for (const name of await readdir(folder)) {
    if (!name.endsWith('.ics')) continue;
    const uid = /\r?\nUID:([^\r\n]+)/.exec(await readFile(join(folder, name), 'utf8'))?.[1] ?? `?${name}`;
    found.set(uid, [...(found.get(uid) ?? []), name]);
  }
  return found;
}

describe('the CalDAV fault proxy in front of Radicale', () => {
  let radicale: Radicale;
  let factory: ClosableCalDavClientFactory;
  const proxies: DavFaultProxy[] = [];
  let users = 0;

  async function setup(options: Parameters<typeof startDavFaultProxy>[1] = {}) {
    const user = `fault${++users}`;
    await radicale.addUser(user, PASSWORD);
    const proxy = await startDavFaultProxy(radicale.url, options);
    proxies.push(proxy);
    const client: CalDavClient = factory({ username: user, password: PASSWORD }, async () => {});
    const rate = options.rate;
    proxy.configure({ rate: 0 });
    const calendar = await client.makeCalendar(`${proxy.url}${user}/`, 'timetable', 'Группа 4242', '#1E88E5');
    proxy.configure({ rate: rate ?? 0 });
    return { user, proxy, client, calendar, folder: radicale.collectionDir(user, 'timetable') };
  }

  beforeAll(async () => {
    radicale = await startRadicale();
    factory = calDavClientFactory({ allowPrivateHosts: true });
  });

  afterAll(async () => {
    await Promise.all(proxies.map((proxy) => proxy.close()));
    await factory?.close();
    await radicale?.close();
  });

  it("'before' answers 503 without forwarding; 'after' forwards first, so the write is there", async () => {
    const { proxy, client, calendar, folder } = await setup({ rate: 1, methods: ['PUT'], retryAfter: '1' });
    const [one, two] = desired(2);
    if (!one || !two) throw new Error('no resources');
    const error = await client.create(hrefFor(calendar.url, one.id), one.ics).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CalDavRateLimitError);
    expect((error as CalDavRateLimitError).retryAfterMs).toBe(1000);
    expect(await readdir(folder)).not.toContain(`${one.id}.ics`);
    proxy.configure({ when: 'after', retryAfter: undefined });
    await expect(client.create(hrefFor(calendar.url, two.id), two.ics)).rejects.toBeInstanceOf(CalDavRateLimitError);
    expect(await readdir(folder)).toContain(`${two.id}.ics`);
    expect(proxy.faults.get('PUT')).toBeGreaterThanOrEqual(2);
    expect(proxy.answered.get('PUT 201')).toBe(1);
    // Reads are not faulted (methods: PUT only): the client sees what the server holds.
    expect((await client.get(hrefFor(calendar.url, two.id)))?.uid).toBe(two.uid);
  });

  it('the same seed faults the same requests', async () => {
    const pattern = async () => {
      const { proxy, client, calendar } = await setup({ seed: 'same', rate: 0.3 });
      const outcomes: boolean[] = [];
      for (let n = 0; n < 20; n++)
        outcomes.push(
          await client.getCalendar(calendar.url).then(
            () => true,
            () => false,
          ),
        );
      expect(proxy.seen('PROPFIND')).toBeGreaterThanOrEqual(20);
      return outcomes;
    };
    const first = await pattern();
    expect(first).toContain(false);
    expect(first).toContain(true);
    expect(await pattern()).toEqual(first);
  });

  it('rewrites hrefs as absolute URLs on its second port, where the client then goes (iCloud partition hosts)', async () => {
    const { proxy, client, calendar } = await setup({ absoluteHrefs: 'partition' });
    const [one] = desired(1);
    if (!one) throw new Error('no resource');
    await client.create(hrefFor(calendar.url, one.id), one.ics);
    const listing = await client.list(calendar.url);
    expect(listing.resources.map((resource) => resource.href)).toEqual([
      `${proxy.partitionUrl}${calendar.url.slice(proxy.url.length)}${one.id}.ics`,
    ]);
    expect(listing.resources[0]?.uid).toBe(one.uid);
  });

  it('delays each PUT as asked', async () => {
    const { proxy, client, calendar } = await setup({ putDelayMs: 150 });
    const [one] = desired(1);
    if (!one) throw new Error('no resource');
    const started = performance.now();
    await client.create(hrefFor(calendar.url, one.id), one.ics);
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    expect(proxy.seen('PUT')).toBe(1);
  });

  it('the push through 30 % of 503s before and after its requests ends exact, no UID stored twice', async () => {
    const { proxy, client, calendar, folder } = await setup({ seed: 28, rate: 0.3, when: 'both' });
    const index = new MapIndex();
    let syncToken: string | undefined;
    const push = async (resources: ReturnType<typeof desired>, reconcile: boolean) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await syncCaldav({
            client,
            calendarUrl: calendar.url,
            source: SOURCE,
            desired: resources,
            index,
            reconcile,
            syncToken,
            onListing: async (listing) => {
              syncToken = listing.syncToken;
            },
            log: silentLogger(),
          });
        } catch (error) {
          if (!(error instanceof CalDavRateLimitError) || attempt > 60) throw error;
        }
      }
    };
    const first = desired(40);
    await push(first, true);
    const moved = [...desired(40, 'ауд. 202').slice(0, 10), ...first.slice(10, 35)];
    await push(moved, false);
    proxy.configure({ rate: 0 });
    const written = proxy.answered.get('PUT 201') ?? 0;
    // Exact, and stable: a reconcile without faults writes nothing.
    expect(await push(moved, true)).toMatchObject({ writes: 0, unchanged: 35 });
    const onDisk = await uidsOnDisk(folder);
    expect([...onDisk.values()].filter((files) => files.length > 1)).toEqual([]);
    expect([...onDisk.keys()].sort()).toEqual(moved.map((resource) => resource.uid).sort());
    for (const resource of moved) {
      const got = await client.get(hrefFor(calendar.url, resource.id));
      expect(got?.hash).toBe(resource.hash);
      expect(index.map.get(resource.id)).toBe(ownedValue(resource.hash, got?.etag ?? ''));
    }
    // 40 creates and 10 updates at least; some more for writes the client never heard about, never a duplicate.
    expect(written).toBeGreaterThanOrEqual(50);
    expect(proxy.faults.get('PUT') ?? 0).toBeGreaterThan(5);
  });
});
