/**
 * Waiting for a write to reach Redis's disk. Under `appendfsync everysec`, Redis acknowledges a write before
 * it is fsynced: a crash (`kill -9`, power loss) loses up to about a second of acknowledged writes. A secret
 * handed out once, such as a new feed token, must not be among them; `WAITAOF` (Redis 7.2 and later) waits
 * until this connection's writes so far are in the local AOF.
 */
import { Cluster, type Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { RedisUnavailableError } from './errors.ts';
import type { RedisClient } from './redis-target.ts';

/** How long a sign-up waits for its write to be on disk: everysec fsyncs once a second. */
export const DISK_WAIT_MS = 2_000;

/**
 * Connections whose server cannot wait for the AOF (before 7.2, or AOF off): not asked again. Keyed by the
 * connection, so that it is per Redis client and goes away with it, not a process-wide setting.
 */
const cannotWait = new WeakSet<RedisClient>();

/** Replies of a server that has no WAITAOF, or no AOF to wait for. */
const UNSUPPORTED = /unknown command|appendonly is disabled|cannot be used with replica/i;

/**
 * Resolves once every write made so far on `redis` is fsynced to its AOF. Throws {@link RedisUnavailableError}
 * when it is not within `timeoutMs` (the caller must not hand out what it wrote: it may not survive a crash).
 * On a server that cannot wait (older than 7.2, or without AOF) it resolves at once, after one warning: the
 * durability is then what `appendfsync` gives.
 */
export async function waitForDisk(redis: RedisClient, logger: Logger, timeoutMs = DISK_WAIT_MS): Promise<void> {
  if (cannotWait.has(redis)) return;
  // A Cluster sends each command to the primary of its slot; WAITAOF names no key, so it is asked of every
  // primary (one that took no write of ours answers at once).
  const servers: Redis[] = redis instanceof Cluster ? redis.nodes('master') : [redis];
  let replies: unknown[];
  try {
    replies = await Promise.all(servers.map((server) => server.call('WAITAOF', '1', '0', String(timeoutMs))));
  } catch (error) {
    if (!(error instanceof Error) || !UNSUPPORTED.test(error.message)) throw error;
    cannotWait.add(redis);
    logger.warn(
      { reason: error.message },
      'Redis cannot wait for writes to reach its disk (WAITAOF needs Redis 7.2 and AOF): a crash may lose ' +
        'the last second of sign-ups under appendfsync everysec',
    );
    return;
  }
  for (const reply of replies) {
    const local = Array.isArray(reply) ? Number(reply[0]) : 0;
    if (local < 1) throw new RedisUnavailableError(`Redis did not write the change to its disk within ${timeoutMs} ms`);
  }
}
