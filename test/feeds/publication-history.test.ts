/**
 * "The past is history": publications planned one after another (as the refresh job does) never rewrite or
 * remove an occurrence that has ended, in the default feed, in subscriber variants and in Google's desired
 * events; change records speak only of what changes from now on.
 */
import { describe, expect, it } from 'vitest';
import { type FeedSettings, feedOccurrences, renderVariant, settingsHash } from '../../src/feeds/build-feed.ts';
import { diffPublication, nextExpiry, type PublicationDiff } from '../../src/feeds/publication-diff.ts';
import { diffRefresh } from '../../src/feeds/refresh-diff.ts';
import { desiredEvents } from '../../src/push/desired-events.ts';
import { diffPush } from '../../src/push/push-diff.ts';
import { expand, occurrenceUid } from '../../src/timetable/expand.ts';
import type { PublishedState } from '../../src/timetable/publication.ts';
import type { Occurrence, SubscriberOptions, TimetableEntry } from '../../src/timetable/types.ts';
import { entry } from '../timetable/fixtures.ts';

const SETTINGS: FeedSettings = {
  timezone: 'Europe/Moscow',
  weekParityAnchors: [],
  holidays: [],
  refreshIntervalMs: 30 * 60_000,
  cancelledTitlePrefix: 'Отменено: ',
};
const DAY = 86_400_000;

/** An instant in Moscow (UTC+3 all year). */
const msk = (local: string) => Date.parse(`${local}+03:00`);

/** Wednesday 15 October 2025, noon: seven Mondays of the term (1 Sep … 13 Oct) have ended, ten are to come. */
const MID_TERM = msk('2025-10-15T12:00');

/** A published source: its entries and its state. */
interface Published {
  entries: TimetableEntry[];
  state: PublishedState;
  plan: PublicationDiff;
  settings: FeedSettings;
}

/** Plans a publication with the planning code `publishTimetable` uses. */
function publish(
  previous: Published | undefined,
  entries: TimetableEntry[],
  now: number,
  settings = SETTINGS,
): Published {
  const plan = diffRefresh({
    settings: { ...settings, cancelledRetentionMs: 14 * DAY },
    snapshot: previous && { entries: previous.entries },
    published: previous?.state,
    entries,
    snapshotHash: `h${now}`,
    settingsHash: settingsHash(settings, settings.weekParityAnchors),
    termStarts: settings.weekParityAnchors,
    now,
  });
  // Stored as JSON and read back, like the snapshot store does.
  return { entries, state: JSON.parse(JSON.stringify(plan.state)) as PublishedState, plan, settings };
}

function feed(published: Published, subscriber: SubscriberOptions = {}): Occurrence[] {
  return feedOccurrences({ entries: published.entries }, published.state, published.settings, subscriber);
}

const ended = (occurrences: readonly Occurrence[], now: number) => occurrences.filter((o) => o.endUtc <= now);
const upcoming = (occurrences: readonly Occurrence[], now: number) => occurrences.filter((o) => o.endUtc > now);

/** The VEVENT of `uid` in an ICS text. */
function vevent(ics: string, uid: string): string {
  const start = ics.indexOf(`UID:${uid}`);
  return ics.slice(ics.lastIndexOf('BEGIN:VEVENT', start), ics.indexOf('END:VEVENT', start));
}

const term = entry({ id: 101, room: '305' });

