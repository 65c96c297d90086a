import type { Semester } from './dates.ts';
import { isLegacy, legacyEmployee, legacyUser, perGroupRow, sentPerGroup, withControlCharacters } from './dialect.ts';
import { defaultFields, deriveFields, type EntryLookups, ordered, positiveInt } from './entry-input.ts';
import { addScheduledHours, generatePlan, type ScheduledHours } from './generate-plan.ts';
import { INSTITUTES } from './institutes.ts';
import type { Dataset, Employee, Entry, Group, User } from './model.ts';
import { EmployeeSearch } from './search.ts';
import { canonicalFields, type WireFormat, wireEntry, wireValue } from './wire.ts';

const SUBGROUP_NOTE = /(\d+)\s*подгрупп/;

function sortKey(value: unknown): number {
  const number = positiveInt(value);
  return number ?? Number.MAX_SAFE_INTEGER;
}

function compareEntries(a: Entry, b: Entry): number {
  return (
    sortKey(a.fields.day_week_schedule) - sortKey(b.fields.day_week_schedule) ||
    sortKey(a.fields.time_interval_id) - sortKey(b.fields.time_interval_id) ||
    a.id - b.id
  );
}

function addTo(index: Map<number, Set<number>>, key: number | undefined, id: number): void {
  if (key === undefined) return;
  const set = index.get(key) ?? new Set<number>();
  set.add(id);
  index.set(key, set);
}

/**
 * The simulator's data with indexes by group and teacher, and a cache of serialized response bodies per
 * group, teacher, personal view and plan. A mutation drops exactly the cached bodies it can affect.
 */
export class SimulatorStore {
  readonly semester: Semester;
  readonly groups: ReadonlyMap<number, Group>;
  readonly employees: ReadonlyMap<number, Employee>;
  readonly users: readonly User[];
  readonly search: EmployeeSearch;
  private readonly seed: number | string;
  private wireFormat: WireFormat;
  private readonly usersByToken: Map<string, User>;
  private readonly entries = new Map<number, Entry>();
  private readonly byGroup = new Map<number, Set<number>>();
  private readonly byTeacher = new Map<number, Set<number>>();
  /** Electives by user: entries whose `userIds` name the user. */
  private readonly byUser = new Map<number, Set<number>>();
  private readonly usersByGroup = new Map<number, number[]>();
  private readonly userIds: ReadonlySet<number>;
  private readonly bodies = new Map<string, Buffer>();
  private readonly entryJson = new Map<number, string>();
  private readonly initialSubjects = new Map<number, string[]>();
  /** Academic hours each group's initial timetable gives each subject, by kind (what its plan is made from). */
  private readonly initialHours = new Map<number, ScheduledHours>();
  private readonly lookups: EntryLookups;
  private maxId = 0;

  constructor(dataset: Dataset, seed: number | string, format: WireFormat) {
    this.seed = seed;
    this.wireFormat = format;
    this.semester = dataset.semester;
    this.groups = new Map(dataset.groups.map((group) => [group.id, group]));
    this.employees = new Map(dataset.employees.map((employee) => [employee.id, employee]));
    this.users = dataset.users;
    this.usersByToken = new Map(dataset.users.map((user) => [user.token, user]));
    this.userIds = new Set(dataset.users.map((user) => user.id));
    for (const user of dataset.users) {
      const members = this.usersByGroup.get(user.groupId) ?? [];
      members.push(user.id);
      this.usersByGroup.set(user.groupId, members);
    }
    this.search = new EmployeeSearch(dataset.employees);
    const defaultTeacher = dataset.employees.find((employee) => employee.teacher);
    this.lookups = { semester: dataset.semester, employees: this.employees, defaultTeacher };
    for (const entry of dataset.entries) {
      this.insert(entry);
      for (const groupId of entry.groupIds) {
        const subjects = this.initialSubjects.get(groupId) ?? [];
        subjects.push(String(entry.fields.subject_name));
        this.initialSubjects.set(groupId, subjects);
        const hours = this.initialHours.get(groupId) ?? new Map();
        addScheduledHours(hours, entry.fields);
        this.initialHours.set(groupId, hours);
      }
    }
  }

  /** How answers are spelled on the wire. */
  get format(): WireFormat {
    return this.wireFormat;
  }

  /** Spells every answer in `format` from now on: the cached bodies, written in the old one, are dropped. */
  setFormat(format: WireFormat): void {
    this.wireFormat = format;
    this.bodies.clear();
    this.entryJson.clear();
  }

  /** Body of `GET /employees?q=`: `users` (one object when one matched), or `employees` in the legacy dialect. */
  searchBody(found: readonly Employee[]): Buffer {
    if (isLegacy(this.wireFormat.dialect)) {
      return this.json({ success: true, employees: found.map(legacyEmployee) });
    }
    return this.json({ success: true, users: this.wire(found.length === 1 ? found[0] : found) });
  }

