import { describe, expect, it } from 'vitest';
import { pushOptionsChanges, pushOptionsLine, refusedOptionsList } from '../../src/web/push-options-line.ts';

describe('what a push calendar follows, in one line', () => {
  it('says the whole timetable for no options or none chosen', () => {
    // One group's calendar: «Вся группа» (a поток is several groups).
    expect(pushOptionsLine(undefined, 'group', 'ru')).toBe('Вся группа');
    expect(pushOptionsLine({}, 'group', 'ru')).toBe('Вся группа');
    expect(pushOptionsLine({}, 'employee', 'ru')).toBe('Всё расписание');
    expect(pushOptionsLine(undefined, 'personal', 'ru')).toBe('Всё расписание');
    // A teacher's default title is no choice either.
    expect(pushOptionsLine({ titleTemplate: '{subject} ({kind}) — {groups}' }, 'employee', 'en')).toBe(
      'The whole timetable',
    );
  });

  it('names each choice, the kinds hidden in the genitive, the title by its Russian placeholders', () => {
    const options = { subgroup: 2, excludeKinds: ['лекция', 'лабораторная работа'], alarmMinutes: 15 };
    expect(pushOptionsLine({ ...options, titleTemplate: '{subject} {room}' }, 'group', 'ru')).toBe(
      'Подгруппа 2, без лекций, лабораторных работ, напоминание за 15 минут, название «{предмет} {аудитория}»',
    );
    expect(pushOptionsLine({ excludeKinds: ['коллоквиум'], alarmMinutes: 0 }, 'group', 'ru')).toBe(
      'Без «коллоквиум», напоминание в начале занятия',
    );
    expect(pushOptionsLine({ alarmMinutes: 60 }, 'group', 'en')).toBe('A reminder 1 hour before');
  });
});

describe('what a save changed, one line per option', () => {
  it('names only the options that changed, old → new', () => {
    const before = { subgroup: 2, alarmMinutes: 15, titleTemplate: '{subject} — {room}' };
    expect(pushOptionsChanges(before, { subgroup: 1, titleTemplate: '{subject} — {room}' }, 'group', 'ru')).toEqual([
      'Подгруппа: 2 → 1',
      'Напоминание: за 15 минут → нет',
    ]);
    expect(pushOptionsChanges(undefined, { excludeKinds: ['лекция'], alarmMinutes: 0 }, 'group', 'ru')).toEqual([
      'Скрытые занятия: нет → лекция',
      'Напоминание: нет → в начале занятия',
    ]);
    expect(pushOptionsChanges({ titleTemplate: '{subject} {room}' }, {}, 'group', 'ru')).toEqual([
      'Название: «{предмет} {аудитория}» → обычное',
    ]);
    expect(pushOptionsChanges({ subgroup: 1 }, { subgroup: 1 }, 'group', 'ru')).toEqual([]);
    expect(pushOptionsChanges({}, { alarmMinutes: 60 }, 'group', 'en')).toEqual(['Reminder: none → 1 hour before']);
  });
});

describe('the options refused, as a list', () => {
  it('names each field as the form does, with why, in each language', () => {
    const refused = [
      { field: 'subgroup', why: 'В этом расписании нет подгруппы 7.' },
      { field: 'title', why: 'Неизвестная подстановка {комната}.' },
    ] as const;
    expect(refusedOptionsList(refused, 'ru')).toBe(
      '<ul><li data-field="subgroup"><strong>Подгруппа:</strong> В этом расписании нет подгруппы 7.</li>' +
        '<li data-field="title"><strong>Название:</strong> Неизвестная подстановка {комната}.</li></ul>',
    );
    expect(refusedOptionsList([{ field: 'alarm', why: 'a <b>' }], 'en')).toBe(
      '<ul><li data-field="alarm"><strong>Reminder:</strong> a &#60;b&#62;</li></ul>',
    );
  });
});
