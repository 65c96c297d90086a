/** The publishing half of a refresh: compare, expand, guard, render, store, fan out. */

import type { Config } from '../config.ts';
import { type FeedSettings, renderFeed, renderVariant, settingsHash } from '../feeds/build-feed.ts';
import { notifyChangeSet } from '../feeds/notify-changes.ts';
import { isMassDeletion, nextExpiry } from '../feeds/publication-diff.ts';
import { diffRefresh, type RefreshDiff } from '../feeds/refresh-diff.ts';
import { packJsonOffLoop } from '../lib/packed-json.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { execOrThrow } from '../lib/redis-transaction.ts';
import type { Logger } from '../logger.ts';
import type { PushKindTargets } from '../push/adapter.ts';
import { encodeFeed, type FeedStore } from '../store/feed-store.ts';
import type { GroupDirectory } from '../store/group-directory.ts';
import type { RedisKeys } from '../store/keys.ts';
import type { KnownEmployees } from '../store/known-employees.ts';
import type { NotifyOutbox } from '../store/notify-outbox.ts';
import type { SourceRegistry, SourceState } from '../store/registry.ts';
import { normaliseEntries, type Snapshot, type SnapshotStore } from '../store/snapshot-store.ts';
import { StudyPlanStore } from '../store/study-plan-store.ts';
import type { TeacherDirectory } from '../store/teacher-directory.ts';
import type { TermCountStore } from '../store/term-counts.ts';
import { derivedName, isPlaceholderName } from '../timetable/calendar-name.ts';
import { changedEntries } from '../timetable/entry-digest.ts';
import { wordingOf } from '../timetable/event-text.ts';
import type { ChangeSet } from '../timetable/notify-change.ts';
import type { FoundBy, PublishedState } from '../timetable/publication.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import { type PlanNote, type StudyPlanNotes, studyPlanNotes } from '../timetable/study-plan.ts';
import { termStartDates } from '../timetable/terms.ts';
import type { EventWording, TimetableEntry } from '../timetable/types.ts';
import { localDate } from '../timetable/zoned-time.ts';
import { type ActivationDeps, activateSource } from './activation.ts';
import type { RefreshJobResult, RefreshReason } from './contract.ts';
import type { FetchedTimetable } from './fetch-source.ts';
import { enqueueNotifyFanout, enqueuePush, enqueueRefresh } from './queues.ts';
import { syncTermStarts, type TermStartsDeps } from './term-starts.ts';

/** What {@link markFeedStale} uses. */
export interface MarkStaleDeps {
  readonly config: FeedSettings;
  readonly registry: Pick<SourceRegistry, 'markStale'>;
  readonly feeds: Pick<FeedStore, 'validators' | 'replaceIf'>;
  readonly snapshots: Pick<SnapshotStore, 'load'>;
}

/**
 * What {@link publishTimetable} uses: the stores a publication writes in one transaction, what it records on
 * the way (group names, teachers, term starts), and the queues it fans out to.
 */
export type PublishDeps = MarkStaleDeps &
  ActivationDeps &
  TermStartsDeps & {
    readonly config: Pick<Config, 'cancelledRetentionMs' | 'confirmDelayMs' | 'notifyHorizonMs'>;
    readonly redis: RedisClient;
    readonly keys: RedisKeys;
    readonly registry: SourceRegistry;
    readonly snapshots: SnapshotStore;
    readonly feeds: FeedStore;
    readonly termCounts: TermCountStore;
    readonly directory: Pick<GroupDirectory, 'record'>;
    readonly knownEmployees: Pick<KnownEmployees, 'record'>;
    readonly teachers: Pick<TeacherDirectory, 'recordSeen'>;
    /** The calendar kinds pushed to: every target of the source gets a push once it changed. */
    readonly pushKinds: readonly PushKindTargets<'idsForSource'>[];
    /** Change notifications: the outbox a change set is written to, and whether anyone listens. */
    readonly notify: {
      readonly outbox: Pick<NotifyOutbox, 'write'>;
      hasSubscribers(source: SourceKey): Promise<boolean>;
    };
  };

/** One fetched timetable to publish. */
export interface PublishInput {
  source: SourceKey;
  fetched: FetchedTimetable;
  reason: RefreshReason;
  /** A `related` refresh: the source whose change it follows (its change record names it). */
  cause?: SourceKey | undefined;
  now: number;
}

