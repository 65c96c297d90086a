import { describe, expect, it } from 'vitest';
import { pushOptionsLine } from '../../src/web/push-options-line.ts';

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
