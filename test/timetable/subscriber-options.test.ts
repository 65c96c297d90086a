import { describe, expect, it } from 'vitest';
import {
  applyTitleTemplate,
  braceMistakeOf,
  canonicalTitleTemplate,
  DEFAULT_TITLE_TEMPLATE,
  defaultTitleTemplate,
  entryText,
  keepsEntry,
  optionValuesOf,
  placeholderNamed,
  placeholdersOf,
  subgroupOf,
  TEACHER_WORDING,
  titleTemplateIn,
  wordingOf,
} from '../../src/timetable/event-text.ts';
import { expand } from '../../src/timetable/expand.ts';
import type { SubscriberOptions } from '../../src/timetable/types.ts';
import { entry } from './fixtures.ts';

const notes = [
  '1 подгруппа',
  'подгр. 2',
  '2 п/г',
  '',
  'Подгруппа №1',
  '1-я подгруппа',
  'п/г 2',
  '2 пг',
  'Лаб. работа, 1 ПОДГРУППА',
  'перенос с 12.09',
];

function subjectsFor(subscriber: SubscriberOptions): string[] {
  const entries = notes.map((note, index) =>
    entry({ id: index + 1, note, subjectName: `S${index}`, finishDate: '2025-09-01' }),
  );
  return expand(entries, { timezone: 'Europe/Moscow', subscriber }).occurrences.map(
    (o) => o.summary.split(' ')[0] ?? '',
  );
}

describe('subgroup filter', () => {
  it('reads the subgroup number from the usual ways of writing it', () => {
    expect(notes.map(subgroupOf)).toEqual([1, 2, 2, undefined, 1, 1, 2, 2, 1, undefined]);
    expect(subgroupOf('подгруппы 1 и 2')).toBeUndefined();
    expect(subgroupOf('ауд. 305')).toBeUndefined();
  });

  it('keeps the subscriber’s subgroup and classes without any', () => {
    expect(subjectsFor({ subgroup: 1 }).sort()).toEqual(['S0', 'S3', 'S4', 'S5', 'S8', 'S9']);
    expect(subjectsFor({ subgroup: 2 }).sort()).toEqual(['S1', 'S2', 'S3', 'S6', 'S7', 'S9']);
    expect(subjectsFor({ subgroup: 3 }).sort()).toEqual(['S3', 'S9']);
    expect(subjectsFor({}).sort()).toHaveLength(notes.length);
  });
});

describe('excludeKinds', () => {
  it('leaves out the listed kinds, compared case-insensitively', () => {
    const lecture = entry({ kind: 'Лекция' });
    expect(keepsEntry(lecture, { excludeKinds: ['лекция'] })).toBe(false);
    expect(keepsEntry(entry({ kind: 'лекция' }), { excludeKinds: ['ЛЕКЦИЯ'] })).toBe(false);
    expect(keepsEntry(lecture, { excludeKinds: ['практика'] })).toBe(true);
    expect(keepsEntry(lecture, { excludeKinds: [] })).toBe(true);
    const entries = [
      entry({ id: 1, kind: 'Лекция' }),
      entry({ id: 2, kind: 'Практика', subjectName: 'Б' }),
      entry({ id: 3, kind: '', subjectName: 'В' }),
    ];
    const kept = expand(entries, {
      timezone: 'Europe/Moscow',
      to: '2025-09-01',
      subscriber: { excludeKinds: ['лекция', 'ПРАКТИКА'] },
    }).occurrences;
    expect(kept.map((o) => o.entryId)).toEqual([3]);
  });
});

describe('option values', () => {
  it('lists the subgroups ascending and the kinds lower-cased, each once, leaving out empty kinds', () => {
    const entries = notes.map((note, i) => entry({ id: i + 1, note, kind: ['Лекция', 'практика', ''][i % 3] ?? '' }));
    expect(optionValuesOf(entries)).toEqual({ subgroups: [1, 2], kinds: ['лекция', 'практика'] });
    expect(optionValuesOf([])).toEqual({ subgroups: [], kinds: [] });
  });
});

