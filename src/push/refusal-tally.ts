/**
 * The permanent refusals of one push: how many, a few examples for the log, and whether they mean that the
 * calendar itself refuses us (a circuit breaker) rather than one event at a time. Writes run concurrently, so
 * the refusals that reach the limit may overtake a write that will succeed: the breaker first holds (the push
 * starts nothing new), and decides only once the writes in flight have settled.
 */
import type { RefusalExample } from '../store/push-target-record.ts';

/** How long a version of an event the calendar refused waits before it is tried again (a changed version: at once). */
export const REFUSAL_RETRY_MS = 24 * 60 * 60_000;

/** Refusals before any write succeeded that mean the calendar refuses every write (e.g. every one a 403). */
export const MAX_PERMANENT_FAILURES = 5;

/** Examples kept per push. */
const MAX_EXAMPLES = 3;

/**
 * Counts one push's refusals; holds once {@link MAX_PERMANENT_FAILURES} came before any success, then either
 * resumes (a write in flight succeeded) or trips.
 */
export class RefusalTally {
  /** Refusals in this push. */
  count = 0;
  /** The first few refusals. */
  readonly examples: RefusalExample[] = [];
  private first: Error | undefined;
  private wrote = false;
  private held = false;
  private tripped = false;

  /** Notes a write the calendar accepted: from now on, refusals never stop the push. */
  succeeded(): void {
    this.wrote = true;
  }

  /** Notes that the calendar refused a write of `eventId` for good (the kind's own refusal error). */
  add(eventId: string, error: Error): void {
    this.count += 1;
    this.first ??= error;
    if (this.examples.length < MAX_EXAMPLES) this.examples.push({ eventId, message: error.message });
    if (!this.wrote && this.count >= MAX_PERMANENT_FAILURES) this.held = true;
  }

  /** Whether no write may start: too many refusals came before any success, and {@link resume} has not decided yet. */
  holding(): boolean {
    return this.held && !this.tripped;
  }

  /**
   * Decides a hold, once no write is in flight: answers true (go on) if a write succeeded meanwhile, so the
   * breaker can never trip again; else trips ({@link stopError}) and answers false.
   */
  resume(): boolean {
    this.held = false;
    if (this.wrote) return true;
    this.tripped = true;
    return false;
  }

  /** The first refusal once the breaker tripped (the push must stop and fail with it), else undefined. */
  stopError(): Error | undefined {
    return this.tripped ? this.first : undefined;
  }
}
