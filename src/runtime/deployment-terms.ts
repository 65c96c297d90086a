/**
 * The term starts a deployment stored (src/sources/term-counts.ts), for `render --group/--employee/--me`: one
 * timetable alone can infer a different term start than the service, which counts every stored timetable.
 */
import { Redis } from 'ioredis';
import type { Config } from '../config.ts';
import { redisKeys } from '../sources/keys.ts';
import { TermCountStore } from '../sources/term-counts.ts';
import type { TermStart } from '../timetable/terms.ts';
import { findEmbeddedRedis, pingRedis } from './embedded-redis.ts';

/** How long `render` waits for a Redis before inferring from the timetable alone. */
const REACH_MS = 1_000;

/**
 * The stored term starts of the deployment whose Redis is `REDIS_URL` or the embedded one under `DATA_DIR`,
 * with where they were read; undefined when no Redis answers or none are stored.
 */
export async function storedDeploymentTermStarts(
  config: Pick<Config, 'redisUrl' | 'redisPrefix' | 'dataDir'>,
): Promise<{ terms: TermStart[]; redis: string } | undefined> {
  const url = config.redisUrl ?? (await findEmbeddedRedis(config.dataDir));
  if (url === undefined || !(await pingRedis(url, REACH_MS))) return undefined;
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: REACH_MS });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    const stored = await new TermCountStore(redis, redisKeys(config.redisPrefix)).stored();
    if (stored === undefined || stored.termStarts.length === 0) return undefined;
    // Shown without credentials: a REDIS_URL may carry a password.
    const where = new URL(url);
    return { terms: stored.termStarts, redis: `${where.hostname}:${where.port || '6379'}` };
  } catch {
    return undefined;
  } finally {
    redis.disconnect();
  }
}
