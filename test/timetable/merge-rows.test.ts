import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeChange } from '../../src/feeds/publication-diff.ts';
import { expand } from '../../src/timetable/expand.ts';
import { mergeRows, mergeRowsWithIds, publishedClassIds, storedClassIds } from '../../src/timetable/merge-rows.ts';
import type { ExpandOptions, Occurrence, PreviousOccurrence } from '../../src/timetable/types.ts';
import { parseScheduleResponse } from '../../src/upstream/schemas.ts';
import { rawTuesdayLecture } from '../upstream/fixtures.ts';
import { entry } from './fixtures.ts';

const MOSCOW: ExpandOptions = { timezone: 'Europe/Moscow', from: '2025-09-01', to: '2025-09-30' };

/** One class as the university sends it for each of its groups: same everything, one row per group. */
function apiRow(id: number, groupList: string, overrides: Record<string, unknown> = {}) {
  return rawTuesdayLecture({ id, group_list: groupList, ...overrides });
}

function expandRows(rows: unknown[], options: Partial<ExpandOptions> = {}) {
  const { entries, problems } = parseScheduleResponse({ success: true, subjects: rows });
  expect(problems).toEqual([]);
  return expand(entries, { ...MOSCOW, ...options });
}

function previousOf(occurrences: readonly Occurrence[]): Map<string, PreviousOccurrence> {
  return new Map(occurrences.map((o) => [o.uid, { hash: o.hash, sequence: o.sequence }]));
}

