/**
 * The population of the freshness benchmark, read from the simulator: the followed groups (each with enough
 * students), the teachers of their classes first, ten students per group signing up, and one student in ten
 * with an elective of their own (a simulator entry with `userIds`, taught by someone nobody follows, so that
 * its changes show in that one personal timetable only).
 */
import { createRandom } from '../../src/simulator/random.ts';
import { rawRequest } from '../../testkit/processes.ts';
import type { World, WorldEntry, WorldUser } from './freshness-changes.ts';
import { simulatorControl } from './soak-setup.ts';

/** How many of each kind the benchmark follows. */
export interface FreshnessSizes {
  groups: number;
  teachers: number;
  usersPerGroup: number;
  /** One student in this many gets an elective. */
  electiveEvery: number;
}

/** The university in small: 2,000 sources as 150 groups, 350 teachers and 1,500 personal timetables. */
export const DEFAULT_SIZES: FreshnessSizes = { groups: 150, teachers: 350, usersPerGroup: 10, electiveEvery: 10 };

/** What the phases share: the followed world (electives added per phase) and the students' credentials. */
export interface University {
  groups: number[];
  teachers: number[];
  /** Group classes, without electives. */
  entries: WorldEntry[];
  users: (WorldUser & { token: string })[];
  /** The bodies of `POST /_sim/entries` that add the electives, in order. */
  electives: Record<string, unknown>[];
}

const SUBGROUP_NOTE = /(\d+)\s*подгрупп/;
/** Classes followed must still be taught this long from now. */
const STILL_TAUGHT_MS = 14 * 86_400_000;

/** `DD.MM.YY` (the simulator's standard dialect) → epoch ms of that day; 0 when unreadable. */
export function dayOf(text: string): number {
  const match = /^(\d{2})\.(\d{2})\.(\d{2})$/.exec(text);
  return match ? Date.UTC(2000 + Number(match[3]), Number(match[2]) - 1, Number(match[1])) : 0;
}

interface SimUser {
  id: number;
  token: string;
  groupId: number;
  subgroup: number;
}

/** Reads the university from the simulator (its group timetables through the API, before any stats count). */
export async function readUniversity(simulatorUrl: string, sizes: FreshnessSizes, seed: number): Promise<University> {
  const { users } = (await simulatorControl(simulatorUrl, 'GET', '/_sim/users')) as { users: SimUser[] };
  const { groups } = (await simulatorControl(simulatorUrl, 'GET', '/_sim/groups')) as { groups: { id: number }[] };
  const { employees } = (await simulatorControl(simulatorUrl, 'GET', '/_sim/employees')) as {
    employees: { id: number; teacher: boolean }[];
  };
  const members = new Map<number, SimUser[]>();
  for (const user of [...users].sort((a, b) => a.id - b.id))
    members.set(user.groupId, [...(members.get(user.groupId) ?? []), user]);
  const groupIds = groups
    .map((group) => group.id)
    .sort((a, b) => a - b)
    .filter((id) => (members.get(id)?.length ?? 0) >= sizes.usersPerGroup)
    .slice(0, sizes.groups);
  if (groupIds.length < sizes.groups)
    throw new Error(`only ${groupIds.length} simulator groups have ${sizes.usersPerGroup} students`);
  const entries = await groupEntries(simulatorUrl, groupIds);
  const taught = new Map<number, number>();
  for (const entry of entries)
    if (entry.teacher !== undefined) taught.set(entry.teacher, (taught.get(entry.teacher) ?? 0) + 1);
  const teaching = employees.filter((employee) => employee.teacher).map((employee) => employee.id);
  const teachers = [
    ...[...taught.keys()].sort((a, b) => (taught.get(b) ?? 0) - (taught.get(a) ?? 0) || a - b),
    ...teaching.filter((id) => !taught.has(id)).sort((a, b) => a - b),
  ].slice(0, sizes.teachers);
  const followed = new Set(teachers);
  const outsiders = teaching.filter((id) => !followed.has(id));
  const chosen = groupIds.flatMap((id) => (members.get(id) ?? []).slice(0, sizes.usersPerGroup));
  const random = createRandom(seed, 'freshness-electives');
  const electives = chosen
    .filter((_, index) => index % sizes.electiveEvery === 0)
    .map((user) => ({
      userIds: [user.id],
      subject_name: 'Факультатив',
      subject_kind_name: 'практика',
      teacher_id: outsiders.length > 0 ? random.pick(outsiders) : random.pick(teaching),
      day_week_schedule: random.int(1, 6),
      time_interval_id: random.int(5, 7),
      num_auditorium_schedule: String(random.int(101, 599)),
    }));
  return {
    groups: groupIds,
    teachers,
    entries,
    users: chosen.map(({ id, token, groupId, subgroup }) => ({ id, token, groupId, subgroup })),
    electives,
  };
}

/** Adds the electives to the simulator (after a reset the same ids come back); answers the world with them. */
export async function addElectives(simulatorUrl: string, university: University): Promise<World> {
  const electives: WorldEntry[] = [];
  for (const body of university.electives) {
    const added = (await simulatorControl(simulatorUrl, 'POST', '/_sim/entries', body)) as { id: number };
    electives.push({ id: added.id, groups: [], electiveOf: (body.userIds as number[])[0] as number });
  }
  return {
    groups: university.groups,
    teachers: new Set(university.teachers),
    entries: [...university.entries, ...electives],
    users: university.users,
  };
}

/** The classes of the followed groups, each with every followed group that shows it. */
async function groupEntries(simulatorUrl: string, groupIds: readonly number[]): Promise<WorldEntry[]> {
  const byId = new Map<number, WorldEntry & { groups: number[] }>();
  for (const groupId of groupIds) {
    const body = (await rawRequest(`${simulatorUrl}/groups/${groupId}/schedule`)).body.toString('utf8');
    const { subjects } = JSON.parse(body) as {
      subjects: { id: number; teacher_id: number; note_schedule: string; finish_day_schedule: string }[];
    };
    for (const subject of subjects) {
      // A class that ended weeks ago is no longer in the feeds: a change to it would never arrive anywhere.
      if (dayOf(subject.finish_day_schedule) < Date.now() + STILL_TAUGHT_MS) continue;
      const known = byId.get(subject.id);
      if (known) {
        known.groups.push(groupId);
        continue;
      }
      const subgroup = SUBGROUP_NOTE.exec(subject.note_schedule ?? '')?.[1];
      byId.set(subject.id, {
        id: subject.id,
        groups: [groupId],
        ...(subject.teacher_id > 0 ? { teacher: subject.teacher_id } : {}),
        ...(subgroup === undefined ? {} : { subgroup: Number(subgroup) }),
      });
    }
  }
  return [...byId.values()];
}
