/** The run state of a refresh job: what one run used, for its failure handling and the queue's pauses. */
import type { Logger } from '../logger.ts';
import type { SourceKey } from '../timetable/source.ts';

/** What one run of a refresh job used and met, for its failure handling: made by the processor, told by the fetch. */
export class RefreshRun {
  readonly source: SourceKey;
  readonly log: Logger;
  readonly signal: AbortSignal | undefined;
  #credentialVersion: string | undefined;
  #rateLimitPauseMs: number | undefined;

  constructor(source: SourceKey, log: Logger, signal?: AbortSignal) {
    this.source = source;
    this.log = log;
    this.signal = signal;
  }

  /** The fetch sent the personal credential stored under `version`. */
  sentCredential(version: string): void {
    this.#credentialVersion = version;
  }

  /** The version of the personal credential the fetch sent: a rejection marks only that one as rejected. */
  get credentialVersion(): string | undefined {
    return this.#credentialVersion;
  }

  /** The upstream rate-limited a request the run went on without (the study plan's), asking for `pauseMs`. */
  rateLimited(pauseMs: number): void {
    this.#rateLimitPauseMs = pauseMs;
  }

  /** How long the queue should pause once the run is done, when a request it went on without was rate-limited. */
  get rateLimitPauseMs(): number | undefined {
    return this.#rateLimitPauseMs;
  }
}