  /** Body of `POST /users/@me` for the selected fields (legacy: no `success`, some fields null). */
  userBody(selected: Record<string, unknown>): Buffer {
    if (isLegacy(this.wireFormat.dialect)) return this.json({ user: this.wire(legacyUser(selected)) });
    return this.json({ success: true, user: this.wire(selected) });
  }

  /** The user holding `token`, if any. */
  userByToken(token: string): User | undefined {
    return this.usersByToken.get(token);
  }

  /** A stored entry. */
  entry(id: number): Entry | undefined {
    return this.entries.get(id);
  }

  /** How many entries a group's timetable has. */
  entryCount(groupId: number): number {
    return this.byGroup.get(groupId)?.size ?? 0;
  }

  /** An entry as the API sends it, plus its `groupIds` and, for an elective, its `userIds` (for the control API). */
  controlView(entry: Entry): Record<string, unknown> {
    const view = { ...wireEntry(entry.fields, this.wireFormat), groupIds: [...entry.groupIds] };
    return entry.userIds?.length ? { ...view, userIds: [...entry.userIds] } : view;
  }

  /** Whether a user of this id exists. */
  hasUser(id: number): boolean {
    return this.userIds.has(id);
  }

  /** Body of `GET /groups/:id/schedule`; undefined for an unknown group. */
  groupSchedule(groupId: number): Buffer | undefined {
    if (!this.groups.has(groupId)) return undefined;
    return this.cached(`g:${groupId}`, () => this.scheduleBody(this.byGroup.get(groupId), groupId));
  }

  /** Body of `GET /employees/:id/schedule`; undefined for an unknown employee. */
  employeeSchedule(employeeId: number): Buffer | undefined {
    if (!this.employees.has(employeeId)) return undefined;
    return this.cached(`e:${employeeId}`, () => this.scheduleBody(this.byTeacher.get(employeeId)));
  }

  /**
   * Body of `GET /users/@me/schedule`: the group's timetable without the other subgroup's classes, plus the
   * user's electives. Users without electives share one body per group and subgroup; one with electives has
   * a body of their own.
   */
  personalSchedule(user: User): Buffer {
    const electives = this.byUser.get(user.id);
    const key = electives?.size ? `u:${user.id}` : `p:${user.groupId}:${user.subgroup}`;
    return this.cached(key, () => {
      const ids = [...(this.byGroup.get(user.groupId) ?? [])].filter((id) => {
        const note = this.entries.get(id)?.fields.note_schedule;
        const match = typeof note === 'string' ? SUBGROUP_NOTE.exec(note) : null;
        return !match || Number(match[1]) === user.subgroup;
      });
      return this.scheduleBody(new Set([...ids, ...(electives ?? [])]), user.groupId);
    });
  }

  /** Body of `GET /users/@me/plan`: the plan of the user's group. */
  plan(user: User): Buffer {
    return this.cached(`plan:${user.groupId}`, () => {
      const group = this.groups.get(user.groupId);
      if (!group) return this.envelope({ subjects: [] });
      const domain = INSTITUTES.find((institute) => institute.code === group.instituteCode)?.domain ?? 'math';
      const semester = this.semester.season === 'autumn' ? group.course * 2 - 1 : group.course * 2;
      const subjects = generatePlan(this.seed, group, domain, {
        semester,
        subjects: this.initialSubjects.get(group.id) ?? [],
        hours: this.initialHours.get(group.id) ?? new Map(),
      });
      return this.envelope({ subjects: wireValue(subjects, this.wireFormat) });
    });
  }

  /** Any other value as sent (numbers per `numericStrings`). */
  wire(value: unknown): unknown {
    return wireValue(value, this.wireFormat);
  }

  /**
   * Adds a class; `given` overrides a complete default entry. Groups and users must exist (checked by the
   * caller); `userIds` makes it an elective of those users.
   */
  add(given: Record<string, unknown>, groupIds: number[], userIds: number[] = []): Entry {
    const canonical = canonicalFields(given);
    const groups = groupIds.map((id) => this.groups.get(id)).filter((group) => group !== undefined);
    const merged = { ...defaultFields(this.lookups, groups), ...canonical };
    const id = positiveInt(canonical.id) ?? this.maxId + 1;
    const fields = ordered({ ...deriveFields(merged, merged, this.lookups), id });
    const entry: Entry = userIds.length > 0 ? { id, groupIds, userIds, fields } : { id, groupIds, fields };
    this.insert(entry);
    return entry;
  }

