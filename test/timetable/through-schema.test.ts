import { describe, expect, it } from 'vitest';
import { expand } from '../../src/timetable/expand.ts';
import { parseScheduleResponse } from '../../src/upstream/schemas.ts';
import { rawEntry, scheduleResponse } from '../upstream/fixtures.ts';

const OPTIONS = { timezone: 'Europe/Moscow', holidays: ['2025-11-04'] };

/** Canonical upstream form: numbers as numbers, DD.MM.YY dates. */
const canonical = [
  rawEntry({
    id: 1,
    day_week_schedule: 2,
    type_week_schedule: 1,
    start_day_schedule: '01.09.25',
    finish_day_schedule: '30.12.25',
  }),
  rawEntry({
    id: 2,
    subject_name: 'Физика',
    day_week_schedule: 7,
    type_week_schedule: 2,
    start_day_schedule: '01.09.25',
    finish_day_schedule: '31.12.25',
    note_schedule: '',
  }),
  rawEntry({
    id: 3,
    subject_name: 'История',
    day_week_schedule: 5,
    type_week_schedule: 0,
    start_day_schedule: '05.09.25',
    finish_day_schedule: '26.09.25',
    begin_time_schedule: '8:30',
    end_time_schedule: '10:00',
  }),
];

/** The same timetable as some deployments send it: digits as strings, ISO dates, HH:MM:SS times. */
const stringly = [
  rawEntry({
    id: '1',
    day_week_schedule: '2',
    type_week_schedule: '1',
    start_day_schedule: '2025-09-01',
    finish_day_schedule: '2025-12-30',
    semester: '1',
    year: '2025',
    subject_id: '77',
    time_interval_id: '2',
    teacher_id: '555',
    building_id: '3',
  }),
  rawEntry({
    id: '2',
    subject_name: 'Физика',
    day_week_schedule: '7',
    type_week_schedule: '2',
    start_day_schedule: '2025-09-01',
    finish_day_schedule: '2025-12-31',
    note_schedule: '',
  }),
  rawEntry({
    id: ' 3 ',
    subject_name: 'История',
    day_week_schedule: ' 5',
    type_week_schedule: '0',
    start_day_schedule: '2025-09-05',
    finish_day_schedule: '2025-09-26',
    begin_time_schedule: '08:30:00',
    end_time_schedule: '10:00:00',
  }),
];

describe('raw upstream JSON through parseScheduleResponse into expand', () => {
  it('numbers sent as strings and ISO dates expand exactly like the canonical form', () => {
    const a = parseScheduleResponse(scheduleResponse(...canonical));
    const b = parseScheduleResponse(scheduleResponse(...stringly));
    expect(a.problems).toEqual([]);
    expect(b.problems).toEqual([]);
    const expandedA = expand(a.entries, OPTIONS);
    expect(expand(b.entries, OPTIONS)).toEqual(expandedA);
    expect(expandedA.occurrences.filter((o) => o.entryId === 3).map((o) => [o.date, o.beginTime, o.endTime])).toEqual([
      ['2025-09-05', '08:30', '10:00'],
      ['2025-09-12', '08:30', '10:00'],
      ['2025-09-19', '08:30', '10:00'],
      ['2025-09-26', '08:30', '10:00'],
    ]);
    // Odd Tuesdays from 2 Sep (week 1); 4 Nov would be week 10 (even) anyway, 11 Nov week 11.
    expect(
      expandedA.occurrences
        .filter((o) => o.entryId === 1)
        .map((o) => o.date)
        .slice(0, 3),
    ).toEqual(['2025-09-02', '2025-09-16', '2025-09-30']);
    expect(
      expandedA.occurrences
        .filter((o) => o.entryId === 2)
        .map((o) => o.date)
        .slice(0, 2),
    ).toEqual(['2025-09-14', '2025-09-28']);
  });

  const invalid: [string, Record<string, unknown>, string, string][] = [
    ['impossible date 31.02.25', { start_day_schedule: '31.02.25' }, 'start_day_schedule', '31.02.25'],
    ['weekday 0', { day_week_schedule: 0 }, 'day_week_schedule', '0'],
    ['weekday 8', { day_week_schedule: '8' }, 'day_week_schedule', '8'],
    ['week type 3', { type_week_schedule: 3 }, 'type_week_schedule', '3'],
    ['end equal to begin', { end_time_schedule: '10:15' }, 'end_time_schedule', '10:15'],
    ['end before begin', { end_time_schedule: '09:00' }, 'end_time_schedule', '09:00'],
  ];

  it.each(invalid)(
    '%s: reported with entry id, field and reason; the rest is expanded',
    (_name, overrides, field, bad) => {
      const parsed = parseScheduleResponse(
        scheduleResponse(canonical[0], rawEntry({ id: 42, ...overrides }), canonical[2]),
      );
      expect(parsed.problems).toEqual([expect.objectContaining({ entryId: 42, index: 1, field })]);
      expect(parsed.problems[0]?.reason).toContain(bad);
      const { occurrences, problems } = expand(parsed.entries, OPTIONS);
      expect(problems).toEqual([]);
      expect(new Set(occurrences.map((o) => o.entryId))).toEqual(new Set([1, 3]));
    },
  );

  it('a missing id is reported under field id (no entry id to name); the rest is expanded', () => {
    const nameless = rawEntry();
    delete nameless.id;
    const parsed = parseScheduleResponse(scheduleResponse(nameless, canonical[2]));
    expect(parsed.problems).toEqual([expect.objectContaining({ entryId: null, index: 0, field: 'id' })]);
    expect(parsed.problems[0]?.reason).toMatch(/positive integer/);
    expect(expand(parsed.entries, OPTIONS).occurrences.map((o) => o.entryId)).toEqual([3, 3, 3, 3]);
  });

  it('start after finish is valid by docs/design.md and simply has no dates', () => {
    const parsed = parseScheduleResponse(
      scheduleResponse(
        rawEntry({ id: 9, start_day_schedule: '01.12.25', finish_day_schedule: '01.09.25' }),
        canonical[2],
      ),
    );
    expect(parsed.problems).toEqual([]);
    const { occurrences, problems } = expand(parsed.entries, OPTIONS);
    expect(problems).toEqual([]);
    expect(occurrences.length).toBeGreaterThan(0);
    expect(occurrences.every((o) => o.entryId === 3)).toBe(true);
  });
});