describe('a room change mid-term', () => {
  const first = publish(undefined, [term], msk('2025-08-25T09:00'));
  const moved = publish(first, [{ ...term, room: '410' }], MID_TERM);

  it('leaves the ended occurrences as published, with the same SEQUENCE, and moves the rest', () => {
    const before = feed(first);
    const after = feed(moved);
    expect(before).toHaveLength(17);
    expect(after).toHaveLength(17);
    expect(ended(after, MID_TERM)).toHaveLength(7);
    expect(ended(after, MID_TERM)).toEqual(ended(before, MID_TERM));
    expect(ended(after, MID_TERM).every((o) => o.location === 'Главный корпус, 305' && o.sequence === 0)).toBe(true);
    expect(upcoming(after, MID_TERM)).toHaveLength(10);
    expect(upcoming(after, MID_TERM).every((o) => o.location === 'Главный корпус, 410' && o.sequence === 1)).toBe(true);
  });

  it('renders the same VEVENT for an ended class, and a new SEQUENCE for a coming one', () => {
    const snapshot = (published: Published) => ({
      hash: '',
      fetchedAt: 0,
      name: 'ИВТ-21',
      entries: published.entries,
      problems: [],
    });
    const before = renderVariant(snapshot(first), first.state, SETTINGS, {});
    const after = renderVariant(snapshot(moved), moved.state, SETTINGS, {});
    const past = occurrenceUid(101, '2025-10-13');
    const stamp = /DTSTAMP:.*\r\n/;
    expect(vevent(after, past).replace(stamp, '')).toBe(vevent(before, past).replace(stamp, ''));
    expect(vevent(after, past)).toContain('SEQUENCE:0');
    expect(vevent(after, past)).toContain('LOCATION:Главный корпус\\, 305');
    const coming = occurrenceUid(101, '2025-10-20');
    expect(vevent(after, coming)).toContain('SEQUENCE:1');
    expect(vevent(after, coming)).toContain('LOCATION:Главный корпус\\, 410');
  });

  it('records only the coming occurrences as moved', () => {
    expect(moved.plan.change?.counts).toEqual({ added: 0, removed: 0, moved: 10, changed: 0 });
    expect(moved.plan.change?.moved[0]?.before).toMatchObject({ date: '2025-10-20', location: 'Главный корпус, 305' });
    // The first publication counts only what was still to come as added.
    expect(first.plan.change?.counts.added).toBe(17);
  });

  it('keeps only that entry, grouped: one content with its seven dates', () => {
    expect(moved.state.frozen).toEqual([
      expect.objectContaining({
        entryId: 101,
        until: MID_TERM,
        kept: [expect.objectContaining({ location: 'Главный корпус, 305' })],
      }),
    ]);
    expect(Object.keys(moved.state.frozen?.[0]?.kept[0]?.dates ?? {})).toHaveLength(7);
    expect(Object.keys(moved.state.occurrences)).toHaveLength(10);
  });

  it('treats a class in progress as still to come', () => {
    const during = msk('2025-10-13T10:30');
    const changed = publish(first, [{ ...term, room: '410' }], during);
    expect(changed.plan.change?.counts.moved).toBe(11);
    const today = feed(changed).find((o) => o.date === '2025-10-13');
    expect(today).toMatchObject({ location: 'Главный корпус, 410', sequence: 1 });
  });

  it('keeps Google away from the ended events: no patch, no delete', () => {
    const index = new Map(
      desiredEvents(feed(first), SETTINGS.cancelledTitlePrefix).map((event) => [event.id, event.hash]),
    );
    const plan = diffPush(desiredEvents(feed(moved), SETTINGS.cancelledTitlePrefix), index, MID_TERM);
    expect(plan.patch).toHaveLength(10);
    expect(plan.remove).toEqual([]);
    expect(plan.insert).toEqual([]);
    expect(plan.unchanged).toBe(7);
  });
});