describe('one class delivered as one row per group', () => {
  it('is one event per date listing every group, under the lowest id', () => {
    const { occurrences } = expandRows([apiRow(7202, '09-352'), apiRow(7201, '09-351'), apiRow(7203, '09-353')]);
    expect(occurrences.map((o) => o.uid)).toEqual([
      '7201-20250902@timetable-sync',
      '7201-20250909@timetable-sync',
      '7201-20250916@timetable-sync',
      '7201-20250923@timetable-sync',
      '7201-20250930@timetable-sync',
    ]);
    expect(occurrences[0]?.description).toBe(
      'Лекция\nПреподаватель: Петров Пётр Петрович\nГруппы: 09-351, 09-352, 09-353',
    );
  });

  it('keeps the UID the lowest row had on its own, so a feed published before the merge keeps its events', () => {
    const alone = expandRows([apiRow(7201, '09-351')]).occurrences;
    const merged = expandRows([apiRow(7201, '09-351'), apiRow(7202, '09-352')], {
      previous: previousOf(alone),
    }).occurrences;
    expect(merged.map((o) => o.uid)).toEqual(alone.map((o) => o.uid));
    // DESCRIPTION names a second group now: calendars must take the new version.
    expect(merged.map((o) => o.sequence)).toEqual(alone.map(() => 1));
  });

  it('gives the same events whatever order the rows come in', () => {
    const rows = [apiRow(30, '09-353'), apiRow(10, '09-351'), apiRow(20, '09-352')];
    fc.assert(
      fc.property(fc.shuffledSubarray(rows, { minLength: 3, maxLength: 3 }), (shuffled) => {
        expect(expandRows(shuffled)).toEqual(expandRows(rows));
      }),
    );
  });

  it('a group added or removed keeps the UIDs, raises SEQUENCE and is recorded as changed, not moved', () => {
    const two = expandRows([apiRow(10, '09-351'), apiRow(20, '09-352')]).occurrences;
    const three = expandRows([apiRow(10, '09-351'), apiRow(20, '09-352'), apiRow(30, '09-353')], {
      previous: previousOf(two),
    }).occurrences;
    expect(three.map((o) => o.uid)).toEqual(two.map((o) => o.uid));
    expect(three.map((o) => o.sequence)).toEqual(two.map(() => 1));
    expect(describeChange(two, three, 0)?.counts).toEqual({ added: 0, removed: 0, moved: 0, changed: 5 });
    // The lowest row leaves: the class keeps the id it was published under, so its UIDs stay.
    const published = new Map([
      [10, 10],
      [20, 10],
      [30, 10],
    ]);
    const withoutFirst = expandRows([apiRow(20, '09-352'), apiRow(30, '09-353')], {
      previous: previousOf(three),
      classIds: published,
    }).occurrences;
    expect(withoutFirst.map((o) => o.uid)).toEqual(two.map((o) => o.uid));
    expect(describeChange(three, withoutFirst, 0)?.counts).toEqual({ added: 0, removed: 0, moved: 0, changed: 5 });
    const fewer = expandRows([apiRow(10, '09-351'), apiRow(30, '09-353')], { previous: previousOf(three) });
    expect(fewer.occurrences.map((o) => o.uid)).toEqual(two.map((o) => o.uid));
    expect(fewer.occurrences.map((o) => o.sequence)).toEqual(two.map(() => 2));
  });

  it('identical rows under different ids for one group stay one event, as before', () => {
    const { occurrences } = expandRows([apiRow(11, '09-351'), apiRow(12, '09-351')]);
    expect(occurrences).toHaveLength(5);
    expect(occurrences[0]?.description).toContain('Группа: 09-351');
    expect(new Set(occurrences.map((o) => o.entryId))).toEqual(new Set([11]));
  });

  it('rows differing in anything but the groups stay separate classes', () => {
    const { occurrences } = expandRows([
      apiRow(10, '09-351'),
      apiRow(20, '09-352', { num_auditorium_schedule: '102' }),
      apiRow(30, '09-353', { note_schedule: '1 подгруппа' }),
    ]);
    expect(new Set(occurrences.map((o) => o.entryId))).toEqual(new Set([10, 20, 30]));
  });

  it('fills {groups} of a title template with every group, and subscriber filters see the merged class', () => {
    const rows = [
      apiRow(10, '09-351', { note_schedule: '2 подгруппа' }),
      apiRow(20, '09-352', { note_schedule: '2 подгруппа' }),
    ];
    const titled = expandRows(rows, { subscriber: { titleTemplate: '{subject} {groups}' } }).occurrences;
    expect(titled[0]?.summary).toBe('Физика 09-351, 09-352');
    expect(expandRows(rows, { subscriber: { subgroup: 1 } }).occurrences).toEqual([]);
    expect(expandRows(rows, { subscriber: { subgroup: 2 } }).occurrences).toHaveLength(5);
    expect(expandRows(rows, { subscriber: { excludeKinds: ['Лекция'] } }).occurrences).toEqual([]);
  });

  it('a row already listing several groups merges with the others, each group once', () => {
    const { occurrences } = expandRows([apiRow(10, '09-351, 09-352'), apiRow(20, '09-352, 09-353')]);
    expect(occurrences[0]?.description).toContain('Группы: 09-351, 09-352, 09-353');
  });
});

describe('mergeRows', () => {
  it('returns single rows as they are, so timetables without shared classes expand exactly as before', () => {
    const a = entry({ id: 1 });
    const b = entry({ id: 2, room: '306' });
    const merged = mergeRows([b, a]);
    expect(merged).toEqual([a, b]);
    expect(merged[0]).toBe(a);
  });

  it('leaves rows repeating one id to expand, which reports the different one', () => {
    const rows = [entry({ id: 5, groups: ['A'] }), entry({ id: 5, groups: ['B'] }), entry({ id: 6, groups: ['C'] })];
    expect(mergeRows(rows).map((row) => [row.id, row.groups])).toEqual([
      [5, ['A', 'C']],
      [5, ['B']],
    ]);
    const { problems } = expand(rows, MOSCOW);
    expect(problems).toEqual([expect.objectContaining({ entryId: 5, field: 'id' })]);
  });
});

