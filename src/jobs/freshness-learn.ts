/**
 * What one successful refresh teaches the freshness planner (docs/design.md#freshness): which sources must show
 * the change it published (they are refreshed at once, as `related`), and whether the source is explained by
 * others (parked). Runs in the `adaptive` refresh policy only.
 *
 * A change is spread by the refresh that saw it first, whatever its reason. The sources it queues are every
 * one the same change shows in: the teachers of the changed classes (old and new), the groups their `group_list`
 * names (the other groups of a shared lecture), the students of those groups, and the students who have the class
 * as one of their own (an elective: a personal refresh finds it as a class its group's recorded entries lack).
 * One key per class (store/spread-claims.ts) keeps the version last spread, for REFRESH_MAX_WAIT and an interval
 * more: a refresh spreads a class whose version it saw is not the stored one, and stores its own, so the
 * refreshes it queued see the version spread already and queue nothing for it (spreading again would bounce the
 * change between a group and its students for as long as each finds it "new" in its own feed), while a later
 * version, a return to an earlier one included, is spread again. A teacher or a student that sees a class leave
 * spreads that without storing `gone`: their own view may be all that changed, and only a group, whose
 * timetable the class left, stores it. So a change costs one fetch of the finder plus about one of each source
 * that may show it. The rate of change the planner learns counts the changes a source's refreshes spread.
 */
import type { Config } from '../config.ts';
import type { ParkedBy } from '../store/freshness-store.ts';
import type { SourceRegistry } from '../store/registry.ts';
import type { SourceRelations } from '../store/source-relations.ts';
import { GONE, type SeenChange, type SpreadClaims } from '../store/spread-claims.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import { derivedName } from '../timetable/calendar-name.ts';
import { mayHaveClassSoon } from '../timetable/class-soon.ts';
import { entryDigest, hasDigest, matchesView, timetableDigest } from '../timetable/entry-digest.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import type { TimetableEntry } from '../timetable/types.ts';
import type { RefreshReason } from './contract.ts';
import type { RefreshLearning } from './freshness-plan.ts';
import type { PublicationFacts } from './publish-timetable.ts';
import { enqueueRefresh, type Queues, type RefreshJobSettings } from './queues.ts';

/** Classes of a student's own beyond which their timetable is taken as unlike their group's, not as electives. */
const MAX_ELECTIVES = 16;

/** What the learning reads and writes. */
export interface LearnDeps {
  readonly config: RefreshJobSettings & Pick<Config, 'timezone' | 'refreshIntervalMs' | 'refreshMaxWaitMs'>;
  readonly spreadClaims: Pick<SpreadClaims, 'decide'>;
  readonly queues: Queues;
  readonly relations: SourceRelations;
  readonly registry: Pick<SourceRegistry, 'isActive' | 'activeAmong'>;
  readonly subscriptions: Pick<SubscriptionStore, 'get'>;
}

/** One successful refresh, as the refresh job hands it over. */
export interface LearnInput {
  source: SourceKey;
  reason: RefreshReason;
  /** A `related` refresh: the source whose change it followed. */
  cause?: SourceKey | undefined;
  facts: PublicationFacts;
  now: number;
}

/**
 * Learns from a successful refresh: records what the source tells about others (a group's name, views and
 * entries; a student's group), queues the related refreshes of a change it found, and decides whether the
 * source is parked (handed to the planner, which keeps it with the source's state).
 */
export async function learnFromRefresh(ctx: LearnDeps, input: LearnInput): Promise<RefreshLearning> {
  const { source, facts } = input;
  const ref = sourceOf(source);
  let dependents = 0;
  if (ref.kind === 'group') {
    const id = Number(ref.id);
    await ctx.relations.recordGroup(id, derivedName({ kind: 'group', id }, facts.entries), facts.entries);
    dependents = (await ctx.relations.members([id])).length;
  }
  const parkedBy = await parkingOf(ctx, source, facts.entries);
  let spread: Spread | undefined;
  let relatedQueued = 0;
  if (facts.changed !== undefined) {
    const changedEntries = [...facts.changed.before, ...facts.changed.after];
    const named = await ctx.relations.groupsNamed(changedEntries.flatMap((entry) => entry.groups));
    spread = await decideSpread(ctx, source, facts.changed, named);
    if (spread !== undefined) relatedQueued = await queueRelated(ctx, input, spread, named);
  }
  return {
    changed: spread !== undefined,
    relatedQueued,
    ...(parkedBy === undefined ? {} : { parkedBy }),
    classSoon: mayHaveClassSoon(facts.entries, input.now, ctx.config.timezone),
    ...(dependents > 0 ? { dependents } : {}),
  };
}

