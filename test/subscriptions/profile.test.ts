import { describe, expect, it } from 'vitest';
import { personalHeading, profileCalendarName } from '../../src/subscriptions/profile.ts';

describe('the heading of a personal page', () => {
  it('names the person alone: the page labels it as one’s own and links the group beside it', () => {
    const name = profileCalendarName({ firstName: 'Мария', lastName: 'Иванова', groupName: 'ИВТ-21' });
    expect(name).toBe('Расписание: Иванова Мария (ИВТ-21)');
    expect(personalHeading(name, 'ИВТ-21')).toBe('Иванова Мария');
  });

  it('keeps the group when the page has no group to link, and a name it cannot shorten', () => {
    expect(personalHeading('Расписание: Иванова Мария (ИВТ-21)')).toBe('Иванова Мария (ИВТ-21)');
    expect(personalHeading('Моё расписание (ИВТ-21)', 'ИВТ-21')).toBe('Моё расписание');
    expect(personalHeading('Моё расписание')).toBe('Моё расписание');
  });
});
