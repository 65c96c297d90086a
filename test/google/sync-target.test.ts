import { beforeEach, describe, expect, it } from 'vitest';
import {
  CalendarGoneError,
  EventMissingError,
  EventRefusedError,
  GooglePermanentError,
  GoogleQuotaError,
  GoogleRateLimitError,
} from '../../src/google/errors.ts';
import { markerFor } from '../../src/google/event-marker.ts';
import { type GoogleSyncIndex, type GoogleSyncOptions, syncGoogleTarget } from '../../src/google/sync-target.ts';
import { silentLogger } from '../../src/logger.ts';
import { type DesiredEvent, fieldsHash, type OwnedEventFields } from '../../src/push/desired-events.ts';
import { eventIdFor } from '../../src/push/event-id.ts';
import { CANCELLED, DELETE_REFUSED, FOREIGN, parseRefused, refusedMarker } from '../../src/push/push-diff.ts';
import type { RefusalExample, SyncCounts } from '../../src/store/push-target-record.ts';
import { MemoryCalendar } from './memory-calendar.ts';

const CAL = 'c1@group.calendar.google.com';
const TARGET = 'target-0000000000000001';
const marker = markerFor('group:4242');

/**
 * The index of target {@link TARGET} in memory (kept by target id, as in Redis); `failSets` makes the next so
 * many `set` calls throw after nothing was stored (a crash).
 */
class MemoryIndex implements GoogleSyncIndex {
  readonly maps = new Map<string, Map<string, string>>();
  failSets = 0;

  async read(): Promise<Map<string, string>> {
    return new Map(this.maps.get(TARGET));
  }
  async set(eventId: string, hash: string): Promise<void> {
    if (this.failSets > 0) {
      this.failSets -= 1;
      throw new Error('Redis connection lost');
    }
    this.map(TARGET).set(eventId, hash);
  }
  async replace(index: Map<string, string>): Promise<void> {
    this.maps.set(TARGET, new Map(index));
  }
  map(id: string): Map<string, string> {
    const found = this.maps.get(id) ?? new Map<string, string>();
    this.maps.set(id, found);
    return found;
  }
}

function event(n: number, summary = `Class ${n}`, time = '09:00'): DesiredEvent {
  const fields: OwnedEventFields = {
    summary,
    location: 'Room 1',
    description: '',
    start: { dateTime: `2025-10-${String((n % 28) + 1).padStart(2, '0')}T${time}:00`, timeZone: 'Europe/Moscow' },
    end: { dateTime: `2025-10-${String((n % 28) + 1).padStart(2, '0')}T10:30:00`, timeZone: 'Europe/Moscow' },
  };
  return { id: eventIdFor(`${n}-uid`), fields, hash: fieldsHash(fields) };
}

const range = (count: number) => Array.from({ length: count }, (_, n) => event(n));
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
const NOW = 1_760_000_000_000;
/** How long a refused version waits (spelled out, so that the tests pin it). */
const DAY = 24 * 60 * 60_000;

let calendar: MemoryCalendar;
let index: MemoryIndex;
let clock: { now: number };
/** Every refusal the syncs of a test reported through `onRefusal`, in order. */
let refusals: RefusalExample[];

/** One sync; answers its counts. */
function sync(desired: DesiredEvent[], options: Partial<GoogleSyncOptions> = {}): Promise<SyncCounts> {
  const onRefusal = (example: RefusalExample) => void refusals.push(example);
  return syncGoogleTarget({
    calendar,
    calendarId: CAL,
    targetId: TARGET,
    marker,
    desired,
    index,
    reconcile: false,
    log: silentLogger(),
    now: () => clock.now,
    onRefusal,
    ...options,
  });
}

/** The calendar's live events as id → digest, which the index must equal after a complete sync. */
function live(): Map<string, string> {
  return new Map(calendar.events(CAL).map((stored) => [stored.id, stored.private.timetableSyncHash ?? '']));
}