describe('title template', () => {
  const full = entry({
    kind: 'практика',
    room: '305',
    building: { id: 1, name: 'Корпус А' },
    note: '1 подгруппа',
    groups: ['ИВТ-21', 'ИВТ-22'],
  });

  it('fills every placeholder', () => {
    expect(applyTitleTemplate('{subject} | {kind} | {room} | {building} | {teacher} | {groups} | {note}', full)).toBe(
      'Математический анализ | практика | 305 | Корпус А | Иванов Иван Иванович | ИВТ-21, ИВТ-22 | 1 подгруппа',
    );
    expect(applyTitleTemplate('{subject} {unknown}', full)).toBe('Математический анализ {unknown}');
  });

  it('leaves out an empty kind with its brackets and separators', () => {
    const noKind = { ...full, kind: '' };
    expect(entryText(noKind).summary).toBe('Математический анализ');
    expect(entryText(full).summary).toBe('Математический анализ (практика)');
    expect(applyTitleTemplate('{subject} [{kind}] {room}', noKind)).toBe('Математический анализ 305');
    expect(applyTitleTemplate('{subject}, {kind}', noKind)).toBe('Математический анализ');
    expect(applyTitleTemplate('{kind}: {subject}', noKind)).toBe('Математический анализ');
    expect(applyTitleTemplate('{kind} – {subject}', noKind)).toBe('Математический анализ');
    expect(applyTitleTemplate('{kind}: {subject}', full)).toBe('практика: Математический анализ');
  });

  it('falls back to the subject when the template comes out empty', () => {
    expect(entryText({ ...full, kind: '' }, { titleTemplate: '{kind}' }).summary).toBe('Математический анализ');
  });

  it('takes the Russian names of the placeholders as synonyms of the English ones', () => {
    const russian = '{предмет} | {вид} | {аудитория} | {корпус} | {преподаватель} | {группы} | {примечание}';
    const english = '{subject} | {kind} | {room} | {building} | {teacher} | {groups} | {note}';
    expect(applyTitleTemplate(russian, full)).toBe(applyTitleTemplate(english, full));
    expect(applyTitleTemplate('{Предмет} ({ВИД})', full)).toBe(entryText(full).summary);
    expect(applyTitleTemplate('{предмет} {неизвестно}', full)).toBe('Математический анализ {неизвестно}');
    expect(placeholderNamed('вид')).toBe('kind');
    expect(placeholderNamed('Аудитория')).toBe('room');
    expect(placeholderNamed('predmet')).toBeUndefined();
    expect(placeholderNamed('Subject')).toBeUndefined();
    expect(placeholdersOf('{предмет}: {subject} {x_1} { room }')).toEqual(['предмет', 'subject', 'x_1']);
  });

  it('finds the first brace that is no part of a placeholder', () => {
    expect(braceMistakeOf('{предмет} ({вид}) [{аудитория}]')).toBeUndefined();
    expect(braceMistakeOf('{неизвестно} без скобок')).toBeUndefined();
    expect(braceMistakeOf('{предмет')).toEqual({ kind: 'unclosed', name: 'предмет' });
    expect(braceMistakeOf('{subject} {room')).toEqual({ kind: 'unclosed', name: 'room' });
    expect(braceMistakeOf('{предмет {вид}')).toEqual({ kind: 'unclosed', name: 'предмет' });
    expect(braceMistakeOf('}')).toEqual({ kind: 'stray', brace: '}' });
    expect(braceMistakeOf('{subject}}')).toEqual({ kind: 'stray', brace: '}' });
    expect(braceMistakeOf('{ room }')).toEqual({ kind: 'stray', brace: '{' });
    expect(braceMistakeOf('{{subject}}')).toEqual({ kind: 'stray', brace: '{' });
    expect(braceMistakeOf('{sub{x}ject}')).toEqual({ kind: 'unclosed', name: 'sub' });
  });

  it('stores a template by the English names, so either spelling is one feed, and shows it in either', () => {
    expect(canonicalTitleTemplate('{вид}: {Предмет}, {аудитория} {неизвестно}')).toBe(
      '{kind}: {subject}, {room} {неизвестно}',
    );
    expect(canonicalTitleTemplate('{предмет} ({вид})')).toBe(DEFAULT_TITLE_TEMPLATE);
    // An English template is stored as it is: the variants of existing subscribers keep their key and bytes.
    const stored = '{subject} [{groups}] {constructor}';
    expect(canonicalTitleTemplate(stored)).toBe(stored);
    expect(titleTemplateIn(DEFAULT_TITLE_TEMPLATE, 'ru')).toBe('{предмет} ({вид})');
    expect(titleTemplateIn('{kind}: {subject}, {note}', 'ru')).toBe('{вид}: {предмет}, {примечание}');
    expect(titleTemplateIn('{вид}: {subject}', 'en')).toBe('{kind}: {subject}');
  });

  it('fills only its own placeholders, not Object.prototype members', () => {
    expect(applyTitleTemplate('{subject} {constructor} {toString} {__proto__}', full)).toBe(
      'Математический анализ {constructor} {toString} {__proto__}',
    );
  });

  it('is used for every occurrence; the description and categories do not depend on it', () => {
    const [occurrence] = expand([full], {
      timezone: 'Europe/Moscow',
      subscriber: { titleTemplate: '{room}: {subject}' },
    }).occurrences;
    expect(occurrence?.summary).toBe('305: Математический анализ');
    expect(occurrence?.location).toBe('Корпус А, 305');
    expect(occurrence?.categories).toEqual(['практика']);
    expect(occurrence?.description).toBe(
      'Практика\nПреподаватель: Иванов Иван Иванович\nГруппы: ИВТ-21, ИВТ-22\nПримечание: 1 подгруппа',
    );
  });

  it('writes a description without gaps for missing parts', () => {
    const sparse = entry({
      kind: '',
      teacher: { id: null, lastName: 'Петров', firstName: '', middleName: '' },
      groups: ['А-1'],
      note: '',
      room: '',
      building: { id: null, name: '' },
    });
    expect(entryText(sparse)).toEqual({
      summary: 'Математический анализ',
      location: '',
      description: 'Преподаватель: Петров\nГруппа: А-1',
      categories: [],
    });
  });
});

