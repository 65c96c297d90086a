import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { type DesiredResource, HASH_PROPERTY, MARKER_PROPERTY } from '../../src/caldav/caldav-client.ts';
import {
  CalDavAuthError,
  CalDavRateLimitError,
  CalDavTransientError,
  ResourceRefusedError,
  UidConflictError,
} from '../../src/caldav/errors.ts';
import {
  type CalDavIndex,
  FOREIGN,
  hrefFor,
  ownedValue,
  parseOwned,
  parseRefused,
} from '../../src/caldav/resource-index.ts';
import { type CalDavSyncOptions, type ListingState, syncCaldav } from '../../src/caldav/sync-caldav.ts';
import { silentLogger } from '../../src/logger.ts';
import { TargetRemovedError } from '../../src/push/errors.ts';
import { eventIdFor } from '../../src/push/event-id.ts';
import type { SyncCounts } from '../../src/store/push-target-record.ts';
import { MemoryCalDav, parseIcs } from './memory-caldav.ts';

const CAL = 'https://dav.test/alice/timetable/';
const SOURCE = 'group:4242';
const NOW = 1_760_000_000_000;
const DAY = 24 * 60 * 60_000;

/** An index in memory; `failSets` makes the next so many `set`/`remove` calls throw (a crash, nothing stored). */
class MemoryIndex implements CalDavIndex {
  map = new Map<string, string>();
  failWrites = 0;
  /** Once true, every write answers false, as the Redis index does once its target is removed. */
  targetRemoved = false;

  async read(): Promise<Map<string, string>> {
    return new Map(this.map);
  }
  async set(id: string, value: string): Promise<boolean> {
    this.fail();
    if (this.targetRemoved) return false;
    this.map.set(id, value);
    return true;
  }
  async remove(id: string): Promise<boolean> {
    this.fail();
    if (this.targetRemoved) return false;
    this.map.delete(id);
    return true;
  }
  async replace(entries: Map<string, string>): Promise<boolean> {
    if (this.targetRemoved) return false;
    this.map = new Map(entries);
    return true;
  }
  private fail(): void {
    if (this.failWrites <= 0) return;
    this.failWrites -= 1;
    throw new Error('Redis connection lost');
  }
}

interface Version {
  summary?: string;
  room?: string;
  time?: string;
  source?: string;
}