const asMap = (desired: DesiredEvent[]) => new Map(desired.map((item) => [item.id, item.hash]));
const sorted = (map: Map<string, string>) => [...map].sort();

beforeEach(() => {
  calendar = new MemoryCalendar([CAL]);
  index = new MemoryIndex();
  clock = { now: NOW };
  refusals = [];
});

describe('syncGoogleTarget', () => {
  it('first sync: lists once, inserts every desired event with marker and digest, and indexes them', async () => {
    const desired = range(10);
    expect(await sync(desired, { reconcile: true })).toEqual({
      ...zero,
      desired: 10,
      inserted: 10,
      writes: 10,
      reads: 1,
    });
    expect(calendar.count('insertEvent')).toBe(10);
    expect(calendar.total()).toBe(11);
    expect(sorted(live())).toEqual(sorted(asMap(desired)));
    expect(sorted(index.map(TARGET))).toEqual(sorted(asMap(desired)));
    expect(calendar.event(CAL, desired[3]?.id ?? '')?.private).toEqual({
      timetableSync: 'group:4242',
      timetableSyncHash: desired[3]?.hash,
    });
  });

  it('an unchanged timetable costs no request at all', async () => {
    const desired = range(10);
    await sync(desired);
    const before = calendar.total();
    expect(await sync(desired)).toEqual({ ...zero, desired: 10, unchanged: 10 });
    expect(calendar.total()).toBe(before);
  });

  it('one moved class is exactly one patch, which keeps what the owner added', async () => {
    const desired = range(10);
    await sync(desired);
    const target = calendar.event(CAL, event(4).id);
    if (target) target.extra = { reminders: { useDefault: false, overrides: [{ method: 'popup', minutes: 15 }] } };
    const moved = desired.map((item, n) => (n === 4 ? event(4, 'Class 4', '11:00') : item));
    const before = calendar.total();
    expect(await sync(moved)).toEqual({ ...zero, desired: 10, patched: 1, unchanged: 9, writes: 1 });
    expect(calendar.total() - before).toBe(1);
    expect(calendar.count('patchEvent')).toBe(1);
    expect(calendar.event(CAL, event(4).id)?.fields.start.dateTime).toBe('2025-10-05T11:00:00');
    expect(calendar.event(CAL, event(4).id)?.extra).toEqual({
      reminders: { useDefault: false, overrides: [{ method: 'popup', minutes: 15 }] },
    });
    expect(sorted(index.map(TARGET))).toEqual(sorted(asMap(moved)));
  });

  it('a cancelled class is exactly one delete, and the index remembers it as deleted', async () => {
    const desired = range(10);
    await sync(desired);
    const before = calendar.total();
    expect(await sync(desired.filter((_, n) => n !== 2))).toEqual({
      ...zero,
      desired: 9,
      deleted: 1,
      unchanged: 9,
      writes: 1,
    });
    expect(calendar.total() - before).toBe(1);
    expect(calendar.event(CAL, event(2).id)?.status).toBe('cancelled');
    expect(index.map(TARGET).get(event(2).id)).toBe(CANCELLED);
  });

  it('a class that comes back after it was deleted is revived in one write (its id cannot be inserted again)', async () => {
    const desired = range(5);
    await sync(desired);
    await sync(desired.slice(1));
    calendar.calls.clear();
    expect(await sync(desired)).toEqual({ ...zero, desired: 5, revived: 1, unchanged: 4, writes: 1 });
    expect(calendar.count('insertEvent')).toBe(0);
    expect(calendar.event(CAL, event(0).id)?.status).toBe('confirmed');
    expect(sorted(live())).toEqual(sorted(asMap(desired)));
  });

  it('a 403 to a revive refuses that event only (as Google answers for an event its owner deleted): the other writes go on', async () => {
    const desired = range(5);
    await sync(desired);
    await sync(desired.slice(1));
    calendar.fail(
      'reviveEvent',
      new GooglePermanentError('events.update: HTTP 403 forbidden "Forbidden"', { status: 403, reason: 'forbidden' }),
    );
    const next = [...desired, ...range(8).slice(5)];
    expect(await sync(next, { concurrency: 1 })).toEqual({
      ...zero,
      desired: 8,
      inserted: 3,
      refused: 1,
      unchanged: 4,
      writes: 4,
    });
    expect(parseRefused(index.map(TARGET).get(event(0).id) ?? '')).toEqual({ hash: event(0).hash, retryAt: NOW + DAY });
  });

  it('a reconcile revives our cancelled events directly, deletes stale ones, and patches ours without a digest', async () => {
    const desired = range(6);
    await sync(desired);
    await calendar.deleteEvent(CAL, event(1).id);
    const stale = event(40);
    await calendar.insertEvent(CAL, stale, marker);
    const bare = calendar.event(CAL, event(2).id);
    if (bare) delete bare.private.timetableSyncHash;
    index.maps.set(TARGET, new Map([['bogus', 'x']]));
    calendar.calls.clear();
    expect(await sync(desired, { reconcile: true })).toEqual({
      ...zero,
      desired: 6,
      revived: 1,
      patched: 1,
      deleted: 1,
      unchanged: 4,
      writes: 3,
      reads: 1,
    });
    expect(calendar.count('insertEvent')).toBe(0);
    expect(calendar.count('getEvent')).toBe(0);
    expect(calendar.event(CAL, stale.id)?.status).toBe('cancelled');
    expect(sorted(live())).toEqual(sorted(asMap(desired)));
    expect(sorted(index.map(TARGET))).toEqual(sorted(new Map([...asMap(desired), [stale.id, CANCELLED]])));
  });

  it('a reconcile lists every page, and counts each as one read', async () => {
    calendar.pageSize = 3;
    const desired = range(10);
    await sync(desired);
    calendar.calls.clear();
    index.maps.clear();
    expect(await sync(desired, { reconcile: true })).toMatchObject({ unchanged: 10, writes: 0, reads: 4 });
    expect(calendar.count('listPage')).toBe(4);
    expect(sorted(index.map(TARGET))).toEqual(sorted(asMap(desired)));
  });
});

