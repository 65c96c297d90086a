/**
 * The deployment's term starts kept in force (docs/design.md, "Week parity"): stored after every change of the
 * counts, and when the dates change, every feed with odd- or even-week classes is rendered again from its
 * stored snapshot (a `rerender` refresh, no upstream request), refreshed or not. Counts missing (an upgraded
 * deployment, lost keys) are rebuilt from the stored snapshots before a worker publishes anything.
 */
import type { Config } from '../config.ts';
import { withLock } from '../lib/redis-lock.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { execOrThrow } from '../lib/redis-transaction.ts';
import type { Logger } from '../logger.ts';
import type { FreshnessStore } from '../store/freshness-store.ts';
import type { RedisKeys } from '../store/keys.ts';
import type { SourceRegistry } from '../store/registry.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import type { SourceRelations } from '../store/source-relations.ts';
import type { TermCountStore, TermStartsUpdate } from '../store/term-counts.ts';
import { type SourceKey, sourceToken } from '../timetable/source.ts';
import { termStartDates } from '../timetable/terms.ts';
import { type UnparkDeps, unparkDependents } from './freshness-unpark.ts';
import { enqueueRefresh, type Queues, type RefreshJobSettings } from './queues.ts';

/** What {@link syncTermStarts} uses: the counts, and the queue its re-renders go to. */
export interface TermStartsDeps {
  readonly config: RefreshJobSettings & Pick<Config, 'weekParityAnchors'>;
  readonly termCounts: TermCountStore;
  readonly queues: Queues;
  /** Epoch ms. */
  readonly now: () => number;
}

/** What {@link forgetSource} uses. */
export interface ForgetSourceDeps extends TermStartsDeps {
  readonly config: TermStartsDeps['config'] & UnparkDeps['config'];
  readonly registry: Pick<SourceRegistry, 'remove'>;
  readonly relations: Pick<SourceRelations, 'forget' | 'members'>;
  readonly freshness: Pick<FreshnessStore, 'forget' | 'unpark' | 'parkedByGroups'>;
}

/** What {@link seedTermCounts} uses. */
export interface SeedTermCountsDeps extends TermStartsDeps {
  readonly logger: Logger;
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  readonly registry: Pick<SourceRegistry, 'allKnownSources'>;
  readonly snapshots: Pick<SnapshotStore, 'snapshot'>;
}

/** Re-renders queued concurrently. */
const BATCH_SIZE = 100;

/** How long one worker may seed the counts before another may try (it extends nothing: seeding is idempotent). */
const SEED_LOCK_MS = 5 * 60_000;

/** A source that has just published, and the term starts it rendered with. */
export interface RenderedWith {
  source: SourceKey;
  termStarts: readonly string[];
}

/**
 * Stores the term starts the counts give now; when their dates changed, logs the change once and queues a
 * re-render of every source with odd- or even-week entries, except the one whose publication caused the
 * change when it already rendered with the new term starts (a concurrent publication may have moved them
 * again; then it is re-rendered like the others).
 */
export async function syncTermStarts(
  ctx: TermStartsDeps,
  log: Pick<Logger, 'info'>,
  publisher?: RenderedWith,
): Promise<TermStartsUpdate> {
  const update = await ctx.termCounts.refresh(ctx.config.weekParityAnchors);
  if (!update.changed) return update;
  const after = termStartDates(update.after);
  const current = publisher !== undefined && publisher.termStarts.join() === after.join() ? publisher.source : null;
  const sources = (await ctx.termCounts.paritySources()).filter((source) => source !== current);
  log.info(
    { before: termStartDates(update.before ?? []), after, rerender: sources.length },
    'term starts changed: re-rendering every feed with odd- or even-week classes',
  );
  await enqueueRerenders(ctx, sources, update.version);
  return update;
}

/**
 * One `rerender` refresh per source, with an id stable per version of the counts: two publications that see
 * the same change queue one job. A refresh already queued for a source answers for it (it renders with the
 * term starts in force); one running gets a follow-up, since it may have rendered with the old ones.
 */
async function enqueueRerenders(ctx: TermStartsDeps, sources: readonly SourceKey[], version: number): Promise<void> {
  const now = ctx.now();
  for (let start = 0; start < sources.length; start += BATCH_SIZE) {
    await Promise.all(
      sources.slice(start, start + BATCH_SIZE).map((source) =>
        enqueueRefresh(ctx.queues, ctx.config, source, {
          reason: 'rerender',
          now,
          followUp: true,
          jobId: `${sourceToken(source)}-rerender-${version}`,
        }),
      ),
    );
  }
}

/**
 * Forgets a source entirely and keeps the term starts in force right without its entries. What refreshes
 * taught about it goes too (a deleted student must not stay among their group's, to whom related refreshes go),
 * and so does its plan: the pacer would otherwise queue it until the reconciler next runs. What a forgotten
 * group explained is unparked: nobody refreshes the group any more.
 */
export async function forgetSource(ctx: ForgetSourceDeps, source: SourceKey, log: Pick<Logger, 'info'>): Promise<void> {
  await ctx.registry.remove(source);
  await ctx.relations.forget(source);
  await ctx.freshness.forget([source]);
  await unparkDependents(ctx, [source]);
  await syncTermStarts(ctx, log);
}

/**
 * Rebuilds the counts from the stored snapshots when none are kept, before this worker publishes: otherwise
 * the first timetables to refresh would decide the term starts alone (a teacher refreshed before any group got
 * spring term start 12 March, one week off). One worker seeds under a lock; the others wait and find counts.
 * Resolves to the number of timetables counted.
 */
export async function seedTermCounts(ctx: SeedTermCountsDeps): Promise<number> {
  const seeded = (await ctx.termCounts.isEmpty()) ? await seedUnderLock(ctx) : 0;
  if (seeded > 0) ctx.logger.info({ timetables: seeded }, 'term start counts rebuilt from the stored timetables');
  // Also when nothing was seeded: WEEK_PARITY_ANCHORS may have changed since the term starts were stored.
  await syncTermStarts(ctx, ctx.logger);
  return seeded;
}

async function seedUnderLock(ctx: SeedTermCountsDeps): Promise<number> {
  return withLock(ctx.redis, ctx.keys.lock('term-counts-seed'), SEED_LOCK_MS, async () => {
    if (!(await ctx.termCounts.isEmpty())) return 0;
    let counted = 0;
    for (const source of await ctx.registry.allKnownSources()) {
      const snapshot = await ctx.snapshots.snapshot(source);
      if (snapshot === undefined) continue;
      // The same script as a publication's: seeding a source twice, or after it published, changes nothing.
      await execOrThrow(ctx.termCounts.write(ctx.redis.multi(), source, snapshot.entries));
      counted += 1;
    }
    await ctx.termCounts.dropRetiredCounts();
    return counted;
  });
}
