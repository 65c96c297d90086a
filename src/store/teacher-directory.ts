/**
 * The service's own teacher directory: every teacher a timetable it read names (id and full name), and every
 * employee the university's search answered (with post and subdivision), so that a person finds a teacher
 * however they write the name (timetable/teacher-match.ts: `ё`/`е`, initials, a surname's beginning), where the
 * university's own search compares text strictly. Redis holds one HASH (id → the employee as JSON) and a
 * version counter raised by every change; each API process keeps an in-memory index and rebuilds it when the
 * counter moved (a search costs one GET while nothing changed), as the group directory does.
 *
 * A timetable only ever adds a teacher or renames one whose name changed other than by `ё`/`е` (timetables and
 * the search may spell a name differently; the directory should not flip between the two on every refresh);
 * a search answer replaces what it differs from. {@link MAX_DIRECTORY_TEACHERS} bounds the hash whatever the
 * university sends.
 */
import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { foldName, type IndexedPerson, indexPeople, matchPeople } from '../timetable/teacher-match.ts';
import type { Employee } from '../upstream/directory-schema.ts';
import type { RedisKeys } from './keys.ts';
import { VersionedIndex } from './versioned-index.ts';

/** Teachers kept at most (a large university has a few thousand): beyond it, new ones are not added. */
export const MAX_DIRECTORY_TEACHERS = 50_000;
/** Longest text kept in one field of a record (real names are a few dozen characters). */
const MAX_FIELD_LENGTH = 200;

/** Writes new and changed teachers, raising the version (teacher-directory-record.lua). */
const RECORD = loadScript(import.meta.dirname, 'teacher-directory-record');

/** A teacher as a timetable entry names them. */
export interface SeenTeacher {
  id: number | null;
  lastName: string;
  firstName: string;
  middleName: string;
}

/** The fields of a record, in the order they are stored (a record's JSON is compared as text). */
const FIELDS = [
  'id',
  'teacher',
  'email',
  'firstName',
  'lastName',
  'middleName',
  'post',
  'gender',
  'photoPath',
  'workPhone',
  'subDivision',
] as const satisfies readonly (keyof Employee)[];

/** A record as stored: every field, texts trimmed, spaces collapsed and cut to {@link MAX_FIELD_LENGTH}. */
function cleanRecord(employee: Employee): Employee {
  const clean = (value: string) => value.replace(/\s+/g, ' ').trim().slice(0, MAX_FIELD_LENGTH);
  return {
    id: employee.id,
    teacher: employee.teacher,
    email: clean(employee.email),
    firstName: clean(employee.firstName),
    lastName: clean(employee.lastName),
    middleName: clean(employee.middleName),
    post: clean(employee.post),
    gender: clean(employee.gender),
    photoPath: clean(employee.photoPath),
    workPhone: clean(employee.workPhone),
    subDivision: clean(employee.subDivision),
  };
}

function encode(employee: Employee): string {
  return JSON.stringify(employee, FIELDS as unknown as string[]);
}

/** A stored record, or undefined for one this version cannot read. */
function decode(json: string): Employee | undefined {
  try {
    const value = JSON.parse(json) as Partial<Employee>;
    if (typeof value?.id !== 'number' || typeof value.lastName !== 'string') return undefined;
    const text = (field: unknown) => (typeof field === 'string' ? field : '');
    return {
      id: value.id,
      teacher: value.teacher !== false,
      email: text(value.email),
      firstName: text(value.firstName),
      lastName: value.lastName,
      middleName: text(value.middleName),
      post: text(value.post),
      gender: text(value.gender),
      photoPath: text(value.photoPath),
      workPhone: text(value.workPhone),
      subDivision: text(value.subDivision),
    };
  } catch {
    return undefined;
  }
}

const validId = (id: number | null | undefined): id is number =>
  typeof id === 'number' && Number.isSafeInteger(id) && id > 0;

const fullName = (person: { lastName: string; firstName: string; middleName: string }) =>
  foldName(`${person.lastName} ${person.firstName} ${person.middleName}`);