describe('a crash between a write and its index update', () => {
  it('duplicates nothing: the next push finds the written event by its id and only indexes it', async () => {
    const desired = range(8);
    index.failSets = 1;
    await expect(sync(desired, { concurrency: 1 })).rejects.toThrow('Redis connection lost');
    // The first insert landed, its index update was lost, and nothing else started.
    expect(calendar.count('insertEvent')).toBe(1);
    expect(index.map(TARGET).size).toBe(0);
    calendar.calls.clear();
    const mutations = calendar.mutations;
    expect(await sync(desired)).toEqual({ ...zero, desired: 8, inserted: 7, unchanged: 1, writes: 8, reads: 1 });
    expect(calendar.mutations - mutations).toBe(7);
    expect(calendar.events(CAL, true)).toHaveLength(8);
    expect(sorted(index.map(TARGET))).toEqual(sorted(asMap(desired)));
  });

  it('an index lost entirely costs no event write, with or without a reconcile', async () => {
    const desired = range(8);
    await sync(desired);
    index.maps.clear();
    const mutations = calendar.mutations;
    expect(await sync(desired)).toEqual({ ...zero, desired: 8, unchanged: 8, writes: 8, reads: 8 });
    index.maps.clear();
    expect(await sync(desired, { reconcile: true })).toEqual({ ...zero, desired: 8, unchanged: 8, reads: 1 });
    expect(calendar.mutations).toBe(mutations);
    expect(calendar.events(CAL, true)).toHaveLength(8);
  });

  it('a lost index update after a patch, a delete or a deletion by the owner costs only that patch, delete or revive', async () => {
    const desired = range(6);
    await sync(desired);
    const changed = desired.map((item, n) => (n === 1 ? event(1, 'Moved') : item));
    // The patch of event 1 lands, its index update does not.
    index.failSets = 1;
    await expect(sync(changed)).rejects.toThrow('Redis connection lost');
    const mutations = calendar.mutations;
    expect(await sync(changed)).toEqual({ ...zero, desired: 6, patched: 1, unchanged: 5, writes: 1 });
    expect(calendar.mutations - mutations).toBe(1);
    // The owner deletes event 3 and the index is lost: the insert meets the cancelled event and revives it.
    await calendar.deleteEvent(CAL, event(3).id);
    index.maps.get(TARGET)?.delete(event(3).id);
    expect(await sync(changed)).toEqual({ ...zero, desired: 6, revived: 1, unchanged: 5, writes: 2, reads: 1 });
    expect(calendar.event(CAL, event(3).id)?.status).toBe('confirmed');
    expect(calendar.events(CAL, true)).toHaveLength(6);
  });
});

