/**
 * Small feeds whose rendering is pinned byte for byte in `golden/*.ics`. Also imported by the child process
 * that renders them under other `TZ` values, so it must stay free of vitest.
 */
import type { CalendarMeta } from '../../src/feeds/render-ics.ts';
import { expand } from '../../src/timetable/expand.ts';
import type { Occurrence } from '../../src/timetable/types.ts';
import { entry } from '../timetable/fixtures.ts';

/** One golden feed: what is rendered, and the file it must equal. */
export interface GoldenCase {
  name: string;
  occurrences: Occurrence[];
  meta: CalendarMeta;
}

const STAMP = Date.UTC(2025, 8, 1, 3, 4, 5);

const LONG_NOTE =
  'Занятие переносится в связи с проведением Всероссийской олимпиады школьников по математике; ' +
  'просьба заранее ознакомиться с материалами, размещёнными в электронной информационно-образовательной среде';

/** Berlin across the spring DST change: special characters, long Cyrillic text, an alarm, one cancellation. */
function berlin(): GoldenCase {
  const timezone = 'Europe/Berlin';
  const { occurrences } = expand(
    [
      entry({
        id: 11,
        weekday: 7,
        startDate: '2025-03-23',
        finishDate: '2025-03-30',
        subjectName: 'Теория графов; часть 1, введение',
        note: `${LONG_NOTE}\nВторая строка`,
      }),
      entry({
        id: 12,
        weekday: 1,
        startDate: '2025-03-31',
        finishDate: '2025-03-31',
        kind: 'практика',
        subjectName: 'Физика',
        room: '101, 102',
        groups: ['ИВТ-21', 'ИВТ-22'],
      }),
    ],
    { timezone },
  );
  const cancelled = occurrences.map((o) =>
    o.entryId === 12 ? { ...o, status: 'CANCELLED' as const, sequence: 2 } : o,
  );
  return {
    name: 'berlin-dst-alarm',
    occurrences: cancelled,
    meta: { name: 'ИВТ-21; весна, 2025', timezone, refreshIntervalMs: 3_600_000, stamp: STAMP, alarmMinutes: 15 },
  };
}

/** Moscow, the default zone: no kind, no room, odd weeks only, a stale marker, no alarm. */
function moscow(): GoldenCase {
  const timezone = 'Europe/Moscow';
  const { occurrences } = expand(
    [
      entry({
        id: 21,
        kind: '',
        room: '',
        building: { id: null, name: '' },
        weekType: 1,
        weekday: 3,
        startDate: '2025-09-01',
        finishDate: '2025-09-30',
        teacher: { id: null, lastName: '', firstName: '', middleName: '' },
        groups: [],
      }),
    ],
    { timezone },
  );
  return {
    name: 'moscow-plain',
    occurrences,
    meta: {
      name: 'Петров П. П.',
      timezone,
      refreshIntervalMs: 900_000,
      stamp: STAMP,
      extra: { 'X-TIMETABLE-STALE': 'true' },
    },
  };
}

/** New York across the autumn change, with characters outside the BMP in a folded line. */
function newYork(): GoldenCase {
  const timezone = 'America/New_York';
  const { occurrences } = expand(
    [
      entry({
        id: 31,
        weekday: 7,
        startDate: '2025-10-26',
        finishDate: '2025-11-02',
        beginTime: '09:00',
        endTime: '10:30',
        subjectName: 'Семинар 🎓 по теории вероятностей и математической статистике 📊📈',
        kind: 'семинар',
      }),
    ],
    { timezone },
  );
  return {
    name: 'new-york-emoji',
    occurrences,
    meta: { name: 'NY', timezone, refreshIntervalMs: 86_400_000, stamp: STAMP, alarmMinutes: 0 },
  };
}

/** All golden cases, in a fixed order. */
export function goldenCases(): GoldenCase[] {
  return [berlin(), moscow(), newYork()];
}