/** What a publication tells the freshness learning (jobs/freshness-learn.ts) besides the job's result. */
export interface PublicationFacts {
  /** The timetable the feed shows now, normalised as stored. */
  entries: readonly TimetableEntry[];
  /** The entries a change record was written for, as they were and as they are; absent: no change, or a first publication. */
  changed?: { before: TimetableEntry[]; after: TimetableEntry[] } | undefined;
}

/** A publication's outcome: the job's result, and what the freshness learning reads. */
export interface Publication {
  result: RefreshJobResult;
  facts: PublicationFacts;
}

/** What is already stored for the source. */
interface Stored {
  snapshot: Snapshot | undefined;
  published: PublishedState | undefined;
  state: SourceState | undefined;
  feed: { etag?: string; staleSince?: number };
  pushOwed: boolean;
  /** Whether a chat or webhook listens to the source's changes. */
  notified: boolean;
  /** A personal source's study plan as last fetched successfully (absent: none, or not a personal source). */
  plan: readonly PlanNote[] | undefined;
}

/**
 * Publishes a fetched timetable. An unchanged timetable (same digest, same settings, nothing expiring, the
 * feed present and as fresh as the registry says) writes nothing but the registry; one that drops most
 * future classes waits for a confirming re-fetch.
 */
export async function publishTimetable(ctx: PublishDeps, input: PublishInput, log: Logger): Promise<Publication> {
  const { source, now } = input;
  const stored = await loadStored(ctx, source);
  // A public source is registered once the university has confirmed it exists (a request alone does not).
  if (stored.state === undefined && !source.startsWith('personal:')) await activateSource(ctx, source);
  const entries = keepInvalidEntries(input.fetched, stored.snapshot);
  const { hash } = entries;
  // Independent of each other: one wait for their round trips instead of one after the other.
  const [termStarts] = await Promise.all([
    deploymentTermStarts(ctx, source, entries.entries, stored.published, log),
    recordGroupName(ctx, source, input.fetched.entries),
    recordTeachers(ctx, source, input.fetched.entries),
  ]);
  // The configuration is the feed settings; their digest tells a settings change from an unchanged timetable.
  const studyPlan = stored.plan && studyPlanNotes(stored.plan, entries.entries, localDate(now, ctx.config.timezone));
  // A teacher's classes are titled with their groups and described without the teacher.
  const wording = wordingOf(sourceOf(source).kind);
  const settingsDigest = settingsHash(ctx.config, termStarts, studyPlan, wording);
  const problems = input.fetched.problems.length;
  if (isUnchanged(stored, hash, input.fetched.name, settingsDigest, now)) {
    // Counts lost, or kept from before this version: this timetable counts again, and may move the term starts.
    if (!(await ctx.termCounts.counts(source))) {
      await execOrThrow(ctx.termCounts.write(ctx.redis.multi(), source, entries.entries));
      await syncTermStarts(ctx, log, { source, termStarts });
    }
    if (input.reason !== 'rerender')
      await ctx.registry.recordSuccess(source, now, {
        occurrences: stored.state?.occurrences ?? 0,
        problems,
        changed: false,
      });
    const pushJobs = stored.pushOwed ? await fanOutPush(ctx, source) : 0;
    const result = { outcome: 'unchanged', occurrences: stored.state?.occurrences ?? 0, pushJobs } as const;
    return { result, facts: { entries: entries.entries } };
  }
  const diff = diffFor(ctx, stored, entries.entries, { hash, settingsDigest, termStarts, studyPlan, wording }, now);
  if (isMassDeletion(diff) && !isConfirmed(ctx, stored.state, hash, input.reason, now)) {
    await ctx.registry.setPending(source, hash, now);
    await enqueueRefresh(ctx.queues, ctx.config, source, {
      reason: 'confirm',
      now,
      followUp: true,
      delayMs: ctx.config.confirmDelayMs,
    });
    log.warn(
      { futureBefore: diff.futureBefore, futureRemoved: diff.futureRemoved },
      'refresh would remove most future classes; publishing only after a confirming re-fetch',
    );
    const result = {
      outcome: 'awaiting-confirmation',
      occurrences: stored.state?.occurrences ?? 0,
      pushJobs: 0,
    } as const;
    // The feed keeps showing the stored timetable until the deletion is confirmed: that is what is compared.
    return { result, facts: { entries: stored.snapshot?.entries ?? [] } };
  }
  // Google holds cancelled classes titled as such while they are in the feed: one leaving it is a write there.
  // New settings (the cancelled-title prefix, the zone, the term starts) may change Google's events without any
  // change record: the push compares with what Google holds and writes only what differs, so owing one is cheap.
  const settingsChanged = stored.published !== undefined && stored.published.settingsHash !== settingsDigest;
  // A class new to the timetable on a date already past shows in the feed but in no change record (it speaks of
  // what comes): Google is owed it all the same.
  const owesPush =
    diff.change !== undefined ||
    settingsChanged ||
    tombstonesLeft(stored.published, diff.state) ||
    liveAddedOrChanged(stored.published, diff.state);
  // Told only when someone listens, a publication came before (a first one is all "added") and the university
  // changed the timetable (new settings or term starts move classes nobody moved).
  const changeSet = stored.notified
    ? notifyChangeSet(diff, {
        source,
        name: input.fetched.name,
        stamp: diff.state.stamp,
        horizonMs: ctx.config.notifyHorizonMs,
        previousSnapshotHash: stored.published?.snapshotHash,
        snapshotHash: hash,
      })
    : undefined;
  const change = diff.change && { ...diff.change, foundBy: foundByOf(input) };
  await commit(
    ctx,
    source,
    { hash, fetchedAt: now, name: input.fetched.name, entries: entries.entries, problems: input.fetched.problems },
    { ...diff, change },
    { now, owesPush, changeSet },
  );
  // The registry follows the feed at once (readers see the new feed with its status); term starts come after.
  await recordPublication(ctx, input, stored.state, {
    occurrences: diff.occurrences.length,
    problems,
    changed: diff.change !== undefined,
  });
  await syncTermStarts(ctx, log, { source, termStarts });
  const pushJobs = owesPush || stored.pushOwed ? await fanOutPush(ctx, source) : 0;
  if (changeSet) await startNotifyFanout(ctx, changeSet, log);
  if (diff.change)
    log.info({ changes: diff.change.counts, occurrences: diff.occurrences.length, pushJobs }, 'feed published');
  const result = {
    outcome: 'published',
    occurrences: diff.occurrences.length,
    ...(diff.change ? { changes: diff.change.counts } : {}),
    pushJobs,
  } as const;
  return { result, facts: publicationFacts(entries.entries, stored.snapshot !== undefined, diff) };
}