describe('events that are not ours', () => {
  it("an id taken by the owner's own event or another source's is a conflict: untouched, remembered until a reconcile", async () => {
    const desired = range(4);
    calendar.ownerInsert(CAL, event(1).id);
    calendar.ownerInsert(CAL, event(2).id, { timetableSync: 'group:1', timetableSyncHash: event(2).hash });
    expect(await sync(desired)).toEqual({ ...zero, desired: 4, inserted: 2, conflicts: 2, writes: 4, reads: 2 });
    expect(calendar.event(CAL, event(1).id)?.fields.summary).toBe('Dentist');
    expect(calendar.event(CAL, event(1).id)?.private).toEqual({});
    expect(calendar.event(CAL, event(2).id)?.private.timetableSync).toBe('group:1');
    expect(index.map(TARGET).get(event(1).id)).toBe(FOREIGN);
    // The next push does not ask again (no write, no read); a reconcile forgets it and asks once more.
    expect(await sync(desired)).toEqual({ ...zero, desired: 4, unchanged: 2, conflicts: 2 });
    expect(await sync(desired, { reconcile: true })).toEqual({
      ...zero,
      desired: 4,
      unchanged: 2,
      conflicts: 2,
      writes: 2,
      reads: 3,
    });
    // Dropping the class later never deletes the foreign event.
    await sync([]);
    expect(calendar.event(CAL, event(1).id)?.status).toBe('confirmed');
    expect(calendar.event(CAL, event(2).id)?.status).toBe('confirmed');
  });
});