describe("a teacher's timetable", () => {
  const full = entry({
    subjectName: 'Физика',
    kind: 'лекция',
    teacher: { id: 7, lastName: 'Иванов', firstName: 'Иван', middleName: 'Иванович' },
    groups: ['09-351', '09-352'],
    note: '',
  });

  it('names the groups in the default title, and the teacher in no description line', () => {
    expect(defaultTitleTemplate('employee')).toBe('{subject} ({kind}) — {groups}');
    const text = entryText(full, {}, [], wordingOf('employee'));
    expect(text.summary).toBe('Физика (лекция) — 09-351, 09-352');
    expect(text.description).toBe('Лекция\nГруппы: 09-351, 09-352');
  });

  it('drops the dash with the groups when a class has none', () => {
    expect(entryText({ ...full, groups: [] }, {}, [], TEACHER_WORDING).summary).toBe('Физика (лекция)');
    expect(entryText({ ...full, groups: [], kind: '' }, {}, [], TEACHER_WORDING).summary).toBe('Физика');
  });

  it("keeps a subscriber's own template, and leaves groups' and personal timetables as they were", () => {
    expect(entryText(full, { titleTemplate: '{subject} ({kind})' }, [], TEACHER_WORDING).summary).toBe(
      'Физика (лекция)',
    );
    for (const kind of ['group', 'personal'] as const) {
      expect(defaultTitleTemplate(kind)).toBe('{subject} ({kind})');
      expect(entryText(full, {}, [], wordingOf(kind))).toEqual(entryText(full));
    }
    expect(entryText(full).description).toBe('Лекция\nПреподаватель: Иванов Иван Иванович\nГруппы: 09-351, 09-352');
  });

  it('is what expansion words every occurrence with', () => {
    const [occurrence] = expand([full], { timezone: 'Europe/Moscow', wording: TEACHER_WORDING }).occurrences;
    expect(occurrence?.summary).toBe('Физика (лекция) — 09-351, 09-352');
    expect(occurrence?.description).not.toContain('Преподаватель');
  });
});