/** Which refresh published a change: a related one names the source whose change it followed. */
function foundByOf(input: PublishInput): FoundBy {
  return input.reason === 'related' && input.cause !== undefined
    ? { reason: input.reason, source: input.cause }
    : { reason: input.reason };
}

/**
 * What the learning reads from a publication: the changed entries when a change record was written over an
 * earlier publication (a first one changes nothing anyone saw).
 */
function publicationFacts(
  entries: readonly TimetableEntry[],
  hadSnapshot: boolean,
  diff: RefreshDiff,
): PublicationFacts {
  return {
    entries,
    ...(hadSnapshot && diff.change ? { changed: changedEntries(diff.entriesBefore, diff.entriesAfter) } : {}),
  };
}

/**
 * A group's timetable tells the group's name (the one most of its entries list): the directory learns it, so
 * that people find the group by name. A timetable that does not tell (no entries, a tie) changes nothing.
 */
async function recordGroupName(ctx: PublishDeps, source: SourceKey, entries: readonly TimetableEntry[]): Promise<void> {
  const ref = sourceOf(source);
  if (ref.kind !== 'group') return;
  const subject = { kind: 'group', id: Number(ref.id) } as const;
  const name = derivedName(subject, entries);
  if (name !== undefined && !isPlaceholderName(subject, name)) await ctx.directory.record(subject.id, name);
}

/**
 * The teachers a timetable names exist, and so does a teacher whose timetable this is: first requests for their
 * timetables go before those for ids nobody vouches for when the first-request limits run short. Their names go
 * into the teacher directory, where the search on `/` finds them (one read per refresh; a write only for a
 * teacher new to it or renamed).
 */
async function recordTeachers(ctx: PublishDeps, source: SourceKey, entries: readonly TimetableEntry[]): Promise<void> {
  const ref = sourceOf(source);
  const ids = entries.map((entry) => entry.teacher.id);
  await Promise.all([
    ctx.knownEmployees.record(ref.kind === 'employee' ? [...ids, Number(ref.id)] : ids),
    ctx.teachers.recordSeen(entries.map((entry) => entry.teacher)),
  ]);
}

/**
 * A fetch records its success on the source; a re-render fetched nothing, so a feed that was stale (its
 * source failing) is stale again, re-rendered with the marker, since the time it became stale.
 */
