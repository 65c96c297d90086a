/** The timetable page's pure parts: weeks and their parity, class rows, link building, reminder words. */
import { describe, expect, it } from 'vitest';
import { expansionSettings } from '../../src/feeds/build-feed.ts';
import { dayNumber } from '../../src/timetable/dates.ts';
import { weekParity } from '../../src/timetable/parity.ts';
import type { PublishedState } from '../../src/timetable/publication.ts';
import { localDate } from '../../src/timetable/zoned-time.ts';
import { feedLinks, optionsQuery } from '../../src/web/feed-links.ts';
import { alarmText, durationText } from '../../src/web/options-form.ts';
import { type ClassRow, eventPreview, timetableWeeks, weeksOf } from '../../src/web/timetable-view.ts';
import { parityLabel, weekRange, weekSections } from '../../src/web/week-table.ts';
import { entry } from '../timetable/fixtures.ts';

const settings = {
  timezone: 'Europe/Moscow',
  weekParityAnchors: [],
  holidays: [],
  refreshIntervalMs: 3_600_000,
  cancelledTitlePrefix: 'ОТМЕНЕНО: ',
};

function row(date: string, beginTime: string, subject = 'Физика'): ClassRow {
  return {
    uid: `${subject}-${date}-${beginTime}`,
    date,
    beginTime,
    endTime: '23:59',
    title: subject,
    subject,
    kind: 'лекция',
    location: '',
    teacher: '',
    groups: [],
    note: '',
    cancelled: false,
  };
}

function published(termStarts: string[] = []): PublishedState {
  return {
    stamp: 0,
    snapshotHash: 'x',
    settingsHash: 'y',
    occurrences: {},
    tombstones: [],
    expansion: expansionSettings(settings, termStarts),
  };
}