describe('failures', () => {
  it('a rate limit mid-run stops new requests, indexes what succeeded, and rethrows that error', async () => {
    calendar.latencyMs = 5;
    const limited = new GoogleRateLimitError('events.insert: Rate Limit Exceeded', { status: 429, retryAfterMs: 1000 });
    calendar.fail('insertEvent', limited, 6);
    const desired = range(30);
    await expect(sync(desired, { concurrency: 4 })).rejects.toBe(limited);
    // Requests already in flight settle; none start after the failure.
    expect(calendar.count('insertEvent')).toBeLessThanOrEqual(6 + 3);
    expect(calendar.count('insertEvent')).toBeGreaterThanOrEqual(6);
    expect(sorted(index.map(TARGET))).toEqual(sorted(live()));
    expect(index.map(TARGET).size).toBe(calendar.count('insertEvent') - 1);
    // The next push does the rest.
    const done = index.map(TARGET).size;
    expect(await sync(desired)).toMatchObject({ inserted: 30 - done, unchanged: done });
    expect(sorted(live())).toEqual(sorted(asMap(desired)));
  });

  it('a quota error stops as well', async () => {
    const quota = new GoogleQuotaError('Calendar usage limits exceeded.', { status: 403, reason: 'quotaExceeded' });
    calendar.fail('deleteEvent', quota);
    await sync(range(5));
    await expect(sync([], { concurrency: 1 })).rejects.toBe(quota);
    expect(calendar.count('deleteEvent')).toBe(1);
    expect(index.map(TARGET).size).toBe(5);
  });

  it('one event Google refuses does not stop the others, nor fail the push: it is recorded as refused', async () => {
    const refused = new EventRefusedError('events.insert: Bad Request', { status: 400, reason: 'invalid' });
    calendar.fail('insertEvent', refused, 2);
    expect(await sync(range(6), { concurrency: 1 })).toEqual({
      ...zero,
      desired: 6,
      inserted: 5,
      refused: 1,
      writes: 6,
    });
    expect(refusals).toEqual([{ eventId: event(1).id, message: refused.message }]);
    expect(index.map(TARGET).get(event(1).id)).toBe(refusedMarker(event(1).hash, NOW + DAY));
  });

  it('a calendar that refuses every event stops after a few refusals; the next push tries others', async () => {
    const desired = range(20);
    for (const item of desired)
      calendar.refusing.set(
        item.id,
        new EventRefusedError('events.insert: HTTP 400 invalid: Invalid value', { status: 400, reason: 'invalid' }),
      );
    const first = sync(desired, { concurrency: 1 });
    await expect(first).rejects.toBeInstanceOf(GooglePermanentError);
    await expect(first).rejects.toThrow('events.insert: HTTP 400 invalid: Invalid value');
    expect(calendar.count('insertEvent')).toBe(5);
    const refusedFirst = refusedIds();
    expect(refusedFirst).toHaveLength(5);
    // Reported as they happened, although the push failed.
    expect(refusals.map((example) => example.eventId).sort()).toEqual(refusedFirst);
    // Recorded: the push the job retries (a reconcile, 15 min later) asks about five other events.
    await expect(sync(desired, { concurrency: 1, reconcile: true })).rejects.toBeInstanceOf(GooglePermanentError);
    expect(calendar.count('insertEvent')).toBe(10);
    const refusedNow = refusedIds();
    expect(refusedNow).toHaveLength(10);
    expect(refusedNow).toEqual(expect.arrayContaining(refusedFirst));
  });

  it('a permanent error that is not about one event (our OAuth client refused, say) stops the push and marks nothing refused', async () => {
    const misconfigured = new GooglePermanentError('events.insert: token endpoint answered HTTP 401 invalid_client', {
      status: 401,
      reason: 'invalid_client',
    });
    calendar.fail('insertEvent', misconfigured, 2);
    await expect(sync(range(6), { concurrency: 1 })).rejects.toBe(misconfigured);
    expect(calendar.count('insertEvent')).toBe(2);
    expect(refusedIds()).toEqual([]);
  });

  it('once one write succeeded, refusals never stop the push', async () => {
    const desired = range(20);
    for (const item of desired.slice(1))
      calendar.refusing.set(
        item.id,
        new EventRefusedError('events.insert: HTTP 400 invalid: Invalid value', { status: 400, reason: 'invalid' }),
      );
    expect(await sync(desired, { concurrency: 1 })).toEqual({
      ...zero,
      desired: 20,
      inserted: 1,
      refused: 19,
      writes: 20,
    });
    expect(refusedIds()).toHaveLength(19);
  });

  it('refusals that overtake a write in flight only hold the push: once that write succeeded, it goes on', async () => {
    // Four at once: the first insert is slow, the next six are refused at once, before it has succeeded.
    const desired = range(27);
    const refusedEvents = desired.slice(1, 7);
    calendar.latencyMs = 5;
    calendar.eventLatencyMs.set(event(0).id, 50);
    for (const item of refusedEvents) {
      calendar.refusing.set(
        item.id,
        new EventRefusedError('events.insert: HTTP 400 invalid: Invalid value', { status: 400, reason: 'invalid' }),
      );
      calendar.eventLatencyMs.set(item.id, 0);
    }
    expect(await sync(desired, { concurrency: 4 })).toEqual({
      ...zero,
      desired: 27,
      inserted: 21,
      refused: 6,
      writes: 27,
    });
    expect(refusedIds()).toEqual(refusedEvents.map((item) => item.id).sort());
    expect(sorted(live())).toEqual(sorted(asMap(desired.filter((item) => !refusedEvents.includes(item)))));
  });

  it('refusals of every write at concurrency 4 stop the push once the writes in flight settled, starting none after the fifth', async () => {
    const desired = range(20);
    const invalid = new EventRefusedError('events.insert: HTTP 400 invalid: Invalid value', {
      status: 400,
      reason: 'invalid',
    });
    for (const item of desired) calendar.refusing.set(item.id, invalid);
    calendar.latencyMs = 2;
    await expect(sync(desired, { concurrency: 4 })).rejects.toBe(invalid);
    // The fifth refusal came with at most three others in flight.
    expect(calendar.count('insertEvent')).toBeGreaterThanOrEqual(5);
    expect(calendar.count('insertEvent')).toBeLessThanOrEqual(5 + 3);
    expect(refusedIds()).toHaveLength(calendar.count('insertEvent'));
    expect(refusals).toHaveLength(calendar.count('insertEvent'));
  });

  it('a patch of an event that is gone for good inserts it again', async () => {
    const desired = range(3);
    await sync(desired);
    calendar.calendars.get(CAL)?.events.delete(event(0).id);
    expect(await sync([event(0, 'Renamed'), ...desired.slice(1)])).toEqual({
      ...zero,
      desired: 3,
      inserted: 1,
      unchanged: 2,
      writes: 2,
    });
    expect(calendar.event(CAL, event(0).id)?.fields.summary).toBe('Renamed');
  });

  it('an aborted push starts nothing more and rejects', async () => {
    const controller = new AbortController();
    calendar.latencyMs = 2;
    const running = sync(range(20), { concurrency: 2, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('worker closing')), 5);
    await expect(running).rejects.toThrow('worker closing');
    expect(calendar.count('insertEvent')).toBeLessThan(20);
    expect(sorted(index.map(TARGET))).toEqual(sorted(live()));
  });
});