async function recordPublication(
  ctx: PublishDeps,
  input: PublishInput,
  state: SourceState | undefined,
  counts: { occurrences: number; problems: number; changed: boolean },
): Promise<void> {
  if (input.reason !== 'rerender') return ctx.registry.recordSuccess(input.source, input.now, counts);
  if (state?.staleSince !== undefined) await markFeedStale(ctx, input.source, state.staleSince);
}

async function loadStored(ctx: PublishDeps, source: SourceKey): Promise<Stored> {
  const [{ snapshot, published }, state, feed, pushOwed, plan, notified] = await Promise.all([
    ctx.snapshots.load(source),
    ctx.registry.get(source),
    ctx.feeds.validators(source),
    ctx.snapshots.isPushOwed(source),
    storedPlan(ctx, source),
    ctx.notify.hasSubscribers(source),
  ]);
  return { snapshot, published, state, feed, pushOwed, plan, notified };
}

/**
 * The plan a personal source's classes are described with: the last one fetched successfully, however old (a
 * plan changes a few times a year, and dropping its lines on a passing failure would rewrite every event twice).
 */
async function storedPlan(ctx: PublishDeps, source: SourceKey): Promise<readonly PlanNote[] | undefined> {
  if (!source.startsWith('personal:')) return undefined;
  const stored = await new StudyPlanStore(ctx.redis, ctx.keys).load(source);
  if (stored === undefined || stored.fetchedAt === null) return undefined;
  return stored.subjects;
}

function isUnchanged(stored: Stored, hash: string, name: string, settingsDigest: string, now: number): boolean {
  const { snapshot, published, state, feed } = stored;
  const expiring = (published && nextExpiry(published)) ?? Number.POSITIVE_INFINITY;
  // The feed must exist and agree with the registry about staleness: otherwise render it again.
  return (
    snapshot?.hash === hash &&
    snapshot.name === name &&
    published?.settingsHash === settingsDigest &&
    expiring > now &&
    feed.etag !== undefined &&
    feed.staleSince === undefined &&
    state?.staleSince === undefined
  );
}

/**
 * Entries the university still sends but that fail validation (reported as problems) keep their last good
 * version: a typo in one entry, or a format change in all of them, must not cancel classes that still exist.
 */
function keepInvalidEntries(
  fetched: FetchedTimetable,
  previous: Snapshot | undefined,
): { entries: TimetableEntry[]; hash: string } {
  const invalid = new Set(fetched.problems.map((problem) => Number(problem.entryId)).filter(Number.isSafeInteger));
  const present = new Set(fetched.entries.map((entry) => entry.id));
  const kept = (previous?.entries ?? []).filter((entry) => invalid.has(entry.id) && !present.has(entry.id));
  return normaliseEntries([...fetched.entries, ...kept]);
}

/**
 * The deployment's term starts as they will be with this timetable counted (one parity for every feed);
 * logged when they differ from those the feed was last rendered with.
 */
async function deploymentTermStarts(
  ctx: PublishDeps,
  source: SourceKey,
  entries: readonly TimetableEntry[],
  published: PublishedState | undefined,
  log: Logger,
): Promise<string[]> {
  const terms = await ctx.termCounts.termStartsWith(ctx.config.weekParityAnchors, source, entries);
  const termStarts = termStartDates(terms);
  const before = published?.expansion?.termStarts;
  // The change itself is logged once, by whoever stores it (term-starts.ts); this is the feed's part in it.
  if (before !== undefined && before.join() !== termStarts.join())
    log.debug({ before, after: termStarts }, 'term starts changed: rendering the feed again');
  return termStarts;
}

function diffFor(
  ctx: PublishDeps,
  stored: Stored,
  entries: TimetableEntry[],
  digests: {
    hash: string;
    settingsDigest: string;
    termStarts: readonly string[];
    studyPlan: StudyPlanNotes | undefined;
    wording: EventWording;
  },
  now: number,
): RefreshDiff {
  return diffRefresh({
    settings: ctx.config,
    snapshot: stored.snapshot,
    published: stored.published,
    entries,
    snapshotHash: digests.hash,
    settingsHash: digests.settingsDigest,
    termStarts: digests.termStarts,
    studyPlan: digests.studyPlan,
    wording: digests.wording,
    now,
  });
}

/**
 * A held-back mass deletion is published when a later fetch, at least CONFIRM_DELAY later, returns the same timetable.
 */
function isConfirmed(
  ctx: PublishDeps,
  state: SourceState | undefined,
  hash: string,
  reason: RefreshReason,
  now: number,
): boolean {
  if (state?.pendingHash !== hash) return false;
  return reason === 'confirm' || now - (state.pendingSince ?? now) >= ctx.config.confirmDelayMs;
}

