import { fullName } from './generate-people.ts';
import type { Employee } from './model.ts';

/** Most employees one search returns. */
export const SEARCH_LIMIT = 50;

/**
 * Case-insensitive substring search over "Фамилия Имя Отчество". The index is built once, already sorted by
 * last name (then first and middle name, then id), so a search is one pass that stops at the limit.
 */
export class EmployeeSearch {
  private readonly index: { employee: Employee; text: string }[];

  constructor(employees: readonly Employee[]) {
    const collator = new Intl.Collator('ru');
    this.index = [...employees]
      .sort(
        (a, b) =>
          collator.compare(a.lastName, b.lastName) ||
          collator.compare(a.firstName, b.firstName) ||
          collator.compare(a.middleName, b.middleName) ||
          a.id - b.id,
      )
      .map((employee) => ({ employee, text: fullName(employee).toLocaleLowerCase('ru') }));
  }

  /** Employees whose full name contains `query` (trimmed, any case), at most {@link SEARCH_LIMIT}. */
  find(query: string): Employee[] {
    const needle = query.trim().replace(/\s+/g, ' ').toLocaleLowerCase('ru');
    const found: Employee[] = [];
    for (const { employee, text } of this.index) {
      if (!text.includes(needle)) continue;
      found.push(employee);
      if (found.length === SEARCH_LIMIT) break;
    }
    return found;
  }
}
