import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normaliseEntries } from '../../src/store/snapshot-store.ts';
import {
  ENTRY_DIGEST_BYTES,
  entryDigest,
  entryDigestSet,
  groupViewDigests,
  hasDigest,
  matchesView,
  SET_DIGEST_BYTES,
  subgroupView,
  timetableDigest,
} from '../../src/timetable/entry-digest.ts';
import { expand } from '../../src/timetable/expand.ts';
import type { TimetableEntry } from '../../src/timetable/types.ts';
import { entry } from './fixtures.ts';

/** One different value for every field of an entry: each must change the digest. */
const CHANGED: { [K in keyof TimetableEntry]-?: Partial<TimetableEntry>[] } = {
  id: [{ id: 102 }],
  semester: [{ semester: 2 }, { semester: null }],
  year: [{ year: 2026 }],
  subjectId: [{ subjectId: 78 }, { subjectId: null }],
  subjectName: [{ subjectName: 'Алгебра' }],
  kind: [{ kind: 'практика' }, { kind: 'Лекция' }],
  startDate: [{ startDate: '2025-09-02' }],
  finishDate: [{ finishDate: '2025-12-27' }],
  weekday: [{ weekday: 2 }],
  weekType: [{ weekType: 1 }],
  beginTime: [{ beginTime: '10:15' }],
  endTime: [{ endTime: '11:45' }],
  timeIntervalId: [{ timeIntervalId: 3 }],
  note: [{ note: '1 подгруппа' }],
  teacher: [
    { teacher: { id: 556, lastName: 'Иванов', firstName: 'Иван', middleName: 'Иванович' } },
    { teacher: { id: 555, lastName: 'Иванова', firstName: 'Иван', middleName: 'Иванович' } },
    { teacher: { id: 555, lastName: 'Иванов', firstName: 'Ивaн', middleName: 'Иванович' } },
    { teacher: { id: 555, lastName: 'Иванов', firstName: 'Иван', middleName: '' } },
  ],
  room: [{ room: '306' }],
  building: [{ building: { id: 4, name: 'Главный корпус' } }, { building: { id: 3, name: 'Корпус 2' } }],
  groups: [{ groups: ['ИВТ-22'] }, { groups: ['ИВТ-21', 'ИВТ-22'] }],
};

describe('entryDigest', () => {
  it('changes with every field a feed shows, and has a fixed length', () => {
    const base = entryDigest(entry());
    expect(base.length).toBe(ENTRY_DIGEST_BYTES);
    for (const variants of Object.values(CHANGED))
      for (const change of variants)
        expect(entryDigest(entry(change)).equals(base), JSON.stringify(change)).toBe(false);
  });

  it('lists every field of an entry (a new field must be digested too)', () => {
    expect(Object.keys(CHANGED).sort()).toEqual(Object.keys(entry()).sort());
  });

  it('keeps the bytes of digests already stored (a reordered field list would unpark and re-spread everything)', () => {
    expect(entryDigest(entry()).toString('hex')).toBe('9af3a9264e6f9625');
    expect(entryDigest(entry({ groups: ['ПИ-21', 'ПИ-22'], note: 'подгр. 1' })).toString('hex')).toBe(
      '3e91872706cba23b',
    );
  });

  it('does not depend on the key order of the stored JSON', () => {
    const original = entry();
    const reordered = Object.fromEntries(Object.entries(original).reverse()) as unknown as TimetableEntry;
    expect(entryDigest(reordered).equals(entryDigest(original))).toBe(true);
  });
});

describe('sets of entries', () => {
  const entries = [entry({ id: 1 }), entry({ id: 2, room: '101' }), entry({ id: 3, weekday: 3 })];

  it('digests a timetable whatever its order, and tells a changed room apart', () => {
    fc.assert(
      fc.property(fc.shuffledSubarray(entries, { minLength: 3, maxLength: 3 }), (shuffled) => {
        expect(timetableDigest(shuffled).equals(timetableDigest(entries))).toBe(true);
      }),
    );
    const moved = [entries[0] as TimetableEntry, entry({ id: 2, room: '102' }), entries[2] as TimetableEntry];
    expect(timetableDigest(moved).equals(timetableDigest(entries))).toBe(false);
    expect(timetableDigest(entries).length).toBe(SET_DIGEST_BYTES);
  });

  it('finds exactly the entries of a packed set', () => {
    const set = entryDigestSet([...entries, entries[0] as TimetableEntry]);
    expect(set.length).toBe(3 * ENTRY_DIGEST_BYTES);
    for (const one of entries) expect(hasDigest(set, entryDigest(one))).toBe(true);
    expect(hasDigest(set, entryDigest(entry({ id: 2, room: '102' })))).toBe(false);
    expect(hasDigest(Buffer.alloc(0), entryDigest(entries[0] as TimetableEntry))).toBe(false);
  });

  it('finds every member of a random set and nothing else', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: 10_000 }), { minLength: 1, maxLength: 60 }), (ids) => {
        const [absent, ...present] = ids.map((id) => entry({ id }));
        const set = entryDigestSet(present);
        for (const one of present) expect(hasDigest(set, entryDigest(one))).toBe(true);
        expect(hasDigest(set, entryDigest(absent as TimetableEntry))).toBe(false);
      }),
    );
  });
});

describe('subgroup views', () => {
  const common = entry({ id: 1, kind: 'лекция' });
  const first = entry({ id: 2, kind: 'практика', note: '1 подгруппа' });
  const second = entry({ id: 3, kind: 'практика', note: 'подгр. 2' });
  const group = [common, first, second];

  it('picks a subgroup as the feed option does: its classes and those of no subgroup', () => {
    expect(subgroupView(group, 1)).toEqual([common, first]);
    expect(subgroupView(group, 2)).toEqual([common, second]);
    // The same occurrences the expander keeps for `?subgroup=2`.
    const options = { timezone: 'Europe/Moscow' };
    const viaFeed = expand(group, { ...options, subscriber: { subgroup: 2 } }).occurrences;
    const viaView = expand(subgroupView(group, 2), options).occurrences;
    expect(viaView.map((occurrence) => occurrence.uid)).toEqual(viaFeed.map((occurrence) => occurrence.uid));
  });

  it('recognises a personal timetable equal to the whole group or one subgroup, normalised as stored', () => {
    const views = groupViewDigests(normaliseEntries(group).entries);
    expect(views.length).toBe(3 * SET_DIGEST_BYTES);
    for (const personal of [
      [second, common],
      [first, common],
      [second, first, common],
    ])
      expect(matchesView(views, timetableDigest(normaliseEntries(personal).entries))).toBe(true);
    const elective = entry({ id: 9, subjectName: 'Факультатив' });
    expect(matchesView(views, timetableDigest([common, second, elective]))).toBe(false);
    expect(matchesView(views, timetableDigest([common]))).toBe(false);
    expect(
      matchesView(views, timetableDigest([common, entry({ id: 3, kind: 'практика', note: 'подгр. 2', room: '1' })])),
    ).toBe(false);
  });
});