/** The directory in Redis, with this process's index of it. */
export class TeacherDirectory {
  private readonly redis: RedisClient;
  private readonly keys: Pick<RedisKeys, 'teacherDirectory' | 'teacherDirectoryVersion'>;
  private readonly index = new VersionedIndex<IndexedPerson<Employee>[]>(() => this.load());

  constructor(redis: RedisClient, keys: Pick<RedisKeys, 'teacherDirectory' | 'teacherDirectoryVersion'>) {
    this.redis = redis;
    this.keys = keys;
  }

  /**
   * Records the teachers a timetable names (entries without a teacher id or surname are left out). A teacher
   * already known keeps their record unless the name changed other than by `ё`/`е`; then only the name is
   * replaced. Resolves to how many records it wrote (0 for a timetable that names nobody new).
   */
  async recordSeen(teachers: Iterable<SeenTeacher>): Promise<number> {
    const seen = new Map<number, Employee>();
    for (const teacher of teachers) {
      if (!validId(teacher.id) || seen.has(teacher.id)) continue;
      const record = cleanRecord({
        id: teacher.id,
        teacher: true,
        email: '',
        firstName: teacher.firstName,
        lastName: teacher.lastName,
        middleName: teacher.middleName,
        post: '',
        gender: '',
        photoPath: '',
        workPhone: '',
        subDivision: '',
      });
      if (record.lastName !== '') seen.set(teacher.id, record);
    }
    return this.write(seen, (before, after) => {
      if (before === undefined) return after;
      if (fullName(before) === fullName(after)) return undefined;
      const { lastName, firstName, middleName } = after;
      return { ...before, lastName, firstName, middleName };
    });
  }

  /** Records the employees a university search answered (replacing what they differ from); how many it wrote. */
  async recordFound(employees: Iterable<Employee>): Promise<number> {
    const found = new Map<number, Employee>();
    for (const employee of employees) {
      if (!validId(employee.id)) continue;
      const record = cleanRecord(employee);
      if (record.lastName !== '') found.set(employee.id, record);
    }
    return this.write(found, (_before, after) => after);
  }

  /** The employees `query` names (timetable/teacher-match.ts), best first, at most `limit`. */
  async find(query: string, limit: number): Promise<Employee[]> {
    return matchPeople(await this.currentIndex(), query, limit);
  }

  /** How many teachers the directory holds. */
  async size(): Promise<number> {
    return this.redis.hlen(this.keys.teacherDirectory);
  }

  /**
   * Writes the records `merge` makes of what is stored and what came (undefined: nothing to write). The read
   * and the write are two steps: two writers at once both write what the university said, the last one wins.
   */
  private async write(
    records: ReadonlyMap<number, Employee>,
    merge: (before: Employee | undefined, after: Employee) => Employee | undefined,
  ): Promise<number> {
    if (records.size === 0) return 0;
    const ids = [...records.keys()].map(String);
    const stored = await this.redis.hmget(this.keys.teacherDirectory, ...ids);
    const pairs: string[] = [];
    ids.forEach((id, at) => {
      const json = stored[at];
      const before = json === null || json === undefined ? undefined : decode(json);
      const merged = merge(before, records.get(Number(id)) as Employee);
      if (merged === undefined) return;
      const encoded = encode(merged);
      if (encoded !== json) pairs.push(id, encoded);
    });
    if (pairs.length === 0) return 0;
    const { teacherDirectory, teacherDirectoryVersion } = this.keys;
    const written = await RECORD.run(
      this.redis,
      [teacherDirectory, teacherDirectoryVersion],
      [String(MAX_DIRECTORY_TEACHERS), ...pairs],
    );
    return Number(written);
  }

  /** This process's index, rebuilt first when the directory's version moved (one rebuild at a time). */
  private async currentIndex(): Promise<IndexedPerson<Employee>[]> {
    return this.index.at((await this.redis.get(this.keys.teacherDirectoryVersion)) ?? '0');
  }

  /** Reads the whole directory (the version was read before: a change meanwhile makes the next search load again). */
  private async load(): Promise<IndexedPerson<Employee>[]> {
    const fields = await this.redis.hgetall(this.keys.teacherDirectory);
    const records = Object.values(fields)
      .map(decode)
      .filter((record) => record !== undefined);
    return indexPeople(records);
  }
}
