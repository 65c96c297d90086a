/**
 * Worker heartbeats (`keys.workers`, a ZSET of worker ids scored by their last beat): every worker process beats
 * every few seconds, and `/readyz` counts the live ones. Kept apart from the workers themselves, so that an API
 * process reads heartbeats without loading the processors.
 */
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from '../store/keys.ts';
import { countHeartbeatsSince, recordHeartbeat, removeHeartbeat } from '../store/worker-heartbeats.ts';

/** A worker whose last heartbeat is older than this is presumed dead (workers beat every 5 s). */
export const WORKER_HEARTBEAT_MAX_AGE_MS = 30_000;

/** What heartbeats use: the ZSET of beats, and the clock that scores them. */
export interface HeartbeatDeps {
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  /** Epoch ms. */
  readonly now: () => number;
}

/** Records that worker `id` is alive now. */
export async function beat(ctx: HeartbeatDeps, id: string): Promise<void> {
  await recordHeartbeat(ctx.redis, ctx.keys, id, ctx.now());
}

/** Forgets worker `id` (it is shutting down). */
export async function forgetWorker(ctx: HeartbeatDeps, id: string): Promise<void> {
  await removeHeartbeat(ctx.redis, ctx.keys, id);
}

/** How many worker processes sent a heartbeat within {@link WORKER_HEARTBEAT_MAX_AGE_MS}. */
export async function liveWorkers(ctx: HeartbeatDeps): Promise<number> {
  return countHeartbeatsSince(ctx.redis, ctx.keys, ctx.now() - WORKER_HEARTBEAT_MAX_AGE_MS);
}
