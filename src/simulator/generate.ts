import type { BuildContext } from './class-builder.ts';
import { semesterFor } from './dates.ts';
import { generateGroups } from './generate-groups.ts';
import { generateEmployees, generateUsers } from './generate-people.ts';
import { generateTimetable } from './generate-timetable.ts';
import type { Dataset } from './model.ts';
import { Occupancy } from './occupancy.ts';
import { createRandom } from './random.ts';

/** Inputs of {@link generateDataset}; the same inputs always give the same data. */
export interface GenerateOptions {
  seed: number | string;
  referenceDate: Date;
  groups: number;
  employees: number;
  users: number;
}

/**
 * Generates the whole fake university. Each part draws from its own seeded stream, so changing, say, the number
 * of users does not reshuffle the timetables.
 */
export function generateDataset(options: GenerateOptions): Dataset {
  const { seed } = options;
  const semester = semesterFor(options.referenceDate);
  const { employees, pools } = generateEmployees(createRandom(seed, 'employees'), options.employees);
  const { groups, streams } = generateGroups(createRandom(seed, 'groups'), options.groups, semester);
  const ctx: BuildContext = {
    random: createRandom(seed, 'timetable'),
    semester,
    occupancy: new Occupancy(),
    entries: [],
    nextId: 180_000,
  };
  generateTimetable(
    ctx,
    streams,
    pools,
    employees.filter((employee) => employee.teacher),
  );
  const users = generateUsers(createRandom(seed, 'users'), seed, options.users, groups);
  return { semester, groups, employees, entries: ctx.entries, users };
}
