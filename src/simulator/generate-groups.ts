import type { Semester } from './dates.ts';
import { INSTITUTES, type Institute, type Speciality } from './institutes.ts';
import type { Group } from './model.ts';
import type { Random } from './random.ts';

/** Groups of one speciality and year that attend lectures together. */
export interface Stream {
  institute: Institute;
  course: number;
  groups: Group[];
}

interface Cohort {
  institute: Institute;
  speciality: Speciality;
  course: number;
}

function cohorts(): Cohort[] {
  const out: Cohort[] = [];
  for (const institute of INSTITUTES) {
    for (const speciality of institute.specialities) {
      for (let course = 1; course <= speciality.years; course++) out.push({ institute, speciality, course });
    }
  }
  return out;
}

/** Splits `n` into parts of 2–4 (a lone group stays a stream of one only when n is 1). */
function streamSizes(random: Random, n: number): number[] {
  const sizes: number[] = [];
  let rest = n;
  while (rest > 4) {
    const size = random.int(2, Math.min(4, rest - 2));
    sizes.push(size);
    rest -= size;
  }
  if (rest > 0) sizes.push(rest);
  return sizes;
}

/** How many groups each used cohort gets: all cohorts when there are enough groups, at least two each. */
function cohortCounts(random: Random, count: number): [Cohort, number][] {
  const all = cohorts();
  const used = Math.max(1, Math.min(all.length, Math.floor(count / 2)));
  const chosen = new Set(random.shuffle(all).slice(0, used));
  const kept = all.filter((cohort) => chosen.has(cohort));
  return kept.map((cohort, index) => [cohort, Math.floor(count / used) + (index < count % used ? 1 : 0)]);
}

/**
 * Generates `count` groups named like "09-351" (institute code, last digit of the start year, number) and
 * organises them into lecture streams of 2–4 groups.
 */
export function generateGroups(
  random: Random,
  count: number,
  semester: Semester,
): { groups: Group[]; streams: Stream[] } {
  const groups: Group[] = [];
  const streams: Stream[] = [];
  const counters = new Map<string, number>();
  let id = 4000;
  for (const [cohort, n] of cohortCounts(random, count)) {
    const { institute, speciality, course } = cohort;
    const yearStart = semester.academicYear - course + 1;
    const counterKey = `${institute.code}-${yearStart}`;
    for (const size of streamSizes(random, n)) {
      const specialization = random.pick(speciality.specializations);
      const stream: Stream = { institute, course, groups: [] };
      for (let i = 0; i < size; i++) {
        const number = (counters.get(counterKey) ?? random.int(0, 4)) + 1;
        counters.set(counterKey, number);
        id += random.int(1, 6);
        const name = `${institute.code}-${yearStart % 10}${String(number).padStart(2, '0')}`;
        const group: Group = {
          id,
          name,
          instituteName: institute.name,
          specialization,
          speciality: speciality.name,
          yearStart,
          yearEnd: yearStart + speciality.years,
          course,
          instituteCode: institute.code,
        };
        stream.groups.push(group);
        groups.push(group);
      }
      streams.push(stream);
    }
  }
  return { groups, streams };
}