describe('class ids', () => {
  const row = (id: number, group: string, overrides: Parameters<typeof entry>[0] = {}) =>
    entry({ id, groups: [group], ...overrides });
  const ids = (rows: Parameters<typeof mergeRows>[0], published: [number, number][]) =>
    mergeRows(rows, new Map(published)).map((merged) => [merged.id, merged.groups]);

  it('a class takes the id its rows were published under, even when that row has left', () => {
    expect(
      ids(
        [row(20, 'B'), row(30, 'C')],
        [
          [20, 10],
          [30, 10],
        ],
      ),
    ).toEqual([[10, ['B', 'C']]]);
    // A row never published has no say: a lower one joining leaves the class its id.
    expect(ids([row(5, 'A'), row(20, 'B')], [[20, 20]])).toEqual([[20, ['A', 'B']]]);
    // Without any published row: the lowest id, as on a first publication.
    expect(ids([row(20, 'B'), row(5, 'A')], [])).toEqual([[5, ['A', 'B']]]);
  });

  it('the id most rows name wins, the lowest of equals', () => {
    expect(
      ids(
        [row(1, 'A'), row(2, 'B'), row(3, 'C')],
        [
          [1, 1],
          [2, 7],
          [3, 7],
        ],
      ),
    ).toEqual([[7, ['A', 'B', 'C']]]);
    expect(
      ids(
        [row(1, 'A'), row(2, 'B')],
        [
          [1, 9],
          [2, 7],
        ],
      ),
    ).toEqual([[7, ['A', 'B']]]);
  });

  it('a live row keeps its own id, and two classes never share one', () => {
    // Row 10 gave the class its id, then moved to another room: it keeps 10, the class falls back to 20.
    const moved = row(10, 'A', { room: '410' });
    expect(
      ids(
        [moved, row(20, 'B'), row(30, 'C')],
        [
          [10, 10],
          [20, 10],
          [30, 10],
        ],
      ),
    ).toEqual([
      [10, ['A']],
      [20, ['B', 'C']],
    ]);
    // A class split in two without its row 10: the class of the lowest row keeps 10.
    const split = [row(20, 'B'), row(30, 'C', { room: '410' })];
    expect(
      ids(split, [
        [20, 10],
        [30, 10],
      ]),
    ).toEqual([
      [10, ['B']],
      [30, ['C']],
    ]);
  });

  it('a publication stores only rows under another id, and re-reading them merges as it did', () => {
    const rows = [row(20, 'B'), row(30, 'C'), row(40, 'D', { room: '410' })];
    const { entries, classIds } = mergeRowsWithIds(
      rows,
      new Map([
        [20, 10],
        [30, 10],
      ]),
    );
    const stored = storedClassIds(classIds);
    expect(stored).toEqual({ 20: 10, 30: 10 });
    expect(mergeRows(rows, publishedClassIds(rows, stored))).toEqual(entries);
    expect(storedClassIds(mergeRowsWithIds([row(1, 'A')]).classIds)).toBeUndefined();
  });

  it('whatever was published, no two classes share an id and every row is in one class', () => {
    const rows = fc.uniqueArray(
      fc.record({ id: fc.integer({ min: 1, max: 12 }), room: fc.constantFrom('1', '2', '3') }),
      { selector: (r) => r.id, maxLength: 8 },
    );
    const published = fc.array(fc.tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 12 })));
    fc.assert(
      fc.property(rows, published, (specs, pairs) => {
        const entries = specs.map((spec) => row(spec.id, `G${spec.id}`, { room: spec.room }));
        const merged = mergeRowsWithIds(entries, new Map(pairs));
        expect(new Set(merged.entries.map((e) => e.id)).size).toBe(merged.entries.length);
        expect(merged.entries.flatMap((e) => e.groups).sort()).toEqual(entries.map((e) => e.groups[0]).sort());
        for (const e of merged.entries) {
          const live = entries.find((candidate) => candidate.id === e.id);
          if (live) expect(e.groups).toContain(live.groups[0]);
        }
      }),
    );
  });
});
