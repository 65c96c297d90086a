/** The publishing half of a refresh: compare, expand, guard, render, store, fan out. */
import type { Logger } from '../logger.ts';
import { feedSettingsOf } from '../feeds/feed-settings.ts';
import { encodeFeed } from '../feeds/feed-store.ts';
import { expandSnapshot, renderFeed, renderVariant, settingsHash } from '../feeds/build-feed.ts';
import { isMassDeletion, nextExpiry, planPublication } from '../feeds/publication.ts';
import type { ServiceContext } from '../runtime/context.ts';
import { normaliseEntries, type Snapshot } from '../sources/snapshot-store.ts';
import { sourceToken, type SourceKey } from '../sources/source.ts';
import { QUEUE, type RefreshJobResult, type RefreshReason } from './contract.ts';
import type { FetchedTimetable } from './fetch-source.ts';
import { enqueueRefresh } from './queues.ts';

/** One fetched timetable to publish. */
export interface PublishInput {
  source: SourceKey;
  fetched: FetchedTimetable;
  reason: RefreshReason;
  now: number;
}

/**
 * Publishes a fetched timetable. An unchanged timetable (same digest, same settings, nothing expiring, not
 * stale) writes nothing but the registry; one that drops most future classes waits for a confirming re-fetch.
 */
export async function publishTimetable(ctx: ServiceContext, input: PublishInput, log: Logger): Promise<RefreshJobResult> {
  const { source, fetched, now } = input;
  const settings = feedSettingsOf(ctx.config);
  const { entries, hash } = normaliseEntries(fetched.entries);
  const [{ snapshot, published }, state] = await Promise.all([ctx.snapshots.load(source), ctx.registry.get(source)]);
  const settingsDigest = settingsHash(settings);
  const problems = fetched.problems.length;
  const expiring = (published && nextExpiry(published)) ?? Number.POSITIVE_INFINITY;
  if (snapshot?.hash === hash && snapshot.name === fetched.name && published?.settingsHash === settingsDigest && expiring > now && state?.staleSince === undefined) {
    await ctx.registry.recordSuccess(source, now, { occurrences: state?.occurrences ?? 0, problems, changed: false });
    return { outcome: 'unchanged', occurrences: state?.occurrences ?? 0, pushJobs: 0 };
  }

  const next = expandSnapshot({ entries }, published, settings);
  const plan = planPublication({
    previous: published,
    previousOccurrences: snapshot ? expandSnapshot(snapshot, published, settings) : [],
    previousEntries: new Map((snapshot?.entries ?? []).map((entry) => [entry.id, entry])),
    next,
    snapshotHash: hash,
    settingsHash: settingsDigest,
    now,
    cancelledRetentionMs: ctx.config.cancelledRetentionMs,
  });
  const confirmed = state?.pendingHash === hash && (input.reason === 'confirm' || now - (state.pendingSince ?? now) >= ctx.config.confirmDelayMs);
  if (isMassDeletion(plan) && !confirmed) {
    await ctx.registry.setPending(source, hash, now);
    await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'confirm', now, followUp: true, delayMs: ctx.config.confirmDelayMs });
    log.warn({ futureBefore: plan.futureBefore, futureRemoved: plan.futureRemoved }, 'refresh would remove most future classes; publishing only after a confirming re-fetch');
    return { outcome: 'awaiting-confirmation', occurrences: state?.occurrences ?? 0, pushJobs: 0 };
  }

  const newSnapshot: Snapshot = { hash, fetchedAt: now, name: fetched.name, entries, problems: fetched.problems };
  const feed = encodeFeed(renderFeed(plan.occurrences, { name: fetched.name, stamp: now }, settings), now);
  const multi = ctx.redis.multi();
  ctx.snapshots.writeSnapshot(multi, source, newSnapshot);
  ctx.snapshots.writePublished(multi, source, plan.state);
  ctx.feeds.write(multi, source, feed);
  if (plan.change) ctx.snapshots.appendChange(multi, source, plan.change);
  await execOrThrow(multi);
  await ctx.registry.recordSuccess(source, now, { occurrences: plan.occurrences.length, problems, changed: plan.change !== undefined });
  const pushJobs = plan.change ? await fanOutPush(ctx, source) : 0;
  if (plan.change) log.info({ changes: plan.change.counts, occurrences: plan.occurrences.length, pushJobs }, 'feed published');
  return { outcome: 'published', occurrences: plan.occurrences.length, ...(plan.change ? { changes: plan.change.counts } : {}), pushJobs };
}

/**
 * Marks a source's feed as serving old data: the registry says since when, and the feed is rendered again
 * from the last good snapshot with the stale marker (header and calendar property). Nothing is removed.
 */
export async function markFeedStale(ctx: ServiceContext, source: SourceKey, now: number): Promise<void> {
  const since = await ctx.registry.markStale(source, now);
  const [feed, { snapshot, published }] = await Promise.all([ctx.feeds.get(source), ctx.snapshots.load(source)]);
  if (!feed || feed.staleSince !== undefined || !snapshot || !published) return;
  const ics = renderVariant(snapshot, published, feedSettingsOf(ctx.config), {}, since);
  await execOrThrow(ctx.feeds.write(ctx.redis.multi(), source, encodeFeed(ics, now, since)));
}

/** One push job per Google target of the source; a target with a push queued or running gets one follow-up. */
async function fanOutPush(ctx: ServiceContext, source: SourceKey): Promise<number> {
  const targets = await ctx.redis.smembers(ctx.keys.sourceTargets(source));
  await Promise.all(targets.map((target) => ctx.queues.push.add(QUEUE.push, { target, source, reason: 'refresh' }, {
    deduplication: { id: `push-${target}`, keepLastIfActive: true },
    attempts: 8,
    backoff: { type: 'exponential', delay: 5_000, jitter: 0.5 },
    removeOnComplete: { age: 24 * 3600, count: 10_000 },
    removeOnFail: { age: 7 * 24 * 3600 },
  })));
  if (targets.length > 0) ctx.logger.debug({ source: sourceToken(source), targets: targets.length }, 'push jobs queued');
  return targets.length;
}

/** Runs a MULTI and throws the first command error (ioredis reports them per command, not as a rejection). */
async function execOrThrow(multi: ReturnType<ServiceContext['redis']['multi']>): Promise<void> {
  const results = await multi.exec();
  const failed = results?.find(([error]) => error !== null);
  if (results === null) throw new Error('Redis transaction was aborted');
  if (failed) throw failed[0] as Error;
}