describe('an entry deleted mid-term', () => {
  const other = entry({ id: 202, weekday: 3, subjectName: 'Физика' });
  const first = publish(undefined, [term, other], msk('2025-08-25T09:00'));
  const deleted = publish(first, [other], MID_TERM);

  it('keeps its ended occurrences confirmed and cancels the coming ones', () => {
    const mine = feed(deleted).filter((o) => o.entryId === 101);
    expect(ended(mine, MID_TERM)).toEqual(
      ended(
        feed(first).filter((o) => o.entryId === 101),
        MID_TERM,
      ),
    );
    expect(ended(mine, MID_TERM).every((o) => o.status === 'CONFIRMED')).toBe(true);
    expect(upcoming(mine, MID_TERM)).toHaveLength(10);
    expect(upcoming(mine, MID_TERM).every((o) => o.status === 'CANCELLED' && o.sequence === 1)).toBe(true);
  });

  it('records only the coming occurrences as removed, and they become tombstones', () => {
    expect(deleted.plan.change?.counts).toEqual({ added: 0, removed: 10, moved: 0, changed: 0 });
    expect(deleted.state.tombstones).toHaveLength(10);
  });

  it('leaves the ended events in Google and cancels only the coming ones', () => {
    const ended = feed(deleted).filter((item) => item.entryId === 101 && item.endUtc <= MID_TERM);
    expect(ended).toHaveLength(7);
    for (const prefix of [SETTINGS.cancelledTitlePrefix, '']) {
      const index = new Map(desiredEvents(feed(first), prefix).map((event) => [event.id, event.hash]));
      const plan = diffPush(desiredEvents(feed(deleted), prefix), index, MID_TERM);
      // With a prefix the coming classes are retitled as cancelled; without one they are deleted at once.
      const cancelled = prefix === '' ? plan.remove : plan.patch.map((event) => event.id);
      expect(new Set(cancelled).size).toBe(10);
      expect(prefix === '' ? plan.patch : plan.remove).toEqual([]);
      for (const o of ended) {
        const id = desiredEvents([o], prefix)[0]?.id ?? '';
        expect(index.has(id)).toBe(true);
        expect(cancelled).not.toContain(id);
      }
      expect(plan.unchanged).toBe(17 + 7);
    }
  });

  it('keeps them when the tombstones expire and when the entry comes back changed', () => {
    const later = msk('2025-11-20T12:00');
    const again = publish(deleted, [other], later);
    expect(ended(feed(again), MID_TERM)).toEqual(ended(feed(first), MID_TERM));
    const back = publish(again, [other, { ...term, room: '512' }], msk('2025-12-20T12:00'));
    expect(ended(feed(back), MID_TERM)).toEqual(ended(feed(first), MID_TERM));
    // Coming back, only the classes still to come are shown: 22 Dec.
    expect(feed(back).filter((o) => o.entryId === 101 && o.endUtc > msk('2025-12-20T12:00'))).toEqual([
      expect.objectContaining({ date: '2025-12-22', location: 'Главный корпус, 512', status: 'CONFIRMED' }),
    ]);
    // Between the deletion and the return, nothing of entry 101 took place: the two classes that were still
    // cancelled in the feed when their time came (20 and 27 Oct, before the retention ended on 29 Oct) stay
    // cancelled for good; those that were still to come when the retention ended left the feed.
    const between = feed(back).filter(
      (o) => o.entryId === 101 && o.endUtc > MID_TERM && o.endUtc <= msk('2025-12-20T12:00'),
    );
    expect(between.map((o) => [o.date, o.status])).toEqual([
      ['2025-10-20', 'CANCELLED'],
      ['2025-10-27', 'CANCELLED'],
    ]);
    expect(back.state.tombstones.map((tomb) => tomb.occurrence.date)).toEqual(['2025-10-20', '2025-10-27']);
    expect(nextExpiry(back.state)).toBeUndefined();
  });
});

