import { describe, expect, it } from 'vitest';
import { calendarName, derivedName, isPlaceholderName, placeholderName } from '../../src/timetable/calendar-name.ts';
import { entry } from './fixtures.ts';

const GROUP = { kind: 'group', id: 4242 } as const;

describe('calendarName of a group', () => {
  it('is the group listed by most entries, lecture streams and merged classes notwithstanding', () => {
    const entries = [
      entry({ id: 1, groups: ['09-351'] }),
      entry({ id: 2, groups: ['09-351', '09-352', '09-353'] }),
      entry({ id: 3, groups: ['09-352', '09-351'] }),
    ];
    expect(calendarName(GROUP, entries)).toBe('09-351');
  });

  it('falls back to the name known before, then to the placeholder, when the entries do not tell', () => {
    const stream = [entry({ id: 1, groups: ['09-351', '09-352'] })];
    expect(derivedName(GROUP, stream)).toBeUndefined();
    expect(calendarName(GROUP, stream, '09-352')).toBe('09-352');
    expect(calendarName(GROUP, [], '09-351')).toBe('09-351');
    expect(calendarName(GROUP, [])).toBe('Группа 4242');
  });

  it('counts a group listed twice in one entry once', () => {
    const entries = [entry({ id: 1, groups: ['A', 'A'] }), entry({ id: 2, groups: ['B'] })];
    expect(derivedName(GROUP, entries)).toBeUndefined();
  });
});

describe('calendarName of a teacher and of the others', () => {
  it('names a teacher by an entry they teach, else as known, else the placeholder', () => {
    const subject = { kind: 'employee', id: 555 } as const;
    expect(calendarName(subject, [entry()])).toBe('Иванов Иван Иванович');
    expect(calendarName(subject, [entry({ teacher: { ...entry().teacher, id: 1 } })], 'Петров')).toBe('Петров');
    expect(calendarName(subject, [])).toBe('Преподаватель 555');
  });

  it('keeps personal and file names as they were', () => {
    expect(calendarName({ kind: 'personal' }, [entry()])).toBe('Моё расписание (ИВТ-21)');
    expect(calendarName({ kind: 'file', name: 'x.json' }, [entry({ groups: ['A', 'B'] })])).toBe('x.json');
  });
});

describe('placeholder names', () => {
  it('knows the placeholder and the English one of older connections, nothing else', () => {
    expect(placeholderName(GROUP)).toBe('Группа 4242');
    expect(isPlaceholderName(GROUP, 'Группа 4242')).toBe(true);
    expect(isPlaceholderName(GROUP, 'Group 4242')).toBe(true);
    expect(isPlaceholderName(GROUP, 'Группа 424')).toBe(false);
    expect(isPlaceholderName({ kind: 'employee', id: 7 }, 'Teacher 7')).toBe(true);
    expect(isPlaceholderName({ kind: 'employee', id: 7 }, 'Группа 7')).toBe(false);
  });
});
