/** The run state of a push job: what one run has done so far, for its failure handling. */
import type { Logger } from '../logger.ts';
import type { PushGuard } from '../store/push-target-layout.ts';
import type { RefusalExample } from '../store/push-target-record.ts';

/** Refusals of one run kept on the target for admins, as examples of the server's reasons. */
const REFUSAL_EXAMPLES = 3;

/**
 * What one run of a push job has done so far, for its failure handling: made by the processor, filled in by
 * the run, read when the run fails.
 */
export class PushRun {
  readonly log: Logger;
  readonly signal: AbortSignal | undefined;
  /** The credential version and calendar the run started with: what it records lands only while both are the target's. */
  guard: PushGuard = {};
  /** An index entry was written: rate-limit rounds before this one are not counted again (see `rateLimitRounds`). */
  progressed = false;
  /** The first few refusals, kept on the target whether the push completes or fails for good. */
  readonly refusals: RefusalExample[] = [];

  constructor(log: Logger, signal?: AbortSignal) {
    this.log = log;
    this.signal = signal;
  }

  /** The run reached the server with this credential version, for this calendar. */
  started(credentialVersion: number, calendarId: string): void {
    this.guard = { credentialVersion, calendarId };
  }

  noteProgress(): void {
    this.progressed = true;
  }

  noteRefusal(example: RefusalExample): void {
    if (this.refusals.length < REFUSAL_EXAMPLES) this.refusals.push(example);
  }
}
