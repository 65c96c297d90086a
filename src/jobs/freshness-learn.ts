/**
 * What one successful refresh teaches the freshness planner (docs/design.md#freshness): which sources must show
 * the change it published (they are refreshed at once, as `related`), and whether the source is explained by
 * others (parked). Runs in the `adaptive` refresh policy only.
 *
 * A change is spread once, by the refresh that found it. The sources it queues are every one the same change
 * shows in: the teachers of the changed classes (old and new), the groups their `group_list` names (the other
 * groups of a shared lecture), the students of those groups, and the students who have the class as one of their
 * own (an elective: a personal refresh finds it as a class its group's recorded entries lack). A `related`
 * refresh that then publishes the same change queues nothing: everything it could name was queued already, and
 * spreading again would bounce the change between a group and its students for as long as each finds it "new" in
 * its own feed. So a change costs at most one fetch of the finder plus one of each related source. A different change a related refresh happens
 * to find as well reaches its own related sources on their own turn, as before.
 */
import type { Config } from '../config.ts';
import type { ParkedBy } from '../store/freshness-store.ts';
import type { SourceRegistry } from '../store/registry.ts';
import type { SourceRelations } from '../store/source-relations.ts';
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
  readonly config: RefreshJobSettings & Pick<Config, 'timezone'>;
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
  if (ref.kind === 'group') {
    const id = Number(ref.id);
    await ctx.relations.recordGroup(id, derivedName({ kind: 'group', id }, facts.entries), facts.entries);
  }
  const parkedBy = await parkingOf(ctx, source, facts.entries);
  // A related refresh brings a change another source's refresh found: it neither spreads it nor counts it.
  const foundHere = facts.changed !== undefined && input.reason !== 'related';
  const relatedQueued = foundHere ? await queueRelated(ctx, input) : 0;
  return {
    changed: foundHere,
    relatedQueued,
    ...(parkedBy === undefined ? {} : { parkedBy }),
    classSoon: mayHaveClassSoon(facts.entries, input.now, ctx.config.timezone),
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

/** Queues a `related` refresh of every active source that must show the change, but the source itself. */
async function queueRelated(ctx: LearnDeps, input: LearnInput): Promise<number> {
  const targets = await relatedSources(ctx, input);
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
async function relatedSources(ctx: LearnDeps, input: LearnInput): Promise<SourceKey[]> {
  const { before = [], after = [] } = input.facts.changed ?? {};
  const entries = [...before, ...after];
  const teachers = entries.flatMap((entry) => (entry.teacher.id === null ? [] : [`employee:${entry.teacher.id}`]));
  const groupIds = new Set((await ctx.relations.groupsNamed(entries.flatMap((entry) => entry.groups))).values());
  const ref = sourceOf(input.source);
  if (ref.kind === 'group') groupIds.add(Number(ref.id));
  const groups = [...groupIds].map((id) => `group:${id}`);
  const [students, electiveStudents] = await Promise.all([
    ctx.relations.members([...groupIds]),
    ctx.relations.electiveStudents(entries.map((entry) => entry.id)),
  ]);
  const all = new Set([...teachers, ...groups, ...students, ...electiveStudents]);
  all.delete(input.source);
  return [...all];
}
