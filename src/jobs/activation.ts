import type { SourceRegistry } from '../store/registry.ts';
import type { SourceKey } from '../timetable/source.ts';
import { SCHEDULE_JOB } from './contract.ts';
import type { Queues } from './queues.ts';

/** What {@link requestReconcile} uses. */
export interface ReconcileRequestDeps {
  readonly queues: Queues;
}

/** What {@link activateSource} uses. */
export interface ActivationDeps extends ReconcileRequestDeps {
  readonly registry: Pick<SourceRegistry, 'activate'>;
  /** Epoch ms. */
  readonly now: () => number;
}

/**
 * Marks a source as wanted (first request, new subscription, Google target). A newly active source gets its
 * job scheduler from the reconciler, which is asked to run now; callers queue the first refresh themselves.
 */
export async function activateSource(ctx: ActivationDeps, source: SourceKey): Promise<boolean> {
  const fresh = await ctx.registry.activate(source, ctx.now());
  if (fresh) await requestReconcile(ctx);
  return fresh;
}

/** Asks the reconciler to run soon; requests while one is queued collapse into it. */
export async function requestReconcile(ctx: ReconcileRequestDeps): Promise<void> {
  await ctx.queues.schedule.add(
    SCHEDULE_JOB.reconcile,
    {},
    { deduplication: { id: 'reconcile-now', ttl: 5_000 }, delay: 1_000, removeOnComplete: true, removeOnFail: 100 },
  );
}
