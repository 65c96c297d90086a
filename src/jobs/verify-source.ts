/**
 * Whether the university knows a public source: proven by one successful fetch. What makes a source permanent
 * (a Google push target: sources with targets are never deactivated) is only made for a verified one, so that
 * a made-up id never becomes a periodic refresh and an empty calendar.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FeedStore } from '../store/feed-store.ts';
import type { SourceRegistry } from '../store/registry.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import { SourceNotFoundError, SourceNotReadyError } from './errors.ts';
import { enqueueRefresh, type Queues, type RefreshJobSettings } from './queues.ts';

/** How long a caller waits for a first fetch by default: as long as a first feed request does. */
export const VERIFY_WAIT_MS = 10_000;
/** What a caller is told to wait when the first fetch did not end in time. */
const RETRY_AFTER_MS = 10_000;
const FIRST_POLL_MS = 50;
const MAX_POLL_MS = 250;

/** What {@link requireFetched} uses. */
export interface VerifyDeps {
  readonly config: RefreshJobSettings;
  readonly queues: Queues;
  readonly registry: Pick<SourceRegistry, 'missingReason'>;
  readonly feeds: Pick<FeedStore, 'exists'>;
  /** Epoch ms. */
  readonly now: () => number;
}

/**
 * Resolves once `source` has been fetched successfully at least once, fetching it first (a refresh at the
 * priority of a first request) and waiting at most `waitMs`. Throws {@link SourceNotFoundError} when the
 * university does not know it (also remembered from an earlier answer, without asking again) and
 * {@link SourceNotReadyError} when the fetch did not end in time. A personal source is verified by its
 * sign-up: callers check its subscription.
 */
export async function requireFetched(
  ctx: VerifyDeps,
  source: SourceKey,
  waitMs: number = VERIFY_WAIT_MS,
): Promise<void> {
  if (sourceOf(source).kind === 'personal') return;
  if (await ctx.feeds.exists(source)) return;
  await throwIfMissing(ctx, source);
  await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'demand', now: ctx.now() });
  const deadline = performance.now() + waitMs;
  for (let delay = FIRST_POLL_MS; ; delay = Math.min(delay * 2, MAX_POLL_MS)) {
    const left = deadline - performance.now();
    if (left <= 0) throw new SourceNotReadyError(source, RETRY_AFTER_MS);
    await sleep(Math.min(delay, left));
    if (await ctx.feeds.exists(source)) return;
    await throwIfMissing(ctx, source);
  }
}

async function throwIfMissing(ctx: VerifyDeps, source: SourceKey): Promise<void> {
  const missing = await ctx.registry.missingReason(source);
  if (missing !== undefined) throw new SourceNotFoundError(source, missing);
}