/** The ids the index holds as refused. */
function refusedIds(): string[] {
  return [...index.map(TARGET)]
    .filter(([, value]) => parseRefused(value) !== undefined)
    .map(([id]) => id)
    .sort();
}

describe('events Google refuses for good', () => {
  const refusal = (id: string) =>
    new EventRefusedError(`events.insert: HTTP 400 invalid: Invalid value for event ${id}`, {
      status: 400,
      reason: 'invalid',
    });

  it('never hold up the others: refused once, then not asked about again until they change or a day has passed', async () => {
    const desired = range(35);
    const refusedEvents = desired.filter((_, n) => n % 7 === 3);
    for (const item of refusedEvents) calendar.refusing.set(item.id, refusal(item.id));
    expect(await sync(desired)).toEqual({ ...zero, desired: 35, inserted: 30, refused: 5, writes: 35 });
    // Every refusal is reported, as it happens.
    expect(refusals.map((example) => example.eventId).sort()).toEqual(refusedEvents.map((item) => item.id).sort());
    expect(sorted(live())).toEqual(sorted(asMap(desired.filter((item) => !refusedEvents.includes(item)))));
    const markers = new Map(refusedEvents.map((item) => [item.id, refusedMarker(item.hash, NOW + DAY)]));
    expect(sorted(index.map(TARGET))).toEqual(sorted(new Map([...live(), ...markers])));
    // The next push and a reconcile ask Google nothing about them.
    let before = calendar.total();
    expect(await sync(desired)).toEqual({ ...zero, desired: 35, unchanged: 30, refused: 5 });
    expect(await sync(desired, { reconcile: true })).toEqual({
      ...zero,
      desired: 35,
      unchanged: 30,
      refused: 5,
      reads: 1,
    });
    expect(calendar.total() - before).toBe(1);
    expect(refusedIds()).toEqual([...markers.keys()].sort());
    // A class that changes is tried at once; Google takes the new version.
    const changed = desired.map((item) => (item === refusedEvents[0] ? event(3, 'Renamed') : item));
    calendar.refusing.delete(event(3).id);
    expect(await sync(changed)).toEqual({ ...zero, desired: 35, inserted: 1, unchanged: 30, refused: 4, writes: 1 });
    expect(calendar.event(CAL, event(3).id)?.fields.summary).toBe('Renamed');
    // The others wait a whole day, then are tried once more.
    clock.now = NOW + DAY - 1;
    before = calendar.total();
    expect(await sync(changed)).toMatchObject({ writes: 0, refused: 4 });
    expect(calendar.total()).toBe(before);
    clock.now = NOW + DAY;
    expect(await sync(changed)).toEqual({ ...zero, desired: 35, unchanged: 31, refused: 4, writes: 4 });
    expect(parseRefused(index.map(TARGET).get(event(10).id) ?? '')).toEqual({
      hash: event(10).hash,
      retryAt: NOW + 2 * DAY,
    });
  });

  it('a refused event no longer desired is deleted: a 404 there costs one look at the calendar', async () => {
    calendar.refusing.set(event(1).id, refusal(event(1).id));
    await sync(range(3));
    calendar.refusing.clear();
    calendar.calls.clear();
    expect(await sync([event(0), event(2)])).toEqual({
      ...zero,
      desired: 2,
      unchanged: 2,
      deleted: 1,
      writes: 1,
      reads: 1,
    });
    expect(calendar.count('getCalendar')).toBe(1);
    expect(index.map(TARGET).get(event(1).id)).toBe(CANCELLED);
  });

  it('an insert answering 409 whose get finds nothing (an id Google keeps reserved) is refused, not retried as transient', async () => {
    calendar.reserved.add(event(2).id);
    expect(await sync(range(4), { concurrency: 1 })).toEqual({
      ...zero,
      desired: 4,
      inserted: 3,
      refused: 1,
      writes: 4,
      reads: 1,
    });
    expect(refusals).toEqual([{ eventId: event(2).id, message: expect.stringContaining(event(2).id) }]);
    expect(index.map(TARGET).get(event(2).id)).toBe(refusedMarker(event(2).hash, NOW + DAY));
    calendar.calls.clear();
    expect(await sync(range(4))).toMatchObject({ writes: 0, reads: 0, refused: 1 });
  });

  it('a patch that found nothing, then an insert that found the id taken, is refused too', async () => {
    const desired = range(3);
    await sync(desired);
    calendar.fail('patchEvent', new EventMissingError('events.patch: Not Found', { status: 404, reason: 'notFound' }));
    const moved = [event(0, 'Moved'), ...desired.slice(1)];
    expect(await sync(moved)).toEqual({ ...zero, desired: 3, unchanged: 2, refused: 1, writes: 2, reads: 1 });
    expect(index.map(TARGET).get(event(0).id)).toBe(refusedMarker(event(0, 'Moved').hash, NOW + DAY));
  });

  it('a refused delete waits a day like a refused write, even through a reconcile; a class that comes back is found as it was', async () => {
    await sync(range(3));
    calendar.refusing.set(event(1).id, refusal(event(1).id));
    expect(await sync([event(0), event(2)])).toEqual({ ...zero, desired: 2, unchanged: 2, refused: 1, writes: 1 });
    expect(index.map(TARGET).get(event(1).id)).toBe(refusedMarker(DELETE_REFUSED, NOW + DAY));
    calendar.calls.clear();
    expect(await sync([event(0), event(2)])).toEqual({ ...zero, desired: 2, unchanged: 2, refused: 1 });
    // Google still holds the event live: the listing does not forget the refusal.
    expect(await sync([event(0), event(2)], { reconcile: true })).toEqual({
      ...zero,
      desired: 2,
      unchanged: 2,
      refused: 1,
      reads: 1,
    });
    expect(calendar.total()).toBe(1);
    // The class comes back (and Google would take it): the insert meets our event (409), a get shows it unchanged.
    calendar.refusing.clear();
    expect(await sync(range(3))).toEqual({ ...zero, desired: 3, unchanged: 3, writes: 1, reads: 1 });
    expect(index.map(TARGET).get(event(1).id)).toBe(event(1).hash);
  });

  it('deletes Google keeps refusing trip the breaker once, then wait: the next push writes the rest, and a day later they are tried again', async () => {
    const old = range(6);
    await sync(old);
    for (const item of old) calendar.refusing.set(item.id, refusal(item.id));
    const fresh = Array.from({ length: 10 }, (_, n) => event(100 + n));
    calendar.calls.clear();
    // Deletes go first: five refusals before any success stop the push.
    await expect(sync(fresh, { concurrency: 1 })).rejects.toBeInstanceOf(EventRefusedError);
    expect([calendar.count('deleteEvent'), calendar.count('insertEvent')]).toEqual([5, 0]);
    expect(refusedIds()).toHaveLength(5);
    // The next push leaves those five alone, asks about the sixth (refused too), and inserts every new class.
    calendar.calls.clear();
    expect(await sync(fresh, { concurrency: 1 })).toEqual({
      ...zero,
      desired: 10,
      inserted: 10,
      refused: 6,
      writes: 11,
    });
    expect([calendar.count('deleteEvent'), calendar.count('insertEvent')]).toEqual([1, 10]);
    expect(refusedIds()).toEqual(old.map((item) => item.id).sort());
    // Not asked about again the same day; a day later they are, and this time Google takes them.
    clock.now = NOW + DAY - 1;
    calendar.calls.clear();
    expect(await sync(fresh)).toEqual({ ...zero, desired: 10, unchanged: 10, refused: 6 });
    expect(calendar.total()).toBe(0);
    calendar.refusing.clear();
    clock.now = NOW + DAY;
    expect(await sync(fresh)).toEqual({ ...zero, desired: 10, unchanged: 10, deleted: 6, writes: 6 });
    expect(old.map((item) => calendar.event(CAL, item.id)?.status)).toEqual(old.map(() => 'cancelled'));
    expect(refusedIds()).toEqual([]);
  });
});

