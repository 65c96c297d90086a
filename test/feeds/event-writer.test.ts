/**
 * The events of a feed are written without ical-generator where it can be done (no alarm, a named zone):
 * the bytes must be exactly those ical-generator writes, which every stored feed and its ETag were made with.
 * Compared on generated occurrences: zones with DST gaps and overlaps and historical offsets in seconds, times
 * in the gaps, classes ending before they start, texts to escape and fold (Cyrillic, emoji, long ones).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CalendarMeta, renderEventData, renderIcs, toEventData } from '../../src/feeds/render-ics.ts';
import type { Occurrence } from '../../src/timetable/types.ts';

const ZONES = ['Europe/Moscow', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata'];

const clock = fc
  .tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }))
  .map(([h, m]) => `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`);

// From 1850 on: offsets of local mean time, in seconds, before the zones' standard times.
const date = fc
  .tuple(fc.integer({ min: 1850, max: 2060 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 28 }))
  .map(([y, m, d]) => `${y}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`);

const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom('', 'Лекция; ауд. 305, корпус 2\\n', 'Мат. анализ 🧮 (лаб.)', 'a'.repeat(73), 'я'.repeat(37)),
  fc
    .array(fc.constantFrom('Ж', 'x', ',', ';', '\\', '\n', '\r\n', '😀', ' '), { maxLength: 120 })
    .map((parts) => parts.join('')),
);

// What rendering does not read (instants, digest, entry) is left at fixed values.
const occurrence = fc.record({
  entryId: fc.constant(1),
  startUtc: fc.constant(0),
  endUtc: fc.constant(0),
  hash: fc.constant('h'),
  uid: fc.string({ minLength: 1, maxLength: 90 }),
  sequence: fc.integer({ min: 0, max: 1000 }),
  date,
  beginTime: clock,
  endTime: clock,
  timezone: fc.constantFrom(...ZONES),
  summary: text,
  location: text,
  description: text,
  categories: fc.array(
    text.filter((name) => name !== ''),
    { maxLength: 3 },
  ),
  status: fc.constantFrom('CONFIRMED' as const, 'CANCELLED' as const),
});

/** DST gaps and overlaps, where wall-clock times move or repeat. */
const edges = fc.record({
  date: fc.constantFrom('2025-03-30', '2025-10-26', '2025-03-09', '2025-11-02', '2025-04-06', '1919-07-01'),
  beginTime: fc.constantFrom('01:30', '02:00', '02:30', '02:59', '03:00', '03:15'),
  endTime: fc.constantFrom('02:15', '02:45', '03:30', '01:00'),
});

function viaIcalGenerator(occurrences: readonly Occurrence[], meta: CalendarMeta): string {
  return renderEventData(toEventData(occurrences, meta), meta);
}

describe('renderIcs writes events as ical-generator does', () => {
  it('byte for byte, on generated occurrences', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            occurrence,
            fc.tuple(occurrence, edges).map(([o, e]) => ({ ...o, ...e })),
          ),
          {
            maxLength: 12,
          },
        ),
        fc.constantFrom(...ZONES),
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        (list, timezone, stamp) => {
          const occurrences: Occurrence[] = list;
          const meta: CalendarMeta = { name: 'Группа', timezone, refreshIntervalMs: 1_800_000, stamp };
          expect(renderIcs(occurrences, meta)).toBe(viaIcalGenerator(occurrences, meta));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('with a stale marker, and with alarms (written by ical-generator)', () => {
    const base: Occurrence = {
      entryId: 101,
      startUtc: 0,
      endUtc: 0,
      hash: 'h',
      uid: '101-2025-10-01',
      sequence: 2,
      date: '2025-10-01',
      beginTime: '10:10',
      endTime: '11:40',
      timezone: 'Europe/Moscow',
      summary: 'Лекция',
      location: '305',
      description: 'Иванов И. И.',
      categories: ['лекция'],
      status: 'CONFIRMED',
    };
    const meta: CalendarMeta = {
      name: 'x',
      timezone: 'Europe/Moscow',
      refreshIntervalMs: 3_600_000,
      stamp: 1_700_000_000_000,
      extra: { 'X-TIMETABLE-STALE': '2025-10-01T00:00:00.000Z' },
    };
    for (const [occurrences, feed] of [
      [[base], meta],
      [[base], { ...meta, alarmMinutes: 15 }],
    ] as const) {
      const ics = renderIcs(occurrences, feed);
      expect(ics).toBe(viaIcalGenerator(occurrences, feed));
      expect(ics).toContain('BEGIN:VEVENT');
    }
    // An empty category is refused, as it always was.
    expect(() => renderIcs([{ ...base, categories: [''] }], meta)).toThrow();
  });
});
