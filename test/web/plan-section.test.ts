/** The plan table of the personal page: differences named in words, both languages, the unavailable note. */
import { describe, expect, it } from 'vitest';
import type { StudyPlanView } from '../../src/subscriptions/study-plan-view.ts';
import { planSection } from '../../src/web/plan-section.ts';

const READY: StudyPlanView = {
  state: 'ready',
  fetchedAt: Date.UTC(2025, 9, 1, 9, 0),
  timezone: 'Europe/Moscow',
  refreshFailedAt: null,
  semester: 5,
  ends: [
    { subject: 'Математический анализ', code: 'Б1.О.07', exam: true, quiz: false },
    { subject: 'Учебная практика', code: 'Б2.О.01(П)', exam: false, quiz: true },
  ],
  rows: [
    { subject: 'Математический анализ', code: 'Б1.О.07', kind: 'lecture', plannedHours: 36, scheduledHours: 34 },
    {
      subject: 'Математический анализ',
      code: 'Б1.О.07',
      kind: 'laboratory',
      plannedHours: 18,
      scheduledHours: 0,
      difference: 'none-scheduled',
    },
    {
      subject: '<Рисунок>',
      code: '',
      kind: 'practice',
      plannedHours: 0,
      scheduledHours: 4.5,
      difference: 'not-in-plan',
    },
  ],
};

describe('planSection', () => {
  it('shows the semester, the date of the data and every difference in words', () => {
    const text = planSection(READY, 'ru');
    expect(text).toContain('Учебный план: 5-й семестр');
    expect(text).toContain('Данные на 1 октября 2025');
    expect(text).toContain('12:00');
    expect(text).toContain('Расхождений с планом: 2.');
    expect(text).toContain('⚠ нет в расписании');
    expect(text).toContain('⚠ нет в плане');
    expect(text).toContain('Б1.О.07 · Экзамен');
    expect(text).toContain('без аудиторных занятий');
    expect(text).toContain('4,5');
    expect(text).toContain('&#60;Рисунок&#62;');
    expect(text).not.toContain('<Рисунок>');
  });

  it('groups each subject in a row group of its own, every cell naming its column, for the narrow cards', () => {
    const text = planSection(READY, 'ru');
    expect(text.match(/<tbody class="plan-subject">/g)).toHaveLength(3);
    expect(text).toContain('<th scope="rowgroup" rowspan="2">Математический анализ');
    // The laboratory row of the analysis: hours and the difference, each said with its column's name.
    expect(text).toContain(
      '<tr class="plan-differs"><td class="plan-kind">лабораторные</td><td class="num" data-label="По плану, ч">18</td><td class="num" data-label="В расписании, ч">0</td><td data-label="Расхождение"><strong class="plan-mark">⚠ нет в расписании</strong></td></tr>',
    );
    expect(text).toContain('<td class="plan-ok" data-label="Расхождение">в пределах плана</td>');
  });

  it('speaks English with the same facts', () => {
    const text = planSection({ ...READY, refreshFailedAt: READY.fetchedAt + 1 }, 'en');
    expect(text).toContain('Study plan: semester 5');
    expect(text).toContain('Data as of 1 October 2025');
    expect(text).toContain('⚠ not scheduled');
    expect(text).toContain('4.5');
    expect(text).toContain('could not be updated');
  });

  it('says the plan is unavailable', () => {
    expect(planSection({ state: 'unavailable', reason: 'failed', fetchedAt: null }, 'ru')).toContain('план недоступен');
    expect(planSection({ state: 'unavailable', reason: 'not-fetched', fetchedAt: null }, 'en')).toContain(
      'plan is unavailable',
    );
  });
});
