/**
 * Waiting for a write to reach Redis's disk. Under `appendfsync everysec`, Redis acknowledges a write before
 * it is fsynced: a crash (`kill -9`, power loss) loses up to about a second of acknowledged writes. A secret
 * handed out once, such as a new feed token, must not be among them.
 *
 * `WAITAOF` (Redis 7.2 and later) blocks the connection that sends it until that connection's own writes are
 * in the AOF. Sent on the shared commands connection it would stall every request of the process for up to a
 * second, so the {@link DiskWaiter} has a connection of its own: there it writes a marker key under the
 * prefix and waits for the marker. Redis appends to its AOF in the order commands run, so once the marker,
 * written after the caller's write was acknowledged, is on disk, that write is too. On a Cluster the marker
 * (hash-tagged like every key) and the wait both go to the one primary serving the prefix's slot, the node
 * that holds our writes; other primaries are not asked.
 */
import { Cluster, type Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { RedisUnavailableError } from './errors.ts';
import { closeRedis } from './redis-connection.ts';
import { primaryOfSlot, slotOf } from './redis-node.ts';
import type { RedisClient } from './redis-target.ts';

/** How long one wait for the disk may take: everysec fsyncs once a second. */
export const DISK_WAIT_MS = 2_000;

/**
 * How long a server that cannot wait (older than 7.2, or AOF off) is taken at its word before it is asked
 * again: an upgrade or `CONFIG SET appendonly yes` is noticed within this, without a restart.
 */
export const RECHECK_MS = 60_000;

/** Replies of a server that has no WAITAOF, or no AOF to wait for (a replica's refusal is a failure, not this). */
const UNSUPPORTED = /unknown command|appendonly is disabled/i;

/** What a {@link DiskWaiter} needs. */
export interface DiskWaiterOptions {
  /**
   * Opens the waiter's own connection (to the same target as the stores), on the first wait: processes that
   * never wait never open it. Its commands may block for up to `timeoutMs`, so nothing else may use it.
   */
  connect: () => RedisClient;
  /** The marker key, under the prefix (its hash tag puts it in the slot of every other key). */
  markerKey: string;
  logger: Logger;
  /** Default {@link DISK_WAIT_MS}. */
  timeoutMs?: number;
  /** Monotonic ms; default `performance.now`. */
  clock?: () => number;
}

/**
 * Waits for writes to be on Redis's disk, on a connection of its own. Waits that arrive while one is under
 * way share the next one (one marker and one WAITAOF for all of them), so that many sign-ups at once cost
 * at most two fsync periods each, not one period per sign-up in a row.
 */
export class DiskWaiter {
  private readonly options: DiskWaiterOptions;
  private readonly timeoutMs: number;
  private readonly clock: () => number;
  private connection: RedisClient | undefined;
  /** The hash slot of the marker key on a Cluster (asked once: a key's slot never changes). */
  private slot: number | undefined;
  /** Monotonic ms until which the server is believed unable to wait; undefined while it can. */
  private unsupportedUntil: number | undefined;
  private running: Promise<void> | undefined;
  /** The round that starts when `running` ends: callers arriving meanwhile share it. */
  private queued: Promise<void> | undefined;
  /** Set by close(): no round opens the connection again (a process shutting down would leak it). */
  private closed = false;

  constructor(options: DiskWaiterOptions) {
    this.options = options;
    this.timeoutMs = options.timeoutMs ?? DISK_WAIT_MS;
    this.clock = options.clock ?? (() => performance.now());
  }

  /**
   * Resolves once every write acknowledged to any connection of this process before the call is fsynced to
   * the AOF of the primary holding our keys. Throws {@link RedisUnavailableError} when it is not within the
   * timeout (the caller must not hand out what it wrote: it may not survive a crash), and Redis's error when
   * the marker cannot be written. On a server that cannot wait (older than 7.2, or without AOF) it resolves at
   * once, with a warning every {@link RECHECK_MS}: durability is then what `appendfsync` gives.
   */
  wait(): Promise<void> {
    if (this.queued !== undefined) return this.queued;
    const running = this.running;
    if (running === undefined) return this.start();
    const queued = running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.start();
      });
    this.queued = queued;
    return queued;
  }

  /** Closes the connection, if one was opened; waits asked for later reject, and open none. */
  async close(): Promise<void> {
    this.closed = true;
    const connection = this.connection;
    this.connection = undefined;
    if (connection !== undefined) await closeRedis(connection);
  }

  private start(): Promise<void> {
    const round: Promise<void> = this.round().finally(() => {
      if (this.running === round) this.running = undefined;
    });
    this.running = round;
    return round;
  }

  private async round(): Promise<void> {
    if (this.closed) throw new RedisUnavailableError('the disk waiter was closed: the process is stopping');
    if (this.unsupportedUntil !== undefined && this.clock() < this.unsupportedUntil) return;
    this.connection ??= this.options.connect();
    const server = await this.serverOf(this.connection);
    // Marker and wait on one connection: WAITAOF waits for the writes of the connection that sends it.
    await server.incr(this.options.markerKey);
    let reply: unknown;
    try {
      reply = await server.call('WAITAOF', '1', '0', String(this.timeoutMs));
    } catch (error) {
      if (!(error instanceof Error) || !UNSUPPORTED.test(error.message)) throw error;
      this.unsupportedUntil = this.clock() + RECHECK_MS;
      this.options.logger.warn(
        { reason: error.message, recheckInMs: RECHECK_MS },
        'Redis cannot wait for writes to reach its disk (WAITAOF needs Redis 7.2 and AOF): a crash may lose ' +
          'the last second of sign-ups under appendfsync everysec',
      );
      return;
    }
    this.unsupportedUntil = undefined;
    const local = Array.isArray(reply) ? Number(reply[0]) : 0;
    if (local < 1)
      throw new RedisUnavailableError(`Redis did not write the change to its disk within ${this.timeoutMs} ms`);
  }

  /**
   * The server connection that takes the marker: the connection itself, or on a Cluster the connection to the
   * primary that serves the marker's slot now (a slot moved meanwhile answers MOVED, a failure).
   */
  private async serverOf(connection: RedisClient): Promise<Redis> {
    if (!(connection instanceof Cluster)) return connection;
    this.slot ??= await slotOf(connection, this.options.markerKey);
    return primaryOfSlot(connection, this.slot);
  }
}