describe('weeksOf', () => {
  it('places rows in this week from today on and the whole next week, by day and start time', () => {
    const weeks = weeksOf(
      [
        row('2025-09-08', '09:00', 'Вчерашнее'),
        row('2025-09-09', '18:00', 'Вчерашнее'),
        row('2025-09-10', '12:00', 'Б'),
        row('2025-09-10', '09:00', 'А'),
        row('2025-09-12', '10:00', 'В'),
        row('2025-09-15', '10:00'),
        row('2025-09-21', '10:00'),
        row('2025-09-22', '10:00'),
      ],
      '2025-09-10',
      { termStarts: [] },
    );
    expect(weeks.map((week) => [week.monday, week.sunday, week.current, week.today])).toEqual([
      ['2025-09-08', '2025-09-14', true, '2025-09-10'],
      ['2025-09-15', '2025-09-21', false, undefined],
    ]);
    // Monday and Tuesday are past: the week starts at today, Wednesday.
    expect(weeks[0]?.days.map((day) => [day.date, day.weekday, day.classes.map((c) => c.subject)])).toEqual([
      ['2025-09-10', 3, ['А', 'Б']],
      ['2025-09-12', 5, ['В']],
    ]);
    expect(weeks[1]?.days.map((day) => day.date)).toEqual(['2025-09-15', '2025-09-21']);
  });

  it('leaves this week empty when its classes are past, and says so; marks today', () => {
    const rows = [row('2025-09-08', '09:00', 'Прошедшее'), row('2025-09-12', '10:00', 'Пятничное')];
    const sunday = weeksOf(rows, '2025-09-14', { termStarts: [] });
    expect(sunday[0]?.days).toEqual([]);
    const html = weekSections(sunday, 'ru', 'teacher');
    expect(html).toContain('На этой неделе занятий больше нет.');
    expect(html).not.toContain('Прошедшее');
    expect(weekSections(sunday, 'en', 'teacher')).toContain('No more classes this week.');

    const friday = weekSections(weeksOf(rows, '2025-09-12', { termStarts: [] }), 'ru', 'teacher');
    expect(friday).toMatch(
      /<div class="day today" aria-current="date"><h4>Пятница, 12 сентября <span[^>]*>Сегодня<\/span>/,
    );
    expect(friday.match(/aria-current/g)).toHaveLength(1);
    // A day off today: said in words before the next day with classes.
    const thursday = weekSections(weeksOf(rows, '2025-09-11', { termStarts: [] }), 'ru', 'teacher');
    expect(thursday).toMatch(/aria-current="date">Сегодня занятий нет\.<\/p>\s*<div class="day"><h4>Пятница/);
    // On Monday nothing is past yet: an empty week has no classes at all.
    const monday = weekSections(weeksOf([], '2025-09-08', { termStarts: [] }), 'ru', 'teacher');
    expect(monday).toContain('Занятий нет.');
    expect(monday).not.toContain('больше нет');
  });

  it('labels weeks odd and even from the term starts in force, restarting at each', () => {
    // Default rule: 1 September 2025 is a Monday, so 1–7 September is week 1 (odd).
    const autumn = weeksOf([], '2025-09-03', { termStarts: [] });
    expect(autumn.map((week) => [week.number, week.odd])).toEqual([
      [1, true],
      [2, false],
    ]);
    // A spring term start on Saturday 7 February 2026: week 1 is the next week, the week before is week 0 (even).
    const spring = weeksOf([], '2026-02-04', { termStarts: ['2025-09-01', '2026-02-07'] });
    expect(spring.map((week) => [week.number, week.odd])).toEqual([
      [0, false],
      [1, true],
    ]);
    expect(parityLabel({ odd: true }, 'ru')).toBe('нечётная неделя');
    expect(parityLabel({ odd: false }, 'ru')).toBe('чётная неделя');
    expect(parityLabel({ odd: false }, 'en')).toBe('even week');
  });

  it('labels the week a term starts in mid-week by the new term, as the feed counts its days', () => {
    // Autumn starts on Tuesday 1 September 2026: its week is week 1 (odd) although its Monday, 31 August,
    // still counts from the spring term.
    const termStarts = ['2026-02-09', '2026-09-01'];
    const weeks = weeksOf([], '2026-09-02', { termStarts });
    expect(weeks.map((week) => [week.number, week.odd])).toEqual([
      [1, true],
      [2, false],
    ]);
    const rule = weekParity(termStarts);
    expect(weeks[0]?.odd).toBe(rule.isOdd(dayNumber('2026-09-01')));
    expect(weeks[1]?.odd).toBe(rule.isOdd(dayNumber('2026-09-07')));
  });

  it('takes today in the service zone, not UTC', () => {
    // 21:30 UTC on Sunday is already Monday in Moscow.
    expect(localDate(Date.UTC(2025, 8, 14, 21, 30), 'Europe/Moscow')).toBe('2025-09-15');
    expect(localDate(Date.UTC(2025, 8, 14, 21, 30), 'UTC')).toBe('2025-09-14');
  });

  it('names the week range in words', () => {
    expect(weekRange('2025-09-08', '2025-09-14', 'ru')).toBe('8–14 сентября');
    expect(weekRange('2025-09-29', '2025-10-05', 'en')).toMatch(/29 September.*5 October/);
  });
});