describe('two successive changes of one entry', () => {
  const t1 = MID_TERM;
  const t2 = msk('2025-11-12T12:00');
  const first = publish(undefined, [term], msk('2025-08-25T09:00'));
  const roomChanged = publish(first, [{ ...term, room: '410' }], t1);
  const timeChanged = publish(roomChanged, [{ ...term, room: '410', beginTime: '12:00', endTime: '13:30' }], t2);

  it('shows each stretch of the term as it was published', () => {
    const after = feed(timeChanged);
    expect(after).toHaveLength(17);
    expect(ended(after, t1)).toEqual(ended(feed(first), t1));
    const middle = after.filter((o) => o.endUtc > t1 && o.endUtc <= t2);
    expect(middle.map((o) => o.date)).toEqual(['2025-10-20', '2025-10-27', '2025-11-03', '2025-11-10']);
    expect(middle).toEqual(feed(roomChanged).filter((o) => o.endUtc > t1 && o.endUtc <= t2));
    expect(middle.every((o) => o.location.endsWith('410') && o.beginTime === '10:10' && o.sequence === 1)).toBe(true);
    expect(upcoming(after, t2).every((o) => o.beginTime === '12:00' && o.sequence === 2)).toBe(true);
    expect(timeChanged.plan.change?.counts).toEqual({ added: 0, removed: 0, moved: 6, changed: 0 });
    expect(timeChanged.state.frozen?.map((record) => record.until)).toEqual([t1, t2]);
  });

  it('is not moved by a later refresh that changes nothing else', () => {
    const t3 = msk('2025-12-01T12:00');
    const teacher = { ...term, room: '410', beginTime: '12:00', endTime: '13:30', note: 'перенос' };
    const third = publish(timeChanged, [teacher], t3);
    expect(ended(feed(third), t3)).toEqual(ended(feed(timeChanged), t3));
    expect(third.plan.change?.counts).toEqual({ added: 0, removed: 0, moved: 0, changed: 4 });
  });
});

describe('subscriber variants over frozen entries', () => {
  const lab = entry({ id: 303, kind: 'лабораторная', note: '1 подгруппа', weekday: 2 });
  const first = publish(undefined, [lab], msk('2025-08-25T09:00'));
  const changed = publish(first, [{ ...lab, room: '120' }], MID_TERM);
  const deleted = publish(first, [], MID_TERM);
  const variants: SubscriberOptions[] = [
    {},
    { subgroup: 1 },
    { subgroup: 2 },
    { excludeKinds: ['ЛАБОРАТОРНАЯ'] },
    { titleTemplate: '{kind}: {subject} [{room}]' },
    { subgroup: 1, titleTemplate: '{subject}' },
  ];

  // Everything a calendar is shown; `hash` is the digest a publication compares, which variants never store.
  const shown = (occurrences: readonly Occurrence[]) => occurrences.map(({ hash: _hash, ...rest }) => rest);

  it.each(variants)('%o sees the ended classes exactly as before the change', (subscriber) => {
    const before = shown(ended(feed(first, subscriber), MID_TERM));
    expect(shown(ended(feed(changed, subscriber), MID_TERM))).toEqual(before);
    expect(shown(ended(feed(deleted, subscriber), MID_TERM))).toEqual(before);
    if (subscriber.subgroup !== 2 && subscriber.excludeKinds === undefined) expect(before).toHaveLength(7);
  });

  it('applies the options to the frozen entry like to a live one', () => {
    expect(feed(changed, { subgroup: 2 })).toEqual([]);
    const titled = ended(feed(changed, { titleTemplate: '{kind}: {subject} [{room}]' }), MID_TERM);
    expect(titled.map((o) => o.summary)).toEqual(Array(7).fill('лабораторная: Математический анализ [305]'));
    expect(titled.every((o) => o.sequence === 1)).toBe(true);
  });
});