describe('order and deleted calendars', () => {
  it('patches first, then deletions (cancelled classes matter to people), then revivals, then new events', async () => {
    const desired = range(8);
    await sync(desired);
    await sync(desired.slice(1));
    const sent = calendar.sent.length;
    // Event 0 comes back, 1 moves, 2 and 3 are cancelled, 8 and 9 are new.
    const next = [event(0), event(1, 'Moved'), ...desired.slice(4), event(8), event(9)];
    expect(await sync(next, { concurrency: 1 })).toMatchObject({ revived: 1, patched: 1, deleted: 2, inserted: 2 });
    expect(calendar.sent.slice(sent)).toEqual([
      'patchEvent',
      'deleteEvent',
      'deleteEvent',
      'reviveEvent',
      'insertEvent',
      'insertEvent',
    ]);
  });

  it('deletes answering 404 on a calendar its owner deleted: CalendarGoneError, not a push that "succeeded"', async () => {
    const desired = range(3);
    await sync(desired);
    calendar.ownerDeleteCalendar(CAL);
    await expect(sync([])).rejects.toBeInstanceOf(CalendarGoneError);
    expect(calendar.count('deleteEvent')).toBe(3);
    expect(calendar.count('getCalendar')).toBe(1);
  });

  it('deletes answering 410 (already deleted) cost no look at the calendar', async () => {
    await sync(range(3));
    await calendar.deleteEvent(CAL, event(1).id);
    calendar.calls.clear();
    expect(await sync([event(0), event(2)])).toEqual({ ...zero, desired: 2, unchanged: 2, deleted: 1, writes: 1 });
    expect(calendar.count('getCalendar')).toBe(0);
  });
});
