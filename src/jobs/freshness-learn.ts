/**
 * What one successful refresh teaches the freshness planner (docs/design.md#freshness): which sources must show
 * the change it published (they are refreshed at once, as `related`), and whether the source is explained by
 * others (parked). Runs in the `adaptive` refresh policy only.
 *
 * A change is spread once, by the refresh that saw it first, whatever its reason. The sources it queues are every
 * one the same change shows in: the teachers of the changed classes (old and new), the groups their `group_list`
 * names (the other groups of a shared lecture), the students of those groups, and the students who have the class
 * as one of their own (an elective: a personal refresh finds it as a class its group's recorded entries lack).
 * Each changed class is claimed (store/spread-claims.ts) for two intervals by the refresh that spreads it: the
 * refreshes it queued then see a change claimed already and queue nothing for it (spreading again would bounce
 * the change between a group and its students for as long as each finds it "new" in its own feed), while a
 * different change one of them happens to see first is theirs to spread. So a change costs at most one fetch of
 * the finder plus one of each source that shows it. The rate of change the planner learns counts the changes a
 * source's refreshes saw first.
 */
import type { Config } from '../config.ts';
import type { ParkedBy } from '../store/freshness-store.ts';
import type { SourceRegistry } from '../store/registry.ts';
import type { SourceRelations } from '../store/source-relations.ts';
import type { SpreadClaims } from '../store/spread-claims.ts';
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
  readonly config: RefreshJobSettings & Pick<Config, 'timezone' | 'refreshIntervalMs'>;
  readonly spreadClaims: Pick<SpreadClaims, 'claim'>;
  readonly queues: Queues;
  readonly relations: SourceRelations;
  readonly registry: Pick<SourceRegistry, 'isActive'>;
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
  const seenFirst = facts.changed === undefined ? undefined : await claimChanges(ctx, facts.changed);
  const relatedQueued = seenFirst === undefined ? 0 : await queueRelated(ctx, input, seenFirst);
  return {
    changed: seenFirst !== undefined,
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
  const active = await Promise.all(ids.map((id) => ctx.registry.isActive(`group:${id}`)));
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

/** How long a spread change stays claimed: two intervals, beyond any related refresh it queued. */
function claimTtlMs(ctx: LearnDeps): number {
  return 2 * ctx.config.refreshIntervalMs;
}

/**
 * Claims the changed classes this refresh saw first (a class by its id and what it became, or `gone`) and
 * answers their old and new versions; undefined when another refresh claimed every one of them.
 */
async function claimChanges(ctx: LearnDeps, changed: ChangedEntries): Promise<ChangedEntries | undefined> {
  const after = new Map(changed.after.map((entry) => [entry.id, entry]));
  const ids = [...new Set([...changed.before.map((entry) => entry.id), ...after.keys()])];
  const names = ids.map((id) => {
    const now = after.get(id);
    return `${id}-${now === undefined ? 'gone' : entryDigest(now).toString('hex')}`;
  });
  const claimed = await ctx.spreadClaims.claim(names, claimTtlMs(ctx));
  const mine = new Set(ids.filter((_, index) => claimed[index]));
  if (mine.size === 0) return undefined;
  return {
    before: changed.before.filter((entry) => mine.has(entry.id)),
    after: changed.after.filter((entry) => mine.has(entry.id)),
  };
}

/** Queues a `related` refresh of every active source that must show the change, but the source itself. */
async function queueRelated(ctx: LearnDeps, input: LearnInput, changed: ChangedEntries): Promise<number> {
  const targets = await relatedSources(ctx, input.source, changed);
  const active = await Promise.all(targets.map((target) => ctx.registry.isActive(target)));
  const queued = targets.filter((_, index) => active[index]);
  await Promise.all(
    queued.map((target) =>
      enqueueRefresh(ctx.queues, ctx.config, target, {
        reason: 'related',
        now: input.now,
        followUp: true,
        cause: input.source,
      }),
    ),
  );
  return queued.length;
}

/**
 * The sources the changed entries show in: their teachers, old and new; the groups they name; the students of
 * those groups (and of the source itself when it is a group); the students whose classes of their own they are
 * (electives, which name no group). Without the source itself.
 */
async function relatedSources(ctx: LearnDeps, source: SourceKey, changed: ChangedEntries): Promise<SourceKey[]> {
  const entries = [...changed.before, ...changed.after];
  const teachers = entries.flatMap((entry) => (entry.teacher.id === null ? [] : [`employee:${entry.teacher.id}`]));
  const groupIds = new Set((await ctx.relations.groupsNamed(entries.flatMap((entry) => entry.groups))).values());
  const ref = sourceOf(source);
  if (ref.kind === 'group') groupIds.add(Number(ref.id));
  const groups = [...groupIds].map((id) => `group:${id}`);
  const [students, electiveStudents] = await Promise.all([
    ctx.relations.members([...groupIds]),
    ctx.relations.electiveStudents(entries.map((entry) => entry.id)),
  ]);
  const all = new Set([...teachers, ...groups, ...students, ...electiveStudents]);
  all.delete(source);
  return [...all];
}