describe('settings that move dates', () => {
  const first = publish(undefined, [term], msk('2025-08-25T09:00'));

  it('a new holiday and time zone leave ended classes where they were', () => {
    const settings = { ...SETTINGS, timezone: 'Asia/Yekaterinburg', holidays: ['2025-09-08', '2025-11-03'] };
    const next = publish(first, [term], MID_TERM, settings);
    expect(ended(feed(next), MID_TERM)).toEqual(ended(feed(first), MID_TERM));
    expect(feed(next).some((o) => o.date === '2025-11-03' && o.status === 'CONFIRMED')).toBe(false);
    expect(upcoming(feed(next), MID_TERM).filter((o) => o.status === 'CONFIRMED')[0]?.timezone).toBe(
      'Asia/Yekaterinburg',
    );
  });

  it('week parity anchors moved: the odd-week class keeps its ended dates', () => {
    const odd = entry({ id: 404, weekType: 1 });
    const published = publish(undefined, [odd], msk('2025-08-25T09:00'));
    const shifted = publish(published, [odd], MID_TERM, { ...SETTINGS, weekParityAnchors: ['2025-09-08'] });
    expect(ended(feed(shifted), MID_TERM)).toEqual(ended(feed(published), MID_TERM));
    expect(upcoming(feed(shifted), MID_TERM).filter((o) => o.status === 'CONFIRMED')[0]?.date).toBe('2025-10-20');
  });

  it('an unchanged refresh keeps nothing: the state stays small', () => {
    const next = publish(first, [term], MID_TERM);
    expect(next.state.frozen).toBeUndefined();
    expect(next.plan.change).toBeUndefined();
  });
});

describe('identical classes of two entries', () => {
  it('the survivor of a collapse does not fill the past twice when the other entry goes', () => {
    const twin = { ...term, id: 505 };
    const first = publish(undefined, [term, twin], msk('2025-08-25T09:00'));
    expect(feed(first).every((o) => o.entryId === 101)).toBe(true);
    const gone = publish(first, [twin], MID_TERM);
    const after = feed(gone);
    expect(ended(after, MID_TERM)).toEqual(ended(feed(first), MID_TERM));
    expect(upcoming(after, MID_TERM).filter((o) => o.status === 'CONFIRMED')).toHaveLength(10);
    expect(new Set(after.map((o) => o.date)).size).toBe(17);
  });
});

describe('states stored before history was kept', () => {
  it('load and publish: without frozen entries and expansion settings', () => {
    const first = publish(undefined, [term], msk('2025-08-25T09:00'));
    const { frozen: _frozen, expansion: _expansion, ...legacy } = first.state;
    const old = { ...first, state: legacy as PublishedState };
    const moved = publish(old, [{ ...term, room: '410' }], MID_TERM);
    expect(ended(feed(moved), MID_TERM)).toEqual(ended(feed(first), MID_TERM));
    expect(moved.plan.change?.counts.moved).toBe(10);
  });
});

