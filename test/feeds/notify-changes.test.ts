/**
 * What a publication tells subscribers: planned as the refresh job plans it (diffRefresh), then turned into a
 * change set and filtered per subscriber. Wednesday 15 October 2025, noon (Moscow), is "now".
 */
import { describe, expect, it } from 'vitest';
import { type FeedSettings, settingsHash } from '../../src/feeds/build-feed.ts';
import { NOTIFY_ITEM_LIMIT, notifyChangeSet } from '../../src/feeds/notify-changes.ts';
import { diffRefresh, type RefreshDiff } from '../../src/feeds/refresh-diff.ts';
import { filterFor } from '../../src/notify/filter.ts';
import type { ChangeSet } from '../../src/timetable/notify-change.ts';
import type { PublishedState } from '../../src/timetable/publication.ts';
import type { TimetableEntry } from '../../src/timetable/types.ts';
import { entry } from '../timetable/fixtures.ts';

const SETTINGS: FeedSettings = {
  timezone: 'Europe/Moscow',
  weekParityAnchors: [],
  holidays: [],
  refreshIntervalMs: 30 * 60_000,
  cancelledTitlePrefix: 'Отменено: ',
};
const DAY = 86_400_000;
const msk = (local: string) => Date.parse(`${local}+03:00`);
const NOW = msk('2025-10-15T12:00');
const HORIZON = 14 * DAY;

/** A class on one date only. */
function once(
  id: number,
  date: string,
  weekday: TimetableEntry['weekday'],
  overrides: Partial<TimetableEntry> = {},
): TimetableEntry {
  // A subject of its own: rows of one class (same subject, time and place) are merged into one.
  return entry({
    id,
    subjectId: id,
    subjectName: `Предмет ${id}`,
    startDate: date,
    finishDate: date,
    weekday,
    ...overrides,
  });
}

interface Planned {
  entries: TimetableEntry[];
  state: PublishedState;
  plan: RefreshDiff;
}

function publish(previous: Planned | undefined, entries: TimetableEntry[], now: number, hash: string): Planned {
  const plan = diffRefresh({
    settings: { ...SETTINGS, cancelledRetentionMs: 14 * DAY },
    snapshot: previous && { entries: previous.entries },
    published: previous?.state,
    entries,
    snapshotHash: hash,
    settingsHash: settingsHash(SETTINGS, SETTINGS.weekParityAnchors),
    termStarts: SETTINGS.weekParityAnchors,
    now,
  });
  return { entries, state: JSON.parse(JSON.stringify(plan.state)) as PublishedState, plan };
}

/** The change set of publishing `after` at NOW over `before` published in August. */
function changesOf(before: TimetableEntry[], after: TimetableEntry[]): ChangeSet | undefined {
  const first = publish(undefined, before, msk('2025-08-25T09:00'), 'before');
  const next = publish(first, after, NOW, 'after');
  return notifyChangeSet(next.plan, {
    source: 'group:4242',
    name: 'ИВТ-21',
    stamp: NOW,
    horizonMs: HORIZON,
    previousSnapshotHash: first.state.snapshotHash,
    snapshotHash: next.state.snapshotHash,
  });
}

const weekly = entry({ id: 101, room: '305' });