  /** Changes fields (and optionally the groups or users) of an entry; undefined when it does not exist. */
  patch(id: number, given: Record<string, unknown>, groupIds?: number[], userIds?: number[]): Entry | undefined {
    const old = this.remove(id);
    if (!old) return undefined;
    const canonical = canonicalFields(given);
    if (groupIds && !('group_list' in canonical)) canonical.group_list = this.groupList(groupIds);
    const fields = ordered(deriveFields({ ...old.fields, ...canonical }, canonical, this.lookups));
    const users = userIds ?? old.userIds ?? [];
    const entry: Entry = { id, groupIds: groupIds ?? old.groupIds, fields };
    if (users.length > 0) entry.userIds = users;
    this.insert(entry);
    return entry;
  }

  /** Deletes an entry from every view; returns it, or undefined when it did not exist. */
  remove(id: number): Entry | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    this.entries.delete(id);
    this.entryJson.delete(id);
    for (const groupId of entry.groupIds) this.byGroup.get(groupId)?.delete(id);
    for (const userId of entry.userIds ?? []) this.byUser.get(userId)?.delete(id);
    const teacherId = positiveInt(entry.fields.teacher_id);
    if (teacherId !== undefined) this.byTeacher.get(teacherId)?.delete(id);
    this.invalidate(entry);
    return entry;
  }

  private groupList(groupIds: readonly number[]): string {
    return groupIds.map((id) => this.groups.get(id)?.name ?? String(id)).join(', ');
  }

  private insert(entry: Entry): void {
    this.entries.set(entry.id, entry);
    this.maxId = Math.max(this.maxId, entry.id);
    for (const groupId of entry.groupIds) addTo(this.byGroup, groupId, entry.id);
    for (const userId of entry.userIds ?? []) addTo(this.byUser, userId, entry.id);
    addTo(this.byTeacher, positiveInt(entry.fields.teacher_id), entry.id);
    this.invalidate(entry);
  }

  private invalidate(entry: Entry): void {
    for (const groupId of entry.groupIds) {
      for (const key of [`g:${groupId}`, `p:${groupId}:1`, `p:${groupId}:2`]) this.bodies.delete(key);
      // A member with electives has a body of their own, which shows the group's classes too.
      for (const userId of this.usersByGroup.get(groupId) ?? []) this.bodies.delete(`u:${userId}`);
    }
    for (const userId of entry.userIds ?? []) this.bodies.delete(`u:${userId}`);
    const teacherId = positiveInt(entry.fields.teacher_id);
    if (teacherId !== undefined) this.bodies.delete(`e:${teacherId}`);
  }

  private cached(key: string, build: () => Buffer): Buffer {
    let body = this.bodies.get(key);
    if (!body) {
      body = build();
      this.bodies.set(key, body);
    }
    return body;
  }

  /** A timetable of entries; `forGroup` when it is that group's (a legacy deployment then sends only its row). */
  private scheduleBody(ids: Iterable<number> | undefined, forGroup?: number): Buffer {
    const entries = [...(ids ?? [])].map((id) => this.entries.get(id)).filter((entry) => entry !== undefined);
    const parts = entries.sort(compareEntries).flatMap((entry) => this.rowTexts(entry, forGroup));
    const success = isLegacy(this.wireFormat.dialect) ? '' : '"success":true,';
    return Buffer.from(`{${success}"subjects":[${parts.join(',')}]}`);
  }

  /**
   * The rows an entry is sent as: itself, or in the legacy dialects one row per group for a class taught to
   * several groups (in a group's timetable only that group's row). Split rows are not cached: the bodies are.
   */
  private rowTexts(entry: Entry, forGroup: number | undefined): string[] {
    if (!isLegacy(this.wireFormat.dialect) || !sentPerGroup(entry)) return [this.entryText(entry)];
    // An elective from another group's class, in a personal timetable: the class once, not one row per group.
    if (forGroup !== undefined && !entry.groupIds.includes(forGroup)) return [this.entryText(entry)];
    return entry.groupIds.flatMap((groupId, index) => {
      if (forGroup !== undefined && groupId !== forGroup) return [];
      const name = this.groups.get(groupId)?.name ?? String(groupId);
      const row = perGroupRow(this.sentFields(entry), entry.id, index, name);
      return [JSON.stringify(wireEntry(row, this.wireFormat))];
    });
  }

  private entryText(entry: Entry): string {
    let text = this.entryJson.get(entry.id);
    if (text === undefined) {
      text = JSON.stringify(wireEntry(this.sentFields(entry), this.wireFormat));
      this.entryJson.set(entry.id, text);
    }
    return text;
  }

  /** An entry's fields as this deployment holds them: a legacy one has control characters in some text. */
  private sentFields(entry: Entry): Record<string, unknown> {
    return isLegacy(this.wireFormat.dialect) ? withControlCharacters(entry.fields) : entry.fields;
  }

  /** A successful body: `success: true` and the payload, or the payload alone in the legacy dialect. */
  private envelope(payload: Record<string, unknown>): Buffer {
    return this.json(isLegacy(this.wireFormat.dialect) ? payload : { success: true, ...payload });
  }

  private json(value: unknown): Buffer {
    return Buffer.from(JSON.stringify(value));
  }
}