/**
 * What explains the source now, if anything: groups never (they explain the others); a personal source equal
 * to a view of its group, while that group is refreshed; a teacher each of whose classes shows, identical, in a
 * group refreshed anyway. When in doubt (nothing recorded yet, no entries, no group): not parked.
 */
async function parkingOf(
  ctx: LearnDeps,
  source: SourceKey,
  entries: readonly TimetableEntry[],
): Promise<ParkedBy | undefined> {
  const ref = sourceOf(source);
  if (ref.kind === 'personal') return personalParking(ctx, ref.id, entries);
  if (ref.kind === 'employee') return (await coveredByGroups(ctx, entries)) ? 'groups' : undefined;
  return undefined;
}

async function personalParking(
  ctx: LearnDeps,
  subscriptionId: string,
  entries: readonly TimetableEntry[],
): Promise<ParkedBy | undefined> {
  const group = (await ctx.subscriptions.get(subscriptionId))?.group;
  await ctx.relations.recordMember(subscriptionId, group?.id);
  if (group === undefined) {
    await ctx.relations.recordElectives(subscriptionId, []);
    return undefined;
  }
  // The profile's name finds the group when a changed class names it, before the group's own refresh tells it.
  await ctx.relations.learnGroupName(group.name, group.id);
  const groupSource = `group:${group.id}`;
  const [active, views] = await Promise.all([ctx.registry.isActive(groupSource), ctx.relations.groupViews(group.id)]);
  const parked = active && views !== undefined && matchesView(views, timetableDigest(entries));
  const [groupEntries] = parked ? [] : await ctx.relations.groupEntrySets([group.id]);
  await ctx.relations.recordElectives(subscriptionId, ownClasses(entries, groupEntries));
  return parked ? groupSource : undefined;
}

/**
 * The ids of a student's classes of their own (electives): those not in their group's recorded entries. None when
 * the group's entries are not recorded, or when more than {@link MAX_ELECTIVES} differ: that is a timetable unlike
 * the group's (a record that is out of date), not electives, and the student's own rotation serves it.
 */
function ownClasses(entries: readonly TimetableEntry[], groupEntries: Buffer | undefined): number[] {
  if (groupEntries === undefined) return [];
  const own = entries.filter((entry) => !hasDigest(groupEntries, entryDigest(entry))).map((entry) => entry.id);
  return own.length > MAX_ELECTIVES ? [] : own;
}

/** Whether every entry shows, identical, in the recorded entries of an active group its `group_list` names. */
async function coveredByGroups(ctx: LearnDeps, entries: readonly TimetableEntry[]): Promise<boolean> {
  if (entries.length === 0) return false;
  const named = await ctx.relations.groupsNamed(entries.flatMap((entry) => entry.groups));
  const ids = [...new Set(named.values())];
  const active = await ctx.registry.activeAmong(ids.map((id) => `group:${id}`));
  const activeIds = ids.filter((_, index) => active[index]);
  const sets = new Map(
    (await ctx.relations.groupEntrySets(activeIds)).map((set, index) => [activeIds[index] as number, set] as const),
  );
  return entries.every((entry) => {
    const digest = entryDigest(entry);
    return entry.groups.some((name) => {
      const set = sets.get(named.get(name) ?? 0);
      return set !== undefined && hasDigest(set, digest);
    });
  });
}

/** The changed classes, old and new versions, as {@link changedEntries} lists them. */
type ChangedEntries = NonNullable<PublicationFacts['changed']>;

/** What a refresh spreads: the classes it spreads to every source that shows them, and whether to its own students. */
interface Spread {
  changed: ChangedEntries;
  /** A group spreads a version the first spread did not reach its students with (an unresolved group name). */
  toOwnMembers: boolean;
}

/** Enqueues of related refreshes in flight at once: a teacher of many groups must not fire thousands together. */
const ENQUEUE_CONCURRENCY = 32;

/**
 * How long a spread version is kept: beyond the longest a parked source waits and one interval more, so that no
 * related refresh it queued, however far behind a backlog, and no parked source's own refresh can find the
 * version unrecorded and spread it again.
 */
function spreadTtlMs(ctx: LearnDeps): number {
  return ctx.config.refreshMaxWaitMs + ctx.config.refreshIntervalMs;
}

