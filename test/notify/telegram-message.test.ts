import { describe, expect, it } from 'vitest';
import { escapeAttribute, escapeHtml } from '../../src/notify/telegram/html.ts';
import { changeLine, formatChangeMessage, MAX_MESSAGE_LENGTH } from '../../src/notify/telegram/message.ts';
import { dayLabel, withSubgroup } from '../../src/notify/telegram/words.ts';
import type { ChangeSet, NotifyItem, NotifySide } from '../../src/timetable/notify-change.ts';
import { parseHtml } from '../../testkit/fake-telegram/index.ts';

const PAGE = 'https://timetable.example.edu/group/4242?subgroup=1&exclude=лекция';

function side(overrides: Partial<NotifySide> = {}): NotifySide {
  return {
    date: '2024-10-02',
    begin: '10:10',
    end: '11:40',
    startUtc: Date.UTC(2024, 9, 2, 7, 10),
    summary: 'Физика (практика)',
    location: 'Главный корпус, 1008',
    teacher: 'Иванов Иван Иванович',
    ...overrides,
  };
}

function item(kind: NotifyItem['kind'], before?: NotifySide, after?: NotifySide, uid = 'u1'): NotifyItem {
  const startsAt = Math.min(before?.startUtc ?? Number.POSITIVE_INFINITY, after?.startUtc ?? Number.POSITIVE_INFINITY);
  return {
    kind,
    uid,
    ...(before ? { before } : {}),
    ...(after ? { after } : {}),
    startsAt,
    lessonKind: 'практика',
    note: '',
  };
}

function set(items: NotifyItem[], omitted = 0, name = 'ИВТ-21'): ChangeSet {
  return { source: 'group:4242', name, stamp: 1, items, omitted };
}

/** The text Telegram would show; fails the test when Telegram would refuse the HTML. */
function shown(html: string): string {
  const parsed = parseHtml(html);
  if (!parsed.ok) throw new Error(parsed.description);
  return parsed.text;
}

describe('Telegram HTML escaping', () => {
  it('escapes what HTML mode parses and leaves Markdown characters alone', () => {
    expect(escapeHtml('a < b & c > d "q" _x_ *y* [z]')).toBe('a &lt; b &amp; c &gt; d "q" _x_ *y* [z]');
    expect(escapeAttribute('https://x.test/?a=1&b="2"')).toBe('https://x.test/?a=1&amp;b=&quot;2&quot;');
  });
});

