/**
 * The change process of the freshness benchmark (pure): the university as the benchmark follows it, which feeds
 * a change to one entry must reach, and a seeded plan of room changes — Poisson arrivals, groups picked with a
 * Zipf skew (a few groups change far more often), a share of changes to students' electives (visible in one
 * personal timetable only), shared lectures reaching every group of theirs.
 */
import { createRandom, type Random } from '../../src/simulator/random.ts';

/** A class the benchmark may change: the followed groups that show it, its teacher, its subgroup or its student. */
export interface WorldEntry {
  id: number;
  /** Followed groups whose timetables show it (a shared lecture has several; an elective none). */
  groups: readonly number[];
  teacher?: number;
  /** Subgroup from its note: only that subgroup's students see it in their personal timetables. */
  subgroup?: number;
  /** The user whose elective it is. */
  electiveOf?: number;
}

/** A student with a personal subscription. */
export interface WorldUser {
  id: number;
  groupId: number;
  subgroup: number;
}

/** What the benchmark follows: group ids (their order is the Zipf rank), teacher ids, classes and students. */
export interface World {
  groups: readonly number[];
  teachers: ReadonlySet<number>;
  entries: readonly WorldEntry[];
  users: readonly WorldUser[];
}

/** A feed a change must reach: `id` is the group's, the teacher's or the user's id. */
export interface AffectedFeed {
  kind: 'group' | 'teacher' | 'personal';
  id: number;
}

/** One change of the plan: at `atMs` after the phase start, entry `entryId` moves to room `room`. */
export interface PlannedChange {
  n: number;
  atMs: number;
  entryId: number;
  room: string;
  /** In no group's timetable: an elective. */
  personalOnly: boolean;
  feeds: readonly AffectedFeed[];
}

/** Settings of {@link planChanges}. */
export interface ChangePlanOptions {
  seed: number | string;
  /** Mean arrivals per minute (Poisson). */
  perMinute: number;
  durationMs: number;
  /** Share of changes made to an elective. */
  electiveShare: number;
  /** Zipf exponent of the group pick: 0 is uniform, 1 makes the first group ~1/H(n) of all group changes. */
  zipf: number;
  /** An entry changed is not changed again for this long, so that its room token stays to be seen. */
  cooldownMs: number;
}

/** The room of the n-th change: the same width for every n, so that no token is part of another. */
export function roomToken(n: number): string {
  return `Ф-${100_000 + n}`;
}

/** The feeds that show `entry`: its followed groups, its teacher if followed, the students who see it. */
export function affectedFeeds(world: World, entry: WorldEntry): AffectedFeed[] {
  const feeds: AffectedFeed[] = entry.groups.map((id) => ({ kind: 'group', id }));
  if (entry.teacher !== undefined && world.teachers.has(entry.teacher))
    feeds.push({ kind: 'teacher', id: entry.teacher });
  for (const user of world.users) {
    const inGroup = entry.groups.includes(user.groupId) && (entry.subgroup ?? user.subgroup) === user.subgroup;
    if (inGroup || entry.electiveOf === user.id) feeds.push({ kind: 'personal', id: user.id });
  }
  return feeds;
}

/** Cumulative Zipf weights of ranks 1…n with exponent `s`, normalised to end at 1. */
export function zipfCumulative(n: number, s: number): number[] {
  const weights = Array.from({ length: n }, (_, rank) => 1 / (rank + 1) ** s);
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  let running = 0;
  return weights.map((weight) => (running += weight / total));
}

/** The seeded plan of changes over `durationMs`; the same options give the same plan. */
export function planChanges(world: World, options: ChangePlanOptions): PlannedChange[] {
  const random = createRandom(options.seed, 'freshness-changes');
  const byGroup = new Map<number, WorldEntry[]>(world.groups.map((id) => [id, []]));
  for (const entry of world.entries) for (const id of entry.groups) byGroup.get(id)?.push(entry);
  const electives = world.entries.filter((entry) => entry.groups.length === 0);
  const cumulative = zipfCumulative(world.groups.length, options.zipf);
  const lastChanged = new Map<number, number>();
  const free = (entry: WorldEntry, at: number) => at - (lastChanged.get(entry.id) ?? -Infinity) >= options.cooldownMs;
  const changes: PlannedChange[] = [];
  const perMs = options.perMinute / 60_000;
  for (let at = arrival(random, perMs); at < options.durationMs; at += arrival(random, perMs)) {
    const elective = electives.length > 0 && random.chance(options.electiveShare);
    const entry = elective
      ? pickFree(random, electives, (candidate) => free(candidate, at))
      : pickGroupEntry(random, world.groups, cumulative, byGroup, (candidate) => free(candidate, at));
    if (entry === undefined) continue;
    lastChanged.set(entry.id, at);
    const n = changes.length + 1;
    const feeds = affectedFeeds(world, entry);
    changes.push({ n, atMs: Math.round(at), entryId: entry.id, room: roomToken(n), personalOnly: elective, feeds });
  }
  return changes;
}

/** The wait until the next Poisson arrival, ms. */
function arrival(random: Random, perMs: number): number {
  return -Math.log(1 - random.next()) / perMs;
}

function pickFree(random: Random, entries: readonly WorldEntry[], free: (entry: WorldEntry) => boolean) {
  const candidates = entries.filter(free);
  return candidates.length === 0 ? undefined : random.pick(candidates);
}

/** A group by Zipf rank, then one of its free entries; a few more draws when the group has none free. */
function pickGroupEntry(
  random: Random,
  groups: readonly number[],
  cumulative: readonly number[],
  byGroup: ReadonlyMap<number, readonly WorldEntry[]>,
  free: (entry: WorldEntry) => boolean,
): WorldEntry | undefined {
  for (let attempt = 0; attempt < 20; attempt++) {
    const u = random.next();
    const rank = Math.max(
      0,
      cumulative.findIndex((edge) => u < edge),
    );
    const entry = pickFree(random, byGroup.get(groups[rank] as number) ?? [], free);
    if (entry !== undefined) return entry;
  }
  return undefined;
}