describe('timetableWeeks', () => {
  const entries = [
    entry({ id: 1, subjectName: 'Алгебра', kind: 'практика', note: '1 подгруппа', weekType: 1 }),
    entry({ id: 2, subjectName: 'История', kind: 'лекция', weekday: 3, beginTime: '14:00', endTime: '15:30' }),
  ];
  const now = Date.UTC(2025, 8, 10, 9, 0);

  it('shows the feed occurrences with their class fields, filtered by the options', () => {
    const weeks = timetableWeeks({
      snapshot: { entries },
      published: published(),
      settings,
      options: {},
      moves: [],
      now,
    });
    // 8 September is in an even week: the odd-week Algebra is only on 15 September.
    expect(weeks[0]?.days.flatMap((day) => day.classes.map((c) => [c.date, c.subject, c.teacher, c.location]))).toEqual(
      [['2025-09-10', 'История', 'Иванов Иван Иванович', 'Главный корпус, 305']],
    );
    expect(weeks[1]?.days.flatMap((day) => day.classes.map((c) => [c.date, c.subject]))).toEqual([
      ['2025-09-15', 'Алгебра'],
      ['2025-09-17', 'История'],
    ]);
    const lecturesHidden = timetableWeeks({
      snapshot: { entries },
      published: published(),
      settings,
      options: { excludeKinds: ['лекция'] },
      moves: [],
      now,
    });
    expect(lecturesHidden.flatMap((week) => week.days.flatMap((day) => day.classes.map((c) => c.subject)))).toEqual([
      'Алгебра',
    ]);
  });

  it('marks a class a recent change moved, with where it was', () => {
    const uid = '2-20250910@timetable-sync';
    const brief = { uid, date: '2025-09-09', begin: '10:10', end: '11:40', summary: 'История', location: '' };
    const weeks = timetableWeeks({
      snapshot: { entries },
      published: published(),
      settings,
      options: {},
      moves: [{ before: brief, after: { ...brief, date: '2025-09-10', begin: '14:00' } }],
      now,
    });
    expect(weeks[0]?.days[0]?.classes[0]?.movedFrom).toEqual({ date: '2025-09-09', beginTime: '10:10' });
  });

  it('previews the first class the options keep, titled by the template', () => {
    expect(eventPreview({ entries }, {}, { titleTemplate: '{kind}: {subject}', alarmMinutes: 15 })).toMatchObject({
      title: 'практика: Алгебра',
      location: 'Главный корпус, 305',
      alarmMinutes: 15,
    });
    expect(eventPreview({ entries }, {}, { subgroup: 2 })?.title).toBe('История (лекция)');
    expect(eventPreview({ entries }, {}, { excludeKinds: ['лекция', 'практика'] })).toBeUndefined();
  });
});

describe('feed links', () => {
  it('builds the feed URL, webcal and Google links with the options', () => {
    const links = feedLinks('https://tt.example/', '/feeds/groups/42.ics', {
      subgroup: 2,
      excludeKinds: ['лекция', 'практика'],
      alarmMinutes: 15,
    });
    expect(links.feedUrl).toBe(
      'https://tt.example/feeds/groups/42.ics?subgroup=2&exclude=%D0%BB%D0%B5%D0%BA%D1%86%D0%B8%D1%8F%2C%D0%BF%D1%80%D0%B0%D0%BA%D1%82%D0%B8%D0%BA%D0%B0&alarm=15',
    );
    expect(links.webcal).toBe(links.feedUrl.replace('https://', 'webcal://'));
    expect(links.google).toBe(`https://calendar.google.com/calendar/r?cid=${encodeURIComponent(links.webcal)}`);
    expect(new URL(links.google).searchParams.get('cid')).toBe(links.webcal);
  });

  it('leaves out options that are the defaults', () => {
    expect(optionsQuery({})).toBe('');
    expect(optionsQuery({ titleTemplate: '{subject} ({kind})' })).toBe('');
    expect(optionsQuery({ titleTemplate: '{subject} {room}' })).toBe('?title=%7Bsubject%7D+%7Broom%7D');
    expect(feedLinks('http://127.0.0.1:8080', '/feeds/employees/7.ics', {}).webcal).toBe(
      'webcal://127.0.0.1:8080/feeds/employees/7.ics',
    );
  });
});

describe('reminder words', () => {
  it('says durations in natural Russian (the accusative «за» asks for) and English', () => {
    expect([1, 2, 5, 15, 21, 22, 60, 120, 300, 1440].map((m) => durationText(m, 'ru'))).toEqual([
      '1 минуту',
      '2 минуты',
      '5 минут',
      '15 минут',
      '21 минуту',
      '22 минуты',
      '1 час',
      '2 часа',
      '5 часов',
      '1 день',
    ]);
    expect(alarmText(30, 'ru')).toBe('за 30 минут до начала');
    expect(alarmText(60, 'en')).toBe('1 hour before');
    expect(alarmText(null, 'ru')).toBe('Без напоминания');
  });
});