describe('formatChangeMessage', () => {
  it('says a room change as "Ср 2 окт." and "10:10 Физика (практика): ауд. 1008 → 2207", then the link', () => {
    const html = formatChangeMessage(set([item('moved', side(), side({ location: 'Главный корпус, 2207' }))]), {
      pageUrl: PAGE,
    });
    expect(shown(html)).toBe(
      'ИВТ-21: изменения в расписании\n\nСр 2 окт.\n10:10 Физика (практика): ауд. 1008 → 2207\n\nРасписание',
    );
    expect(html).toContain(`<a href="${escapeAttribute(PAGE)}">Расписание</a>`);
    expect(html.startsWith('<b>ИВТ-21: изменения в расписании</b>')).toBe(true);
  });

  it('words each kind of change', () => {
    const line = (i: NotifyItem) => changeLine(i);
    expect(line(item('moved', side(), side({ date: '2024-10-04', begin: '12:00', startUtc: 2 })))).toBe(
      '10:10 Физика (практика): перенесено на Пт 4 окт., 12:00',
    );
    expect(line(item('moved', side(), side({ begin: '12:00', location: 'Корпус Б, 301' })))).toBe(
      '10:10 Физика (практика): время 10:10 → 12:00, Главный корпус, ауд. 1008 → Корпус Б, ауд. 301',
    );
    expect(line(item('moved', side(), side({ location: 'Главный корпус, Зал 2' })))).toBe(
      '10:10 Физика (практика): ауд. 1008 → Зал 2',
    );
    expect(line(item('cancelled', side()))).toBe('10:10 Физика (практика): отменено');
    expect(line(item('added', undefined, side({ location: 'Главный корпус, 301' })))).toBe(
      '10:10 Физика (практика): новое занятие, Главный корпус, ауд. 301',
    );
    expect(line(item('teacher', side(), side({ teacher: 'Петров Пётр Петрович' })))).toBe(
      '10:10 Физика (практика): преподаватель Иванов Иван Иванович → Петров Пётр Петрович',
    );
  });

  it('groups by day, soonest first, and orders classes by time within a day', () => {
    const items = [
      item('cancelled', side({ date: '2024-10-03', begin: '08:30', startUtc: 3 }), undefined, 'c'),
      item('cancelled', side({ begin: '12:00', startUtc: 2, summary: 'Химия' }), undefined, 'b'),
      item('added', undefined, side({ startUtc: 1, summary: 'Алгебра', location: '' }), 'a'),
    ];
    expect(shown(formatChangeMessage(set(items), { pageUrl: PAGE }))).toBe(
      [
        'ИВТ-21: изменения в расписании',
        '',
        'Ср 2 окт.',
        '10:10 Алгебра: новое занятие',
        '12:00 Химия: отменено',
        '',
        'Чт 3 окт.',
        '08:30 Физика (практика): отменено',
        '',
        'Расписание',
      ].join('\n'),
    );
  });

  it('escapes names with <, &, _ and * so that Telegram parses the message', () => {
    const hostile = 'Физика <b>&amp; _курсив_ *жирный* [ссылка](x) </a>';
    const html = formatChangeMessage(
      set([item('cancelled', side({ summary: hostile, location: '<корпус>, 1&2' }))], 0, 'Группа <script> & Co_*'),
      { pageUrl: 'https://x.test/?a="1"&b=<2>' },
    );
    const text = shown(html);
    expect(text).toContain(`10:10 ${hostile}: отменено`);
    expect(text.startsWith('Группа <script> & Co_*: изменения в расписании')).toBe(true);
    expect(html).toContain('<a href="https://x.test/?a=&quot;1&quot;&amp;b=&lt;2&gt;">');
  });

  it('cuts a long list within 4096 characters with "и ещё N изменений" and the link', () => {
    const items = Array.from({ length: 200 }, (_, i) =>
      item(
        'moved',
        side({ date: `2024-10-${String(1 + (i % 28)).padStart(2, '0')}`, summary: `Предмет номер ${i} `.repeat(3) }),
        side({ location: 'Главный корпус, 2207' }),
        `u${String(i).padStart(3, '0')}`,
      ),
    );
    const html = formatChangeMessage(set(items, 15), { pageUrl: PAGE });
    expect(html.length).toBeLessThanOrEqual(MAX_MESSAGE_LENGTH);
    expect(html.length).toBeGreaterThan(MAX_MESSAGE_LENGTH - 300);
    const text = shown(html);
    const lines = text.split('\n').filter((line) => line.includes('→ 2207')).length;
    expect(lines).toBeGreaterThan(10);
    const left = 200 - lines + 15;
    expect(text).toMatch(new RegExp(`…и ещё ${left} изменени(е|я|й)\\n\\nРасписание$`));
    expect(html.endsWith(`<a href="${escapeAttribute(PAGE)}">Расписание</a>`)).toBe(true);
  });

  it("counts the set's omitted items even when every line fits, in Russian plural", () => {
    const one = formatChangeMessage(set([item('cancelled', side())], 1), { pageUrl: PAGE });
    expect(shown(one)).toContain('…и ещё 1 изменение\n');
    expect(shown(formatChangeMessage(set([item('cancelled', side())], 3), { pageUrl: PAGE }))).toContain(
      '…и ещё 3 изменения\n',
    );
    expect(shown(formatChangeMessage(set([item('cancelled', side())], 11), { pageUrl: PAGE }))).toContain(
      '…и ещё 11 изменений\n',
    );
  });

  it("labels days with Russian's standard abbreviations, the same as the commands' («нояб.», never «ноя»)", () => {
    expect(dayLabel('2024-10-02')).toBe('Ср 2 окт.');
    expect(dayLabel('2025-05-09')).toBe('Пт 9 мая');
    expect(dayLabel('2025-01-05')).toBe('Вс 5 янв.');
    expect(dayLabel('2025-11-05')).toBe('Ср 5 нояб.');
    expect(dayLabel('2025-09-05')).toBe('Пт 5 сент.');
    const moved = item(
      'moved',
      side(),
      side({ date: '2025-11-05', begin: '12:00', startUtc: Date.UTC(2025, 10, 5, 9) }),
    );
    expect(changeLine(moved)).toBe('10:10 Физика (практика): перенесено на Ср 5 нояб., 12:00');
  });

  it('marks a class of one subgroup for a chat that follows the whole group, and not for one following a subgroup', () => {
    const lab = {
      ...item('cancelled', side({ summary: 'Оптика (лабораторная работа)', begin: '15:40' })),
      note: '1 подгруппа',
    };
    expect(changeLine(lab)).toBe('15:40 Оптика (лабораторная работа, 1 подгруппа): отменено');
    expect(changeLine(lab, 1)).toBe('15:40 Оптика (лабораторная работа): отменено');
    const html = formatChangeMessage(set([lab]), { pageUrl: PAGE });
    expect(shown(html)).toContain('\n15:40 Оптика (лабораторная работа, 1 подгруппа): отменено\n');
    expect(shown(formatChangeMessage(set([lab]), { pageUrl: PAGE, subgroup: 1 }))).toContain(
      '\n15:40 Оптика (лабораторная работа): отменено\n',
    );
    // A shared class has no mark; a title without brackets gets its own; a title naming the subgroup is left.
    expect(changeLine({ ...lab, note: '' })).toBe('15:40 Оптика (лабораторная работа): отменено');
    expect(withSubgroup('Оптика', 'подгр. 2', undefined)).toBe('Оптика (2 подгруппа)');
    expect(withSubgroup('Оптика 2 подгруппа', '2 подгруппа', undefined)).toBe('Оптика 2 подгруппа');
  });
});
