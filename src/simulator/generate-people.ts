import { STAFF_POSTS, TEACHER_POSTS } from './catalog.ts';
import { INSTITUTES } from './institutes.ts';
import type { Employee, Group, User } from './model.ts';
import { type PersonName, randomName, translit } from './names.ts';
import { type Random, seededHex } from './random.ts';

const UNIVERSITY = 'Университет';
const GENERAL_DEPARTMENT = 'Департамент общеуниверситетских дисциплин';

/** Departments outside the institutes that teach every group. */
export const GENERAL_UNITS = {
  languages: 'Кафедра иностранных языков',
  sport: 'Кафедра физического воспитания и спорта',
  humanities: 'Кафедра истории и философии',
} as const;

/** Teachers grouped by where they teach: an institute code or one of {@link GENERAL_UNITS}' keys. */
export type TeacherPools = Map<string, Employee[]>;

interface Unit {
  key: string;
  path: string;
}

function units(): Unit[] {
  const out: Unit[] = [];
  for (const institute of INSTITUTES) {
    for (const department of institute.departments) {
      out.push({ key: institute.code, path: `${UNIVERSITY}/${institute.name}/${department}` });
    }
  }
  // General departments teach every group, so they get several shares of the staff.
  const shares: Record<keyof typeof GENERAL_UNITS, number> = { languages: 5, sport: 3, humanities: 2 };
  for (const [key, department] of Object.entries(GENERAL_UNITS)) {
    const unit = { key, path: `${UNIVERSITY}/${GENERAL_DEPARTMENT}/${department}` };
    for (let i = 0; i < (shares[key as keyof typeof GENERAL_UNITS] ?? 1); i++) out.push(unit);
  }
  return out;
}

function weightedPost(random: Random): string {
  const total = TEACHER_POSTS.reduce((sum, [, weight]) => sum + weight, 0);
  let roll = random.int(1, total);
  for (const [post, weight] of TEACHER_POSTS) {
    roll -= weight;
    if (roll <= 0) return post;
  }
  return 'доцент';
}

function workPhone(random: Random): string {
  const a = random.int(200, 299);
  const b = String(random.int(10, 99));
  const c = String(random.int(10, 99));
  const ext = random.int(1000, 4999);
  const formats = [
    `+7 (843) ${a}-${b}-${c}`,
    `${a}-${b}-${c}`,
    `8 843 ${a} ${b} ${c}`,
    `вн. ${ext}`,
    `(843) ${a}${b}${c}, доб. ${ext}`,
    `${a}-${b}-${c} (кафедра)`,
    `+78432${a}${b}${c}`,
    '',
    'нет',
  ];
  return random.pick(formats);
}

function email(random: Random, name: PersonName): string {
  if (random.chance(0.08)) return '';
  const last = translit(name.lastName);
  const initials = translit(name.firstName).charAt(0) + translit(name.middleName).charAt(0);
  return random.chance(0.6)
    ? `${initials}${last}@univ-sim.ru`
    : `${last.toLowerCase()}.${initials.toLowerCase()}@univ-sim.ru`;
}

function uniqueName(random: Random, taken: Set<string>, femaleShare: number): PersonName {
  let name = randomName(random, femaleShare);
  for (let tries = 0; tries < 100 && taken.has(fullName(name)); tries++) name = randomName(random, femaleShare);
  taken.add(fullName(name));
  return name;
}

/** "Фамилия Имя Отчество". */
export function fullName(name: { lastName: string; firstName: string; middleName: string }): string {
  return `${name.lastName} ${name.firstName} ${name.middleName}`;
}

/** Generates `count` employees with unique full names and pools of teachers by unit. */
export function generateEmployees(random: Random, count: number): { employees: Employee[]; pools: TeacherPools } {
  const allUnits = units();
  const taken = new Set<string>();
  const employees: Employee[] = [];
  const pools: TeacherPools = new Map();
  let id = 1000;
  for (let i = 0; i < count; i++) {
    id += random.int(1, 9);
    const unit = allUnits[i % allUnits.length] as Unit;
    const name = uniqueName(random, taken, 0.45);
    const teacher = i < allUnits.length || random.chance(0.88);
    const employee: Employee = {
      id,
      teacher,
      email: email(random, name),
      ...name,
      post: teacher ? weightedPost(random) : random.pick(STAFF_POSTS),
      photoPath: random.chance(0.85) ? `/portal/docs/photos/employees/${id}.jpg` : '',
      workPhone: workPhone(random),
      subDivision: unit.path,
    };
    employees.push(employee);
    if (teacher) pools.set(unit.key, [...(pools.get(unit.key) ?? []), employee]);
  }
  return { employees, pools };
}

/** Generates `count` users spread over the groups, each with a deterministic token derived from the seed. */
export function generateUsers(random: Random, seed: number | string, count: number, groups: readonly Group[]): User[] {
  const users: User[] = [];
  const usernames = new Set<string>();
  let id = 70_000;
  let studentId = 230_000;
  for (let i = 0; i < count && groups.length > 0; i++) {
    id += random.int(1, 5);
    studentId += random.int(1, 40);
    const name = randomName(random, 0.5);
    let username =
      `${translit(name.lastName)}.${translit(name.firstName).charAt(0)}${translit(name.middleName).charAt(0)}`.toLowerCase();
    if (usernames.has(username)) username = `${username}${id}`;
    usernames.add(username);
    users.push({
      id,
      username,
      ...name,
      studentId,
      photoPath: `uploads/photos/students/${studentId}.jpg`,
      groupId: random.pick(groups).id,
      subgroup: random.chance(0.5) ? 1 : 2,
      token: `sim-${seededHex(32, seed, 'token', id)}`,
    });
  }
  return users;
}
