import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { packJson, unpackJson } from '../../src/lib/packed-json.ts';
import { CHANGE_RECORD_BYTES, packChange, unlistedCounts } from '../../src/store/change-bounds.ts';
import type { ChangeRecord, OccurrenceBrief } from '../../src/timetable/publication.ts';

const SUBJECTS = ['Численные методы', 'Алгоритмы и структуры данных', 'Топология', 'Функциональный анализ'];

/** A brief unlike its neighbours, as a real timetable's are (uids, dates, rooms), and as hard to compress. */
function brief(index: number, salt: string): OccurrenceBrief {
  const noise = createHash('sha256').update(`${salt}${index}`).digest('base64url');
  const day = String(1 + (index % 28)).padStart(2, '0');
  return {
    uid: `${200_000 + index * 37}-202609${day}-${salt}@timetable-sync`,
    date: `2026-09-${day}`,
    begin: `${8 + (index % 6)}:${index % 2 === 0 ? '30' : '10'}`,
    end: `${10 + (index % 6)}:00`,
    summary: `${SUBJECTS[index % SUBJECTS.length]} (${noise.slice(0, 8)})`,
    location: `Учебное здание № ${index % 30}, ${noise.slice(8, 14)}`,
  };
}

function briefs(count: number, salt: string): OccurrenceBrief[] {
  return Array.from({ length: count }, (_, index) => brief(index, salt));
}

function pairs(count: number, salt: string): { before: OccurrenceBrief; after: OccurrenceBrief }[] {
  return Array.from({ length: count }, (_, index) => ({ before: brief(index, salt), after: brief(index + 500, salt) }));
}

describe('change records bounded in bytes', () => {
  it('keeps a record that fits whole', () => {
    const change: ChangeRecord = {
      at: 1,
      counts: { added: 3, removed: 1, moved: 2, changed: 0 },
      added: briefs(3, 'a'),
      removed: briefs(1, 'r'),
      moved: pairs(2, 'm'),
      changed: [],
    };
    const packed = packChange(change);
    expect(packed).toEqual(packJson(change));
    expect(unpackJson(packed)).toEqual(change);
    expect(unlistedCounts(change)).toEqual({ added: 0, removed: 0, moved: 0, changed: 0 });
  });

  it('shortens the lists of a large record to fit, sharing the room, and keeps the exact counts', () => {
    const change: ChangeRecord = {
      at: 2,
      counts: { added: 180, removed: 50, moved: 50, changed: 4 },
      added: briefs(50, 'a'),
      removed: briefs(50, 'r'),
      moved: pairs(50, 'm'),
      changed: pairs(4, 'c'),
    };
    expect(packJson(change).length).toBeGreaterThan(2 * CHANGE_RECORD_BYTES);
    const packed = packChange(change);
    expect(packed.length).toBeLessThanOrEqual(CHANGE_RECORD_BYTES);
    const stored = unpackJson<ChangeRecord>(packed);
    expect(stored.at).toBe(2);
    expect(stored.counts).toEqual(change.counts);
    // Each list keeps its first items; the short list whole, the others alike.
    expect(stored.changed).toEqual(change.changed);
    expect(stored.added).toEqual(change.added.slice(0, stored.added.length));
    expect(stored.removed).toEqual(change.removed.slice(0, stored.removed.length));
    expect(stored.moved).toEqual(change.moved.slice(0, stored.moved.length));
    const lengths = [stored.added.length, stored.removed.length, stored.moved.length];
    expect(Math.max(...lengths) - Math.min(...lengths)).toBeLessThanOrEqual(1);
    expect(Math.min(...lengths)).toBeGreaterThan(0);
    // The most that fits: one item more does not.
    const more = { ...stored, moved: change.moved.slice(0, stored.moved.length + 1) };
    const withMore = { ...more, added: change.added.slice(0, stored.added.length + 1) };
    expect(packJson(withMore).length).toBeGreaterThan(CHANGE_RECORD_BYTES);
    expect(unlistedCounts(stored)).toEqual({
      added: 180 - stored.added.length,
      removed: 50 - stored.removed.length,
      moved: 50 - stored.moved.length,
      changed: 0,
    });
  });

  it('lists nothing when not even one item fits, and still says how many changed', () => {
    const change: ChangeRecord = {
      at: 3,
      counts: { added: 2, removed: 0, moved: 0, changed: 0 },
      added: briefs(2, 'a'),
      removed: [],
      moved: [],
      changed: [],
    };
    const stored = unpackJson<ChangeRecord>(packChange(change, packJson({ ...change, added: [] }).length));
    expect(stored).toEqual({ ...change, added: [] });
    expect(unlistedCounts(stored).added).toBe(2);
  });
});