/** Whether a cancelled class left the feed (its time in it is over, or it came back). */
function tombstonesLeft(before: PublishedState | undefined, after: PublishedState): boolean {
  const kept = new Set(after.tombstones.map((tomb) => tomb.occurrence.uid));
  return (before?.tombstones ?? []).some((tomb) => !kept.has(tomb.occurrence.uid));
}

/**
 * Whether a live occurrence is new or has new content since the last publication, ended ones included. Live
 * occurrences that leave (frozen as published, or cancelled) are not counted: the feed still shows them alike,
 * or a tombstone or change record says so.
 */
function liveAddedOrChanged(before: PublishedState | undefined, after: PublishedState): boolean {
  if (before === undefined) return false;
  return Object.entries(after.occurrences).some(([uid, { hash }]) => before.occurrences[uid]?.hash !== hash);
}

/**
 * Stores snapshot, publication, feed, change record and the timetable's start-date counts in one transaction,
 * notes that targets are owed a push, and puts the change set people are told of into the outbox: published
 * means it will be told, even if the process dies right after.
 */
async function commit(
  ctx: PublishDeps,
  source: SourceKey,
  snapshot: Snapshot,
  diff: RefreshDiff,
  { now, owesPush, changeSet }: { now: number; owesPush: boolean; changeSet: ChangeSet | undefined },
): Promise<void> {
  // Everything written is made before the transaction; the compressions run on libuv's pool meanwhile.
  const [feed, packedSnapshot, packedPublished] = await Promise.all([
    encodeFeed(renderFeed(diff.occurrences, { name: snapshot.name, stamp: now }, ctx.config), now),
    packJsonOffLoop(snapshot),
    packJsonOffLoop(diff.state),
  ]);
  const multi = ctx.redis.multi();
  ctx.snapshots.writeSnapshot(multi, source, snapshot, packedSnapshot);
  ctx.snapshots.writePublished(multi, source, diff.state, packedPublished);
  ctx.feeds.write(multi, source, feed);
  ctx.termCounts.write(multi, source, snapshot.entries);
  if (diff.change) ctx.snapshots.appendChange(multi, source, diff.change);
  if (owesPush) ctx.snapshots.markPushOwed(multi, source);
  if (changeSet) ctx.notify.outbox.write(multi, changeSet);
  await execOrThrow(multi);
}

/**
 * Queues the fan-out of a change set just published. A failure here loses nothing: the change set stays in
 * the outbox, and the sweeper queues its fan-out within a minute or two.
 */
async function startNotifyFanout(ctx: PublishDeps, set: ChangeSet, log: Logger): Promise<void> {
  try {
    await enqueueNotifyFanout(ctx.queues, set.source, set.stamp);
  } catch (error) {
    log.warn({ err: error }, 'could not queue the change notifications now; the sweeper will');
  }
}

/**
 * Marks a source's feed as serving old data: the registry says since when, and the feed is rendered again
 * from the last good snapshot with the stale marker (header and calendar property). Nothing is removed, and
 * a feed published meanwhile by another run is never overwritten (the write is fenced on its ETag).
 */
export async function markFeedStale(ctx: MarkStaleDeps, source: SourceKey, now: number): Promise<void> {
  const since = await ctx.registry.markStale(source, now);
  const [feed, { snapshot, published }] = await Promise.all([ctx.feeds.validators(source), ctx.snapshots.load(source)]);
  if (feed.etag === undefined || feed.staleSince !== undefined || !snapshot || !published) return;
  const ics = renderVariant(snapshot, published, ctx.config, {}, since);
  await ctx.feeds.replaceIf(source, feed.etag, await encodeFeed(ics, now, since));
}

/**
 * One push job per target of the source, of every kind; a target with a push queued or running gets one
 * follow-up. Every one of them reads the publication just stored: the one fetch feeds them all.
 */
async function fanOutPush(ctx: PublishDeps, source: SourceKey): Promise<number> {
  const targets = await Promise.all(
    ctx.pushKinds.map(async ({ kind, targets }) => ({ kind, ids: await targets.idsForSource(source) })),
  );
  const jobs = targets.flatMap(({ kind, ids }) =>
    ids.map((target) => enqueuePush(ctx.queues, kind, target, source, 'refresh')),
  );
  await Promise.all(jobs);
  await ctx.snapshots.clearPushOwed(source);
  return jobs.length;
}
