import type { SourceRegistry } from '../store/registry.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import { parseSource, type SourceKey, SUBSCRIPTION_ID, sourceKey } from '../timetable/source.ts';
import { type ActivationDeps, activateSource } from './activation.ts';
import { UnknownSubscriptionError } from './errors.ts';
import { enqueueRefresh, RESYNC_ALL_PRIORITY, type RefreshJobSettings } from './queues.ts';

/** What an admin asks to resync: one source, one personal subscription's source, or every active source. */
export type ResyncTarget = { source: string } | { subscription: string } | { all: true };

/** What {@link requestResync} uses. */
export type ResyncDeps = ActivationDeps & {
  readonly config: RefreshJobSettings;
  readonly registry: Pick<SourceRegistry, 'allActiveSources'>;
  readonly subscriptions: Pick<SubscriptionStore, 'get'>;
};

/** Refreshes queued concurrently for `{ all: true }`. */
const BATCH_SIZE = 100;

/**
 * Queues a resync refresh and resolves to the job ids, in the order of the sources. A named source is
 * activated first (an admin wants it kept fresh from now on); a source whose refresh is running gets exactly
 * one follow-up, so that the answer is data fetched after the request. Throws `InvalidSourceError` for a
 * malformed source and {@link UnknownSubscriptionError} for a subscription that does not exist.
 */
export async function requestResync(ctx: ResyncDeps, target: ResyncTarget): Promise<string[]> {
  if ('all' in target) return resyncActive(ctx);
  const source =
    'source' in target ? await namedSource(ctx, target.source) : await subscriptionSource(ctx, target.subscription);
  await activateSource(ctx, source);
  return [await resyncOne(ctx, source)];
}

async function namedSource(ctx: ResyncDeps, text: string): Promise<SourceKey> {
  const ref = parseSource(text);
  // A personal source is only as real as its subscription; never activate one for a made-up id.
  if (ref.kind === 'personal') return subscriptionSource(ctx, ref.id);
  return sourceKey(ref);
}

async function subscriptionSource(ctx: ResyncDeps, id: string): Promise<SourceKey> {
  if (!SUBSCRIPTION_ID.test(id) || (await ctx.subscriptions.get(id)) === undefined)
    throw new UnknownSubscriptionError(id);
  return sourceKey({ kind: 'personal', id });
}

function resyncOne(ctx: ResyncDeps, source: SourceKey, priority?: number): Promise<string> {
  return enqueueRefresh(ctx.queues, ctx.config, source, {
    reason: 'resync',
    now: ctx.now(),
    followUp: true,
    ...(priority === undefined ? {} : { priority }),
  });
}

/**
 * Every active source, queued in parallel batches at a background priority (see `RESYNC_ALL_PRIORITY`).
 * Already active, so not re-activated: that would count as a feed request and keep unwanted sources alive.
 */
async function resyncActive(ctx: ResyncDeps): Promise<string[]> {
  const sources = await ctx.registry.allActiveSources();
  const jobs: string[] = [];
  for (let start = 0; start < sources.length; start += BATCH_SIZE) {
    jobs.push(
      ...(await Promise.all(
        sources.slice(start, start + BATCH_SIZE).map((source) => resyncOne(ctx, source, RESYNC_ALL_PRIORITY)),
      )),
    );
  }
  return jobs;
}