describe('a class sent as one row per group', () => {
  /** A Saturday seminar of two groups from 6 Sep: 4 Saturdays have ended on 1 Oct, 13 are to come. */
  const seminar = (id: number, group: string) =>
    entry({ id, groups: [group], weekday: 6, startDate: '2025-09-06', kind: 'семинар', subjectName: 'Физика' });
  const start = msk('2025-09-01T09:00');
  const refresh = msk('2025-10-01T12:00');
  const later = msk('2025-10-22T12:00');

  /** What a teacher's feed must show throughout: one confirmed event a Saturday, under one UID each. */
  function expectStable(before: Published, after: Published, at: number): void {
    const shown = feed(after);
    expect(ended(shown, at)).toEqual(ended(feed(before), at));
    expect(shown.filter((o) => o.status === 'CANCELLED')).toEqual([]);
    expect(new Set(shown.map((o) => o.date)).size).toBe(shown.length);
    expect(shown.map((o) => o.uid)).toEqual(feed(before).map((o) => o.uid));
  }

  it('keeps its UIDs and its past when the lowest row is deleted', () => {
    const both = publish(undefined, [seminar(301, '09-351'), seminar(302, '09-352')], start);
    expect(feed(both)).toHaveLength(17);
    const left = publish(both, [seminar(302, '09-352')], refresh);
    expectStable(both, left, refresh);
    expect(ended(feed(left), refresh)).toHaveLength(4);
    expect(upcoming(feed(left), refresh).every((o) => o.description.includes('Группа: 09-352'))).toBe(true);
    expect(left.plan.futureRemoved).toBe(0);
    // And on: a refresh that changes nothing keeps it, and a row joining again takes the class's id.
    expectStable(left, publish(left, [seminar(302, '09-352')], later), later);
    const back = publish(left, [seminar(300, '09-350'), seminar(302, '09-352')], later);
    expectStable(left, back, later);
    expect(upcoming(feed(back), later)[0]?.description).toContain('Группы: 09-350, 09-352');
  });

  it('keeps its UIDs and its past when a row with a lower id joins', () => {
    const alone = publish(undefined, [seminar(302, '09-352')], start);
    const joined = publish(alone, [seminar(301, '09-351'), seminar(302, '09-352')], refresh);
    expectStable(alone, joined, refresh);
    expect(joined.state.classIds).toEqual({ 301: 302 });
    expect(joined.plan.change?.counts).toEqual({ added: 0, removed: 0, moved: 0, changed: 13 });
    // Google: the coming events are updated in place, the ended ones left alone.
    const prefix = SETTINGS.cancelledTitlePrefix;
    const index = new Map(desiredEvents(feed(alone), prefix).map((event) => [event.id, event.hash]));
    const plan = diffPush(desiredEvents(feed(joined), prefix), index, refresh);
    expect([plan.insert.length, plan.patch.length, plan.remove.length, plan.unchanged]).toEqual([0, 13, 0, 4]);
  });

  it('never gives a class the id of a live row of another class', () => {
    const both = publish(undefined, [seminar(301, '09-351'), seminar(302, '09-352')], start);
    // Row 301 moves to another room: its own class now, under its own id; the seminar keeps its past anyway.
    const split = publish(both, [{ ...seminar(301, '09-351'), room: '410' }, seminar(302, '09-352')], refresh);
    const ids = new Set(upcoming(feed(split), refresh).map((o) => o.entryId));
    expect(ids).toEqual(new Set([301, 302]));
    expect(ended(feed(split), refresh)).toEqual(ended(feed(both), refresh));
    expect(feed(split).filter((o) => o.status === 'CANCELLED')).toEqual([]);
  });
});

describe('a twin taking over', () => {
  it('a class sent twice under different ids for one group keeps its past and cancels nothing', () => {
    const twin = { ...term, id: 505 };
    const first = publish(undefined, [term, twin], msk('2025-08-25T09:00'));
    const gone = publish(first, [twin], MID_TERM);
    expect(feed(gone)).toHaveLength(17);
    expect(feed(gone).map((o) => o.uid)).toEqual(feed(first).map((o) => o.uid));
    expect(gone.plan.change).toBeUndefined();
  });

  it('identical classes of two records (other subject ids) collapse, and the survivor takes over quietly', () => {
    const twin = { ...term, id: 505, subjectId: 78 };
    const first = publish(undefined, [term, twin], msk('2025-08-25T09:00'));
    expect(feed(first).every((o) => o.entryId === 101)).toBe(true);
    const gone = publish(first, [twin], MID_TERM);
    const after = feed(gone);
    expect(ended(after, MID_TERM)).toEqual(ended(feed(first), MID_TERM));
    expect(after.filter((o) => o.status === 'CANCELLED')).toEqual([]);
    expect(upcoming(after, MID_TERM).map((o) => o.entryId)).toEqual(Array(10).fill(505));
    expect(gone.plan.futureRemoved).toBe(0);
  });
});