describe('notifyChangeSet', () => {
  it('tells a room change of the classes within the horizon, soonest first, not the past nor the far ones', () => {
    const set = changesOf([weekly], [{ ...weekly, room: '410' }]);
    // Mondays 20 and 27 October; 13 October has passed, 3 November is beyond 14 days.
    expect(
      set?.items.map((item) => [item.kind, item.before?.date, item.before?.location, item.after?.location]),
    ).toEqual([
      ['moved', '2025-10-20', 'Главный корпус, 305', 'Главный корпус, 410'],
      ['moved', '2025-10-27', 'Главный корпус, 305', 'Главный корпус, 410'],
    ]);
    expect(set).toMatchObject({ source: 'group:4242', name: 'ИВТ-21', stamp: NOW, omitted: 0 });
    expect(set?.items[0]).toMatchObject({
      startsAt: msk('2025-10-20T10:10'),
      lessonKind: 'лекция',
      after: { begin: '10:10', end: '11:40', teacher: 'Иванов Иван Иванович' },
    });
  });

  it('tells a new time', () => {
    const lesson = once(102, '2025-10-20', 1);
    const set = changesOf([lesson], [{ ...lesson, beginTime: '12:00', endTime: '13:30' }]);
    expect(set?.items).toHaveLength(1);
    expect(set?.items[0]).toMatchObject({
      kind: 'moved',
      before: { date: '2025-10-20', begin: '10:10' },
      after: { date: '2025-10-20', begin: '12:00', end: '13:30' },
    });
  });

  it('tells a new date as a move, with the earlier start as its time', () => {
    const lesson = once(102, '2025-10-22', 3);
    const set = changesOf([lesson], [once(102, '2025-10-20', 1)]);
    expect(set?.items).toEqual([
      expect.objectContaining({
        kind: 'moved',
        before: expect.objectContaining({ date: '2025-10-22' }),
        after: expect.objectContaining({ date: '2025-10-20' }),
        startsAt: msk('2025-10-20T10:10'),
      }),
    ]);
    // Its uid changed with the date: the old one is kept, so that a later change of it chains to this one.
    const [item] = set?.items ?? [];
    expect(item?.beforeUid).toBeDefined();
    expect(item?.beforeUid).not.toBe(item?.uid);
  });

  it('tells a cancelled and an added class', () => {
    const set = changesOf(
      [weekly, once(102, '2025-10-20', 1)],
      [weekly, once(103, '2025-10-21', 2, { kind: 'практика' })],
    );
    expect(set?.items.map((item) => [item.kind, (item.after ?? item.before)?.date, item.lessonKind])).toEqual([
      ['cancelled', '2025-10-20', 'лекция'],
      ['added', '2025-10-21', 'практика'],
    ]);
    expect(set?.items[0]?.after).toBeUndefined();
    expect(set?.items[1]?.before).toBeUndefined();
  });

  it('tells a new teacher, with both names', () => {
    const lesson = once(102, '2025-10-20', 1);
    const teacher = { id: 556, lastName: 'Петров', firstName: 'Пётр', middleName: 'Петрович' };
    const set = changesOf([lesson], [{ ...lesson, teacher }]);
    expect(set?.items).toEqual([
      expect.objectContaining({
        kind: 'teacher',
        before: expect.objectContaining({ teacher: 'Иванов Иван Иванович' }),
        after: expect.objectContaining({ teacher: 'Петров Пётр Петрович' }),
      }),
    ]);
  });

  it('tells nothing of a new note alone', () => {
    const lesson = once(102, '2025-10-20', 1);
    expect(changesOf([lesson], [{ ...lesson, note: 'принести ноутбук' }])).toBeUndefined();
  });

  it('tells nothing of a class that started, ended, or starts beyond the horizon', () => {
    const ended = once(102, '2025-10-15', 3, { beginTime: '08:30', endTime: '10:00' });
    const running = once(103, '2025-10-15', 3, { beginTime: '11:00', endTime: '13:00' });
    const far = once(104, '2025-11-20', 4);
    const before = [ended, running, far];
    expect(
      changesOf(
        before,
        before.map((lesson) => ({ ...lesson, room: '999' })),
      ),
    ).toBeUndefined();
    // The same change to a class starting within the horizon is told.
    const soon = once(105, '2025-10-29', 3);
    expect(
      changesOf(
        [...before, soon],
        [...before, soon].map((lesson) => ({ ...lesson, room: '999' })),
      )?.items,
    ).toEqual([expect.objectContaining({ startsAt: msk('2025-10-29T10:10') })]);
  });

  it('tells nothing on a first publication, nor on one of the same snapshot', () => {
    const first = publish(undefined, [weekly], NOW, 'one');
    const input = { source: 'group:4242', name: 'ИВТ-21', stamp: NOW, horizonMs: HORIZON };
    expect(
      notifyChangeSet(first.plan, { ...input, previousSnapshotHash: undefined, snapshotHash: 'one' }),
    ).toBeUndefined();
    const again = publish(first, [{ ...weekly, room: '410' }], NOW + 60_000, 'one');
    expect(again.plan.pairs.moved.length).toBeGreaterThan(0);
    expect(notifyChangeSet(again.plan, { ...input, previousSnapshotHash: 'one', snapshotHash: 'one' })).toBeUndefined();
  });

  it(`lists at most ${NOTIFY_ITEM_LIMIT} items and counts the rest`, () => {
    const many = Array.from({ length: NOTIFY_ITEM_LIMIT + 5 }, (_, index) => once(1_000 + index, '2025-10-20', 1));
    const set = changesOf([], many);
    expect(set?.items).toHaveLength(NOTIFY_ITEM_LIMIT);
    expect(set?.omitted).toBe(5);
  });
});

describe('filterFor', () => {
  const first = once(102, '2025-10-20', 1, { note: '1 подгруппа' });
  const second = once(103, '2025-10-20', 1, { note: '2 подгруппа', beginTime: '12:00', endTime: '13:30' });
  const seminar = once(104, '2025-10-21', 2, { kind: 'семинар' });
  const set = changesOf(
    [first, second, seminar],
    [first, second, seminar].map((lesson) => ({ ...lesson, room: '999' })),
  ) as ChangeSet;

  it('keeps a subgroup its own classes and those of the whole group', () => {
    expect(filterFor(set, { subgroup: 1 }, NOW).items.map((item) => item.uid)).toEqual([
      set.items[0]?.uid,
      set.items[2]?.uid,
    ]);
    expect(filterFor(set, {}, NOW).items).toHaveLength(3);
  });

  it('leaves out hidden kinds, in any case', () => {
    expect(filterFor(set, { excludeKinds: ['Семинар'] }, NOW).items.map((item) => item.lessonKind)).toEqual([
      'лекция',
      'лекция',
    ]);
  });

  it('tells a class that moved out of a subgroup to the subgroup it left', () => {
    const moved = changesOf([first], [{ ...first, note: '2 подгруппа', room: '999' }]) as ChangeSet;
    expect(filterFor(moved, { subgroup: 1 }, NOW).items).toHaveLength(1);
    expect(filterFor(moved, { subgroup: 2 }, NOW).items).toHaveLength(1);
    expect(filterFor(moved, { subgroup: 3 }, NOW).items).toHaveLength(0);
  });

  it('drops what has started by the time it is sent', () => {
    expect(filterFor(set, {}, msk('2025-10-20T11:00')).items.map((item) => item.lessonKind)).toEqual([
      'лекция',
      'семинар',
    ]);
    expect(filterFor(set, {}, msk('2025-10-22T00:00')).items).toHaveLength(0);
  });
});
