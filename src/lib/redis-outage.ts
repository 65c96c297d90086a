/**
 * The one log of a process's Redis outages. Every Redis error source of a process reports here instead of
 * logging: its connections' `error` and `ready` events, BullMQ workers' `error` events, the feed-updates
 * subscriber, the worker heartbeat. Each connection tries again every 200 ms to 5 s, and each BullMQ worker
 * passes on every failed attempt of its own connections, so logging each report wrote about six error lines a
 * second, each with its stack, for as long as Redis was down. Here an outage is one error line when it starts,
 * a summary at most once per `summaryEveryMs` while it lasts (with the failed attempts counted), and one line
 * when it ends, with its duration and count.
 */
import type { Logger } from '../logger.ts';

/** Default time between two summaries of an outage that goes on. */
export const OUTAGE_SUMMARY_MS = 60_000;

/** Options of {@link RedisOutageLog}. */
export interface RedisOutageOptions {
  /** Time between two summaries of an outage that goes on; default {@link OUTAGE_SUMMARY_MS}. */
  summaryEveryMs?: number;
  /** Monotonic ms; default `performance.now`. */
  clock?: () => number;
}

/** An outage under way. */
interface Outage {
  startedAt: number;
  failedAttempts: number;
  lastError: string;
  timer: NodeJS.Timeout;
}

/** See the module comment. One per process, shared by everything of it that talks to Redis. */
export class RedisOutageLog {
  private readonly logger: Logger;
  private readonly summaryEveryMs: number;
  private readonly clock: () => number;
  private outage: Outage | undefined;
  private closed = false;

  constructor(logger: Logger, options: RedisOutageOptions = {}) {
    this.logger = logger;
    this.summaryEveryMs = options.summaryEveryMs ?? OUTAGE_SUMMARY_MS;
    this.clock = options.clock ?? (() => performance.now());
  }

  /** Whether an outage is under way (a failure was reported and nothing worked since). */
  get down(): boolean {
    return this.outage !== undefined;
  }

  /**
   * A failed attempt of `source` (a connection's name, `worker:refresh`, `heartbeat`) to reach Redis. The first
   * one starts an outage, logged with its error; the others are only counted.
   */
  failed(source: string, error: unknown): void {
    if (this.closed) return;
    const message = firstLine(error);
    if (this.outage !== undefined) {
      this.outage.failedAttempts += 1;
      this.outage.lastError = message;
      return;
    }
    const timer = setInterval(() => this.summarize(), this.summaryEveryMs);
    timer.unref();
    this.outage = { startedAt: this.clock(), failedAttempts: 1, lastError: message, timer };
    this.logger.error(
      { err: error, source, summaryEveryMs: this.summaryEveryMs },
      'Redis outage started: cannot reach Redis; retrying in the background',
    );
  }

  /** `source` reached Redis (a connection is ready again, a command answered): ends an outage under way. */
  restored(source: string): void {
    const outage = this.outage;
    if (outage === undefined || this.closed) return;
    clearInterval(outage.timer);
    this.outage = undefined;
    this.logger.info(
      { source, durationMs: Math.round(this.clock() - outage.startedAt), failedAttempts: outage.failedAttempts },
      'Redis outage ended: Redis answers again',
    );
  }

  /** Stops logging (the process is shutting down: closing connections is no outage). */
  close(): void {
    this.closed = true;
    if (this.outage !== undefined) clearInterval(this.outage.timer);
    this.outage = undefined;
  }

  private summarize(): void {
    const outage = this.outage;
    if (outage === undefined) return;
    this.logger.error(
      {
        downForMs: Math.round(this.clock() - outage.startedAt),
        failedAttempts: outage.failedAttempts,
        lastError: outage.lastError,
      },
      'Redis outage goes on: still cannot reach Redis',
    );
  }
}

/** The first line of an error's message, for the summary (its stack was logged when the outage started). */
function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n', 1)[0]?.slice(0, 200) ?? '';
}