describe('the first refresh after upgrading from before rows were merged', () => {
  /** A publication as the code before rows were merged made it: rules 1, and no expansion settings recorded. */
  function legacyPublish(entries: TimetableEntry[], now: number): Published {
    const next = expand(entries, { timezone: SETTINGS.timezone, rules: 1 }).occurrences;
    const plan = diffPublication({
      previous: undefined,
      previousOccurrences: [],
      previousEntries: new Map(),
      next,
      snapshotHash: 'legacy',
      settingsHash: 'legacy',
      expansion: { timezone: SETTINGS.timezone, termStarts: [], holidays: [] },
      now,
      cancelledRetentionMs: 14 * DAY,
    });
    const { expansion: _recorded, ...state } = plan.state;
    return { entries, state: JSON.parse(JSON.stringify(state)) as PublishedState, plan, settings: SETTINGS };
  }

  it('2018 (1 September a Saturday): the odd-week dates already held stay, the coming ones follow the new rule', () => {
    // Odd-week Tuesdays: by rules 1, week 1 held 1 September (Sat), so 4 Sep was week 2; now it is week 1.
    const tuesday = entry({
      id: 7,
      year: 2018,
      startDate: '2018-09-04',
      finishDate: '2018-12-25',
      weekday: 2,
      weekType: 1,
    });
    const published = legacyPublish([tuesday], msk('2018-08-30T09:00'));
    expect(
      feed(published)
        .map((o) => o.date)
        .slice(0, 2),
    ).toEqual(['2018-09-11', '2018-09-25']);
    const now = msk('2018-10-10T12:00');
    const upgraded = publish(published, [tuesday], now);
    const after = feed(upgraded);
    expect(ended(after, now)).toEqual(ended(feed(published), now));
    expect(ended(after, now).map((o) => o.date)).toEqual(['2018-09-11', '2018-09-25', '2018-10-09']);
    const confirmed = (o: { status: string }) => o.status === 'CONFIRMED';
    // The weeks the old rule put them on, still to come, show as cancelled for a while: the class moved.
    expect(
      upcoming(after, now)
        .filter((o) => !confirmed(o))
        .map((o) => o.date),
    ).toEqual(['2018-10-23', '2018-11-06', '2018-11-20', '2018-12-04', '2018-12-18']);
    expect(
      upcoming(after, now)
        .filter(confirmed)
        .map((o) => o.date),
    ).toEqual(['2018-10-16', '2018-10-30', '2018-11-13', '2018-11-27', '2018-12-11', '2018-12-25']);
    expect(upgraded.state.expansion?.rules).toBe(2);
  });

  it('rows of one class: both events already held stay, the coming ones become one, nothing is cancelled', () => {
    const rows = [entry({ id: 301, groups: ['09-351'] }), entry({ id: 302, groups: ['09-352'] })];
    const published = legacyPublish(rows, msk('2025-08-25T09:00'));
    expect(feed(published)).toHaveLength(34);
    const upgraded = publish(published, rows, MID_TERM);
    const after = feed(upgraded);
    expect(ended(after, MID_TERM)).toEqual(ended(feed(published), MID_TERM));
    expect(ended(after, MID_TERM)).toHaveLength(14);
    expect(upcoming(after, MID_TERM)).toHaveLength(10);
    expect(upcoming(after, MID_TERM).every((o) => o.entryId === 301 && o.status === 'CONFIRMED')).toBe(true);
    expect(upgraded.state.tombstones).toEqual([]);
    // Re-rendered later (a variant, a push), the publication shows the same.
    expect(feedOccurrences({ entries: rows }, upgraded.state, SETTINGS)).toEqual(upgraded.plan.occurrences);
  });

  it('a state recorded without rules (the first version to record settings) expands by the current ones', () => {
    const rows = [entry({ id: 301, groups: ['09-351'] }), entry({ id: 302, groups: ['09-352'] })];
    const current = publish(undefined, rows, msk('2025-08-25T09:00'));
    const { rules: _rules, ...expansion } = current.state.expansion ?? { timezone: '', termStarts: [], holidays: [] };
    const recorded = { ...current, state: { ...current.state, expansion } };
    expect(feed(recorded)).toEqual(feed(current));
    expect(feed(recorded)).toHaveLength(17);
  });
});