/** A resource as the adapter renders it (enough of it: one VEVENT with our marker and digest). */
function resource(n: number, version: Version = {}): DesiredResource {
  const uid = `${n}-uid@timetable`;
  const { summary = `Class ${n}`, room = 'Room 1', time = '0900', source = SOURCE } = version;
  const day = String((n % 28) + 1).padStart(2, '0');
  const hash = createHash('sha256')
    .update(JSON.stringify([summary, room, time, day]))
    .digest('base64url')
    .slice(0, 22);
  const ics = [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//timetable-sync//test//EN',
    'BEGIN:VEVENT',
    `UID:${uid}`,
    'DTSTAMP:20251001T000000Z',
    'SEQUENCE:0',
    `DTSTART;TZID=Europe/Moscow:202510${day}T${time}00`,
    `DTEND;TZID=Europe/Moscow:202510${day}T${time === '0900' ? '1030' : '2359'}00`,
    `SUMMARY:${summary}`,
    `LOCATION:${room}`,
    `${MARKER_PROPERTY}:${source}`,
    `${HASH_PROPERTY}:${hash}`,
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n');
  return { id: `tts-${eventIdFor(uid)}`, uid, ics, hash };
}

const range = (count: number, version: Version = {}) => Array.from({ length: count }, (_, n) => resource(n, version));

/** A calendar event of the person's own, in the same collection. */
const personal = (uid: string, extra: string[] = []) =>
  [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'BEGIN:VEVENT',
    `UID:${uid}`,
    'DTSTART:20251001T090000Z',
    'SUMMARY:Dentist',
    ...extra,
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n');

const ALARM = ['BEGIN:VALARM', 'ACTION:DISPLAY', 'DESCRIPTION:Пара', 'TRIGGER:-PT15M', 'END:VALARM'];
/** A person adds an alarm and a colour to an event, as a calendar app does. */
const addAlarm = (ics: string) => ics.replace('END:VEVENT', [...ALARM, 'COLOR:tomato', 'END:VEVENT'].join('\r\n'));

const zero: SyncCounts = {
  desired: 0,
  inserted: 0,
  patched: 0,
  revived: 0,
  deleted: 0,
  unchanged: 0,
  conflicts: 0,
  refused: 0,
  writes: 0,
  reads: 0,
};

let server: MemoryCalDav;
let index: MemoryIndex;
let listing: ListingState;
let clock: number;

function sync(desired: DesiredResource[], options: Partial<CalDavSyncOptions> = {}): Promise<SyncCounts> {
  return syncCaldav({
    client: server,
    calendarUrl: CAL,
    source: SOURCE,
    desired,
    index,
    reconcile: false,
    syncToken: listing.syncToken,
    onListing: async (state) => {
      listing = state;
    },
    log: silentLogger(),
    now: () => clock,
    ...options,
  });
}

/** Our resources on the server: id → digest; and asserts that no UID is held twice and the index agrees. */
function ours(): Map<string, string> {
  const found = new Map<string, string>();
  const uids = new Set<string>();
  for (const stored of server.resources(CAL)) {
    if (stored.uid !== undefined) {
      expect(uids.has(stored.uid), `UID ${stored.uid} held twice`).toBe(false);
      uids.add(stored.uid);
    }
    if (stored.markerValue !== SOURCE) continue;
    const id = stored.href.slice(CAL.length, -'.ics'.length);
    found.set(id, stored.hash ?? '');
  }
  return found;
}

/** The server holds exactly the desired resources of ours, and the index knows each with its current ETag. */
function expectExact(desired: DesiredResource[]): void {
  expect([...ours()].sort()).toEqual(desired.map((each) => [each.id, each.hash]).sort());
  for (const each of desired) {
    const stored = server.stored(hrefFor(CAL, each.id));
    expect(index.map.get(each.id)).toBe(ownedValue(each.hash, stored?.etag ?? '?'));
  }
}

beforeEach(() => {
  server = new MemoryCalDav([CAL]);
  index = new MemoryIndex();
  listing = {};
  clock = NOW;
});

describe('syncCaldav', () => {
  it('first sync: lists once in full, creates every desired resource, indexes hash and ETag', async () => {
    const desired = range(10);
    expect(await sync(desired)).toEqual({ ...zero, desired: 10, inserted: 10, writes: 10, reads: 1 });
    expectExact(desired);
    expect(server.calls.get('list')).toBe(1);
    expect(server.writes('create')).toBe(10);
    expect(listing.syncToken).toMatch(/^http:\/\/radicale\.org\/ns\/sync\//);
    expect(listing.ctag).toBeDefined();
    for (const stored of server.resources(CAL)) expect(stored.ics).toBe(desired.find((d) => d.uid === stored.uid)?.ics);
  });

  it('a run with nothing changed writes nothing, with or without a reconcile', async () => {
    const desired = range(10);
    await sync(desired);
    server.resetCounts();
    expect(await sync(desired)).toEqual({ ...zero, desired: 10, unchanged: 10 });
    expect(await sync(desired, { reconcile: true })).toEqual({ ...zero, desired: 10, unchanged: 10, reads: 1 });
    expect(server.writes()).toBe(0);
    expect(server.sent.map((request) => request.method)).toEqual(['list']);
  });

  it('a room change writes once per changed occurrence and nothing else', async () => {
    const desired = range(10);
    await sync(desired);
    server.resetCounts();
    const moved = desired.map((each, n) => (n % 3 === 0 ? resource(n, { room: 'Room 42' }) : each));
    expect(await sync(moved)).toEqual({ ...zero, desired: 10, patched: 4, unchanged: 6, writes: 4 });
    expect(server.writes()).toBe(4);
    expect(server.writes('update')).toBe(4);
    expectExact(moved);
    await expect(server.get(hrefFor(CAL, moved[3]?.id ?? '')).then((got) => got?.ics)).resolves.toContain('Room 42');
  });

  it("keeps a person's alarm and colour through a change: 412, read back, merged, written with the new ETag", async () => {
    const desired = range(3);
    await sync(desired);
    const href = hrefFor(CAL, desired[1]?.id ?? '');
    server.edit(href, addAlarm);
    server.resetCounts();
    const moved = [desired[0], resource(1, { room: 'Room 42', time: '1100' }), desired[2]] as DesiredResource[];
    expect(await sync(moved)).toEqual({ ...zero, desired: 3, patched: 1, unchanged: 2, writes: 2, reads: 1 });
    expect(server.writes()).toBe(1);
    const got = await server.get(href);
    expect(got?.ics).toContain('BEGIN:VALARM');
    expect(got?.ics).toContain('TRIGGER:-PT15M');
    expect(got?.ics).toContain('COLOR:tomato');
    expect(got?.ics).toContain('LOCATION:Room 42');
    expect(got?.ics).toContain('T110000');
    expect(got?.ics).not.toContain('T090000');
    expect(got?.ics).toMatch(/SEQUENCE:1\r\n/);
    expect(got?.ics?.match(/BEGIN:VEVENT/g)).toHaveLength(1);
    expectExact(moved);
  });

  it('a person edit of their own fields only is recorded, not written over, when our version did not change', async () => {
    const desired = range(2);
    await sync(desired);
    const href = hrefFor(CAL, desired[0]?.id ?? '');
    server.edit(href, addAlarm);
    server.resetCounts();
    expect(await sync(desired, { reconcile: true })).toEqual({ ...zero, desired: 2, unchanged: 2, reads: 1 });
    expect(server.writes()).toBe(0);
    expect(index.map.get(desired[0]?.id ?? '')).toBe(
      ownedValue(desired[0]?.hash ?? '', server.stored(href)?.etag ?? ''),
    );
  });

  it('deletes what is no longer desired with If-Match; an edited one is read back and deleted with its new ETag', async () => {
    const desired = range(4);
    await sync(desired);
    server.edit(hrefFor(CAL, desired[3]?.id ?? ''), addAlarm);
    server.resetCounts();
    expect(await sync(desired.slice(0, 2))).toEqual({
      ...zero,
      desired: 2,
      unchanged: 2,
      deleted: 2,
      writes: 3,
      reads: 1,
    });
    expect(server.writes('remove')).toBe(2);
    expectExact(desired.slice(0, 2));
    expect(index.map.size).toBe(2);
  });

  it('a resource deleted by hand is created again by the reconcile only while still desired', async () => {
    const desired = range(4);
    await sync(desired);
    server.deleteByHand(hrefFor(CAL, desired[0]?.id ?? ''));
    server.deleteByHand(hrefFor(CAL, desired[1]?.id ?? ''));
    server.resetCounts();
    // Class 1 left the timetable meanwhile: it stays deleted; class 0 comes back. The token lists the removals.
    const still = [desired[0], desired[2], desired[3]] as DesiredResource[];
    expect(await sync(still, { reconcile: true })).toEqual({
      ...zero,
      desired: 3,
      inserted: 1,
      unchanged: 2,
      writes: 1,
      reads: 1,
    });
    expect(server.writes()).toBe(1);
    expectExact(still);
  });

  it('a resource deleted by hand and changed before a reconcile is created again (update 412, nothing there)', async () => {
    const desired = range(2);
    await sync(desired);
    server.deleteByHand(hrefFor(CAL, desired[0]?.id ?? ''));
    const moved = [resource(0, { room: 'Room 7' }), desired[1]] as DesiredResource[];
    expect(await sync(moved)).toMatchObject({ inserted: 1, patched: 0, unchanged: 1, writes: 2, reads: 1 });
    expectExact(moved);
  });

  it('removes a planted duplicate of ours (same UID under another name) and keeps the rightful one', async () => {
    const desired = range(3);
    await sync(desired);
    const original = server.stored(hrefFor(CAL, desired[1]?.id ?? ''));
    const copy = hrefFor(CAL, 'tts-0123456789abcdefghijklmnopqrstuv0123456789abcdefgh');
    server.plant(copy, original?.ics ?? '');
    server.resetCounts();
    expect(await sync(desired, { reconcile: true })).toEqual({
      ...zero,
      desired: 3,
      unchanged: 3,
      deleted: 1,
      writes: 1,
      reads: 1,
    });
    expect(server.stored(copy)).toBeUndefined();
    expect(server.stored(hrefFor(CAL, desired[1]?.id ?? ''))).toBeDefined();
    expectExact(desired);
  });

  it('an update answering 409 (a duplicate not yet known holds the UID) keeps the name ours until the reconcile', async () => {
    const desired = range(2);
    await sync(desired, { reconcile: true });
    const rightful = hrefFor(CAL, desired[0]?.id ?? '');
    server.plant(hrefFor(CAL, 'tts-0dup'), server.stored(rightful)?.ics ?? '');
    const moved = [resource(0, { room: 'Room 3' }), desired[1]] as DesiredResource[];
    expect(await sync(moved)).toMatchObject({ conflicts: 1, patched: 0 });
    // Still ours in the index (not foreign): were it forgotten, nothing would ever delete it.
    expect(parseOwned(index.map.get(desired[0]?.id ?? '') ?? '')?.hash).toBe(desired[0]?.hash);
    expect(await sync(moved, { reconcile: true })).toMatchObject({ deleted: 1, patched: 1, conflicts: 0 });
    expectExact(moved);
    expect(await sync([], { reconcile: true })).toMatchObject({ deleted: 2 });
    expect([...ours()]).toEqual([]);
  });

  it('a planted duplicate found in a full listing (no sync token) is removed too', async () => {
    const desired = range(2);
    await sync(desired);
    server.plant(hrefFor(CAL, 'tts-00000000'), server.stored(hrefFor(CAL, desired[0]?.id ?? ''))?.ics ?? '');
    listing = {};
    await sync(desired, { reconcile: true });
    expect(server.stored(hrefFor(CAL, 'tts-00000000'))).toBeUndefined();
    expectExact(desired);
  });

  it("never touches resources that are not ours: the person's own, another source's, a foreign one at our name", async () => {
    const desired = range(4);
    const own = `${CAL}dentist.ics`;
    server.plant(own, personal('dentist-1'));
    // Not ours although named as ours: no marker.
    server.plant(hrefFor(CAL, desired[0]?.id ?? ''), personal('someone-else'));
    // Ours in name and form, but another source's (another target in the same calendar).
    const other = resource(99, { source: 'teacher:7' });
    server.plant(hrefFor(CAL, other.id), other.ics);
    // The UID of class 1 held by a resource of someone else under another name.
    server.plant(`${CAL}imported.ics`, personal(desired[1]?.uid ?? ''));
    const before = server.resources(CAL).map(({ href, etag }) => [href, etag]);
    expect(await sync(desired)).toEqual({ ...zero, desired: 4, inserted: 2, conflicts: 2, writes: 4, reads: 2 });
    const after = new Map(server.resources(CAL).map(({ href, etag }) => [href, etag]));
    for (const [href, etag] of before) expect(after.get(href ?? '')).toBe(etag);
    expect(index.map.get(desired[0]?.id ?? '')).toBe(FOREIGN);
    expect(index.map.get(desired[1]?.id ?? '')).toBe(FOREIGN);
    server.resetCounts();
    // Remembered: a refresh does not ask again; a later reconcile forgets and tries once more.
    expect(await sync(desired)).toEqual({ ...zero, desired: 4, unchanged: 2, conflicts: 2 });
    expect(server.sent).toEqual([]);
    // Nor does a reconcile delete anything of theirs, or remove another source's resource.
    await sync([], { reconcile: true });
    expect(server.stored(own)).toBeDefined();
    expect(server.stored(hrefFor(CAL, other.id))).toBeDefined();
    expect(server.stored(hrefFor(CAL, desired[0]?.id ?? ''))).toBeDefined();
    expect(server.stored(`${CAL}imported.ics`)).toBeDefined();
    expect([...ours()]).toEqual([]);
  });

  it('a write that reached the server although the client heard an error is not duplicated by the rerun', async () => {
    const desired = range(6);
    server.faults = [{ method: 'create', at: 3, when: 'after', error: new CalDavTransientError('socket hang up') }];
    await expect(sync(desired, { concurrency: 1 })).rejects.toBeInstanceOf(CalDavTransientError);
    expect(server.writes('create')).toBe(3);
    const rerun = await sync(desired, { concurrency: 1 });
    // The lost one: create 412 → GET → ours, same digest → recorded; the others created.
    expect(rerun).toEqual({ ...zero, desired: 6, inserted: 3, unchanged: 3, writes: 4, reads: 1 });
    expect(server.writes('create')).toBe(6);
    expectExact(desired);
  });

  it('lost index writes after updates and deletes: the rerun ends exact without writing twice', async () => {
    const desired = range(6);
    await sync(desired);
    const moved = range(4, { room: 'Room 9' });
    index.failWrites = 6;
    server.resetCounts();
    await expect(sync(moved, { concurrency: 1 })).rejects.toThrow('Redis connection lost');
    expect(server.writes()).toBe(1);
    await expect(sync(moved, { concurrency: 1 })).rejects.toThrow('Redis connection lost');
    await expect(sync(moved, { concurrency: 1 })).rejects.toThrow('Redis connection lost');
    await expect(sync(moved, { concurrency: 1 })).rejects.toThrow('Redis connection lost');
    await expect(sync(moved, { concurrency: 1 })).rejects.toThrow('Redis connection lost');
    await expect(sync(moved, { concurrency: 1 })).rejects.toThrow('Redis connection lost');
    await sync(moved, { concurrency: 1 });
    expectExact(moved);
    // Four updates and two deletes, each applied exactly once.
    expect(server.writes('update')).toBe(4);
    expect(server.writes('remove')).toBe(2);
    expect(server.writes('create')).toBe(0);
  });

  it('a 409 on create (the UID held elsewhere) is left alone as foreign, as the server says', async () => {
    const desired = range(2);
    server.faults = [{ method: 'create', at: 1, when: 'before', error: new UidConflictError('409 no-uid-conflict') }];
    expect(await sync(desired, { concurrency: 1 })).toMatchObject({ inserted: 1, conflicts: 1 });
    expect(index.map.get(desired[0]?.id ?? '')).toBe(FOREIGN);
    await sync(desired, { reconcile: true });
    expectExact(desired);
  });

  it('a 412 although the ETag matched is a refusal of the data: indexed, retried when changed or a day later', async () => {
    const desired = range(2);
    await sync(desired);
    const moved = [resource(0, { room: 'Room 5' }), desired[1]] as DesiredResource[];
    const { EtagMismatchError } = await import('../../src/caldav/errors.ts');
    server.faults = [
      { method: 'update', when: 'before', error: new EtagMismatchError('412 Not a valid calendar file') },
    ];
    expect(await sync(moved)).toMatchObject({ refused: 1, patched: 0, unchanged: 1 });
    const refusal = parseRefused(index.map.get(moved[0]?.id ?? '') ?? '');
    expect(refusal).toEqual({ hash: moved[0]?.hash, retryAt: NOW + DAY });
    server.resetCounts();
    expect(await sync(moved)).toMatchObject({ refused: 1, writes: 0 });
    // A reconcile keeps the refusal (the server still holds the old version).
    expect(await sync(moved, { reconcile: true })).toMatchObject({ refused: 1, writes: 0 });
    clock = NOW + DAY + 1;
    expect(await sync(moved)).toMatchObject({ patched: 1, refused: 0 });
    expectExact(moved);
  });

  it('a person editing the same event during every merge: the others are written, the push fails as transient', async () => {
    const desired = range(3);
    await sync(desired);
    const href = hrefFor(CAL, desired[0]?.id ?? '');
    server.chaos = (method, target) => {
      if (method === 'update' && target === href) server.edit(href, addAlarm);
      return undefined;
    };
    const moved = range(3, { room: 'Room 8' });
    await expect(sync(moved)).rejects.toBeInstanceOf(CalDavTransientError);
    // The two others written; the edited one tried once and merged twice (MAX_RESOLVES), each a 412.
    expect(server.writes('update')).toBe(2);
    expect(server.sent.filter((request) => request.method === 'update' && request.href === href)).toHaveLength(3);
    server.chaos = undefined;
    expect(await sync(moved)).toMatchObject({ patched: 1, unchanged: 2, refused: 0 });
    expectExact(moved);
    expect(server.stored(href)?.ics).toContain('BEGIN:VALARM');
  });

  it('a refusal of one resource does not stop the others', async () => {
    const desired = range(5);
    server.faults = [{ method: 'create', at: 2, when: 'before', error: new ResourceRefusedError('415') }];
    expect(await sync(desired, { concurrency: 1 })).toMatchObject({ inserted: 4, refused: 1 });
  });

  it('five refusals before any success stop the push (the calendar refuses us)', async () => {
    server.chaos = (method) =>
      method === 'create' ? { when: 'before', error: new ResourceRefusedError('403 on PUT') } : undefined;
    await expect(sync(range(20))).rejects.toBeInstanceOf(ResourceRefusedError);
    expect(server.calls.get('create')).toBeLessThan(10);
  });

  it('a rate limit or an auth error stops the push; what was written is indexed', async () => {
    const desired = range(10);
    server.faults = [{ method: 'create', at: 4, when: 'before', error: new CalDavRateLimitError('503') }];
    await expect(sync(desired, { concurrency: 1 })).rejects.toBeInstanceOf(CalDavRateLimitError);
    expect(server.calls.get('create')).toBe(4);
    expect(index.map.size).toBe(3);
    server.faults = [{ method: 'update', when: 'before', error: new CalDavAuthError('401') }];
    const moved = range(10, { room: 'B' });
    await expect(sync(moved)).rejects.toBeInstanceOf(CalDavAuthError);
    await sync(moved);
    expectExact(moved);
  });

  it('stops with TargetRemovedError when the index refuses writes (the target was removed meanwhile)', async () => {
    await sync(range(2));
    index.targetRemoved = true;
    await expect(sync(range(3), { targetId: 't1' })).rejects.toBeInstanceOf(TargetRemovedError);
    await expect(sync(range(3), { reconcile: true })).rejects.toBeInstanceOf(TargetRemovedError);
  });

  it('an unknown sync token gives a full listing; without sync-collection every reconcile lists in full', async () => {
    const desired = range(3);
    await sync(desired);
    listing = { syncToken: 'http://radicale.org/ns/sync/bogus-1' };
    server.deleteByHand(hrefFor(CAL, desired[2]?.id ?? ''));
    await sync(desired.slice(0, 2), { reconcile: true });
    expectExact(desired.slice(0, 2));
    server.supportsSync = false;
    server.deleteByHand(hrefFor(CAL, desired[1]?.id ?? ''));
    expect(await sync(desired.slice(0, 2), { reconcile: true })).toMatchObject({ inserted: 1, unchanged: 1 });
    expect(listing.syncToken).toBeUndefined();
    expectExact(desired.slice(0, 2));
  });

  it('an aborted push stops starting writes and throws', async () => {
    const controller = new AbortController();
    server.latencyMs = 5;
    let writes = 0;
    const run = sync(range(40), {
      signal: controller.signal,
      onWrite: () => {
        writes += 1;
        if (writes === 3) controller.abort(new Error('shutdown'));
      },
    });
    await expect(run).rejects.toThrow('shutdown');
    expect(server.calls.get('create')).toBeLessThanOrEqual(6);
  });

  it('the index values split at the first space: hash, then an ETag that may hold spaces', () => {
    expect(parseOwned(ownedValue('abc', '"a b"'))).toEqual({ hash: 'abc', etag: '"a b"' });
    expect(parseOwned(ownedValue('abc', ''))).toEqual({ hash: 'abc', etag: '' });
    expect(parseOwned(FOREIGN)).toBeUndefined();
  });

  it('the memory server parses what the adapter would', () => {
    const one = resource(1);
    expect(parseIcs(one.ics)).toEqual({ uid: one.uid, markerValue: SOURCE, hash: one.hash });
  });

  it('property: any edits, people and faults (412 races, 409, 503 before and after, lost index writes) end exact', async () => {
    const UIDS = 8;
    const version = fc.record({
      present: fc.boolean(),
      room: fc.constantFrom('A', 'B', 'C'),
      summary: fc.constantFrom('Lecture', 'Lab'),
    });
    const step = fc.record({
      timetable: fc.array(version, { minLength: UIDS, maxLength: UIDS }),
      reconcile: fc.boolean(),
      faultRate: fc.constantFrom(0, 0.1, 0.3),
      lostIndexWrites: fc.integer({ min: 0, max: 2 }),
      personEdits: fc.array(fc.nat(UIDS - 1), { maxLength: 2 }),
      handDeletes: fc.array(fc.nat(UIDS - 1), { maxLength: 1 }),
      duplicate: fc.option(fc.nat(UIDS - 1), { nil: undefined }),
      seed: fc.integer(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (steps) => {
        server = new MemoryCalDav([CAL]);
        index = new MemoryIndex();
        listing = {};
        clock = NOW;
        server.plant(`${CAL}own.ics`, personal('own-1'));
        let desired: DesiredResource[] = [];
        for (const [n, each] of steps.entries()) {
          desired = each.timetable.flatMap((v, uid) =>
            v.present ? [resource(uid, { room: v.room, summary: v.summary })] : [],
          );
          // People act between pushes.
          for (const uid of each.personEdits) {
            const href = hrefFor(CAL, resource(uid).id);
            if (server.stored(href)) server.edit(href, addAlarm);
          }
          for (const uid of each.handDeletes) {
            const href = hrefFor(CAL, resource(uid).id);
            if (server.stored(href)) server.deleteByHand(href);
          }
          if (each.duplicate !== undefined) {
            const stored = server.stored(hrefFor(CAL, resource(each.duplicate).id));
            if (stored) server.plant(hrefFor(CAL, `tts-dup${n}`), stored.ics);
          }
          let random = each.seed;
          const next = () => {
            random = (Math.imul(random, 1103515245) + 12345) | 0;
            return ((random >>> 8) & 0xffff) / 0x10000;
          };
          server.chaos = (method, href) => {
            if (next() >= each.faultRate) return undefined;
            const roll = next();
            // A person edits the very resource while we update it: a real 412 for us.
            if (method === 'update' && roll < 0.25 && server.stored(href)) {
              server.edit(href, addAlarm);
              return undefined;
            }
            if (method === 'create' && roll < 0.35) return { when: 'before', error: new UidConflictError('409') };
            return { when: roll < 0.7 ? 'before' : 'after', error: new CalDavRateLimitError('503') };
          };
          index.failWrites = each.lostIndexWrites;
          await sync(desired, { reconcile: each.reconcile }).catch(() => undefined);
        }
        // Faults stop; the next reconcile (the periodic one, or the retry's) ends it exact.
        server.chaos = undefined;
        index.failWrites = 0;
        await sync(desired, { reconcile: true });
        expectExact(desired);
        expect(server.stored(`${CAL}own.ics`)).toBeDefined();
        // And it is stable: nothing left to write.
        server.resetCounts();
        expect(await sync(desired)).toMatchObject({ writes: 0 });
        expect(server.writes()).toBe(0);
      }),
      { numRuns: 200 },
    );
  }, 30_000);
});