/**
 * Decides which changed classes this refresh spreads (store/spread-claims.ts): those whose version it saw is not
 * the one spread last. A group records every version it spreads, a disappearance included (the class left the
 * group's own timetable); a teacher or a student records new versions only, and spreads a disappearance
 * without recording it: their view may have lost the class alone (a subgroup or group move, a dropped elective,
 * another teacher), and a recorded `gone` would hide the class's real cancellation later. Undefined when there
 * is nothing to spread.
 */
async function decideSpread(
  ctx: LearnDeps,
  source: SourceKey,
  changed: ChangedEntries,
  named: ReadonlyMap<string, number>,
): Promise<Spread | undefined> {
  const ref = sourceOf(source);
  const finderGroup = ref.kind === 'group' ? Number(ref.id) : undefined;
  const before = new Map(changed.before.map((entry) => [entry.id, entry]));
  const after = new Map(changed.after.map((entry) => [entry.id, entry]));
  const ids = [...new Set([...before.keys(), ...after.keys()])];
  const seen = ids.map((classId): SeenChange => {
    const [old, now] = [before.get(classId), after.get(classId)];
    const covers = new Set([old, now].flatMap((entry) => entry?.groups.flatMap((name) => named.get(name) ?? []) ?? []));
    if (finderGroup !== undefined) covers.add(finderGroup);
    return {
      classId,
      version: now === undefined ? GONE : entryDigest(now).toString('hex'),
      lost: old === undefined ? undefined : entryDigest(old).toString('hex'),
      record: now !== undefined || finderGroup !== undefined,
      covers: [...covers],
    };
  });
  const verdicts = await ctx.spreadClaims.decide(seen, finderGroup, spreadTtlMs(ctx));
  const spread = new Set(ids.filter((_, index) => verdicts[index] === 'spread'));
  const toOwnMembers = verdicts.includes('members');
  if (spread.size === 0 && !toOwnMembers) return undefined;
  return {
    changed: {
      before: changed.before.filter((entry) => spread.has(entry.id)),
      after: changed.after.filter((entry) => spread.has(entry.id)),
    },
    toOwnMembers,
  };
}

/**
 * Queues a `related` refresh of every active source that must show the change, but the source itself. The cost
 * per changed class: a few reads for its targets, one `ZMSCORE` for all of them, and an enqueue of each active
 * target (about six commands, {@link ENQUEUE_CONCURRENCY} at a time).
 */
async function queueRelated(
  ctx: LearnDeps,
  input: LearnInput,
  spread: Spread,
  named: ReadonlyMap<string, number>,
): Promise<number> {
  const targets = await relatedSources(ctx, input.source, spread, named);
  const active = await ctx.registry.activeAmong(targets);
  const queued = targets.filter((_, index) => active[index]);
  await inBatches(queued, ENQUEUE_CONCURRENCY, (target) =>
    enqueueRefresh(ctx.queues, ctx.config, target, {
      reason: 'related',
      now: input.now,
      followUp: true,
      cause: input.source,
    }),
  );
  return queued.length;
}

/** Runs `task` on each item, at most `limit` at once. */
async function inBatches<T>(items: readonly T[], limit: number, task: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const runner = async () => {
    while (next < items.length) await task(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, runner));
}

/**
 * The sources the spread classes show in: their teachers, old and new; the groups they name; the students of
 * those groups (and of the source itself when it is a group); the students whose classes of their own they are
 * (electives, which name no group). Only the students of the source itself for a group that spreads a version
 * to its own students. Without the source itself.
 */
async function relatedSources(
  ctx: LearnDeps,
  source: SourceKey,
  spread: Spread,
  named: ReadonlyMap<string, number>,
): Promise<SourceKey[]> {
  const entries = [...spread.changed.before, ...spread.changed.after];
  const teachers = entries.flatMap((entry) => (entry.teacher.id === null ? [] : [`employee:${entry.teacher.id}`]));
  const groupIds = new Set(entries.flatMap((entry) => entry.groups.flatMap((name) => named.get(name) ?? [])));
  const groups = [...groupIds].map((id) => `group:${id}`);
  const ref = sourceOf(source);
  if (ref.kind === 'group') groupIds.add(Number(ref.id));
  const [students, electiveStudents] = await Promise.all([
    ctx.relations.members([...groupIds]),
    ctx.relations.electiveStudents(entries.map((entry) => entry.id)),
  ]);
  const all = new Set([...teachers, ...groups, ...students, ...electiveStudents]);
  all.delete(source);
  return [...all];
}
