/**
 * The term starts a deployment stored (src/store/term-counts.ts), for `render --group/--employee/--me`: one
 * timetable alone can infer a different term start than the service, which counts every stored timetable.
 */
import type { Config } from '../config.ts';
import { RedisUnreachableError } from '../lib/errors.ts';
import { describeRedisTarget, withRedisProbe } from '../lib/redis-connection.ts';
import type { RedisTarget } from '../lib/redis-target.ts';
import { redisKeys } from '../store/keys.ts';
import { TermCountStore } from '../store/term-counts.ts';
import type { TermStart } from '../timetable/terms.ts';
import { findEmbeddedRedis } from './embedded-redis.ts';

/** How long `render` waits for a Redis before inferring from the timetable alone. */
const REACH_MS = 1_000;

/** What {@link storedDeploymentTermStarts} found. */
export type DeploymentTerms =
  /** `redis` is host:port (or the sentinels or cluster nodes), without credentials. */
  | { kind: 'stored'; terms: TermStart[]; redis: string }
  /** A Redis is configured but does not answer; `message` says so without credentials (RedisUnreachableError). */
  | { kind: 'unreachable'; message: string }
  | { kind: 'none' };

/**
 * The stored term starts of the deployment whose Redis is `REDIS_URL` or the embedded one under `DATA_DIR`,
 * with where they were read. No embedded Redis running is `none`, silently: `render` works without one.
 */
export async function storedDeploymentTermStarts(
  config: Pick<Config, 'redisTarget' | 'redisPrefix' | 'dataDir'>,
): Promise<DeploymentTerms> {
  const embedded = config.redisTarget ? undefined : await findEmbeddedRedis(config.dataDir);
  const target: RedisTarget | undefined =
    config.redisTarget ?? (embedded === undefined ? undefined : { kind: 'standalone', url: embedded });
  if (target === undefined) return { kind: 'none' };
  try {
    const stored = await withRedisProbe(target, REACH_MS, (redis) =>
      new TermCountStore(redis, redisKeys(config.redisPrefix)).stored(),
    );
    if (stored === undefined || stored.termStarts.length === 0) return { kind: 'none' };
    return { kind: 'stored', terms: stored.termStarts, redis: where(target) };
  } catch (error) {
    if (error instanceof RedisUnreachableError) return { kind: 'unreachable', message: error.message };
    // Unreadable stored counts (an older format): the timetable's own entries decide, as without a Redis.
    return { kind: 'none' };
  }
}

/** Where the terms were read: host:port of a standalone Redis, else the sentinels or cluster nodes. */
function where(target: RedisTarget): string {
  if (target.kind !== 'standalone') return describeRedisTarget(target);
  const url = new URL(target.url);
  return `${url.hostname}:${url.port || '6379'}`;
}
