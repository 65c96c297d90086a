/**
 * What a calendar kind implements so that the one push job and failure policy (jobs/push.ts,
 * jobs/push-failure.ts) serve it: how to sync one target, how to read its server's errors, its names in logs
 * and metrics. Everything else (skip reasons, the guarded records, pauses, the reconcile schedule, retries) is
 * the core's and the same for every kind. The composition root builds one adapter per kind over that kind's
 * services and lists it in its registry (runtime/push-kinds.ts); docs/push-adapters.md says more.
 */
import type { Counter, Histogram } from 'prom-client';
import type { Logger } from '../logger.ts';
import type { PushIndex } from '../store/push-index.ts';
import type { PushReason, PushTarget, RefusalExample, SyncCounts, TargetKind } from '../store/push-target-record.ts';
import type { PushTargetStore } from '../store/push-target-store.ts';

/** What the push core reads and records on a kind's targets. */
export type PushAdapterTargets = Pick<
  PushTargetStore,
  | 'kind'
  | 'needsCredential'
  | 'get'
  | 'credential'
  | 'recordPush'
  | 'clearReconcileRequest'
  | 'scheduleReconcile'
  | 'markStatus'
  | 'recordError'
  | 'requestReconcile'
  | 'idsForSource'
  | 'anyForSource'
  | 'due'
  | 'remove'
> & { index(targetId: string): Pick<PushIndex, 'size'> };

/**
 * A kind as a job or use case that only reads, reschedules or removes its targets sees it (the fan-out, the due
 * scan, a deleted subscription).
 */
export interface PushKindTargets<M extends keyof PushAdapterTargets> {
  readonly kind: TargetKind;
  readonly targets: Pick<PushAdapterTargets, M>;
}

/** The hooks of one push run, handed to the kind's sync. */
export interface PushRunHooks {
  /** The run's logger (bound to target, source, job and attempt). */
  readonly log: Logger;
  /** Aborts when the worker shuts down: no new request starts after it. */
  readonly signal: AbortSignal | undefined;
  /** A write the server refused for good (a few are kept on the target for admins). */
  onRefusal(example: RefusalExample): void;
  /** An index entry was written: the run got somewhere (rate-limit rounds before it are not counted again). */
  onIndexed(): void;
  /** Epoch ms (the service clock). */
  now(): number;
}

/** One target to bring in line with its source's published timetable. */
export interface PushSyncRequest {
  /** The target as read at the start of the run. */
  readonly target: PushTarget;
  /** Its credential, unsealed (a refresh token, an app password). */
  readonly secret: string;
  /** List the calendar and rebuild the index, rather than trust it. */
  readonly reconcile: boolean;
  readonly reason: PushReason;
  readonly hooks: PushRunHooks;
}

/**
 * What a kind's failure means, in the core's words. `label` is the kind's metric label of its own errors
 * (absent for failures that are not the server's: Redis, a bug).
 */
export type PushVerdict =
  | {
      readonly kind: 'rate-limit';
      readonly label: string;
      /** What the server asked us to wait, when it said. */
      readonly retryAfterMs?: number | undefined;
      /** The host that asked (a kind that cools hosts down keys the cool-down by it). */
      readonly host?: string | undefined;
      /**
       * The server's HTTP status; absent when our own budget refused to wait (the server said nothing new, so no
       * host is cooled down further).
       */
      readonly status?: number | undefined;
    }
  | {
      readonly kind: 'stop';
      readonly label?: string | undefined;
      /** `needs-credential` is stored under the kind's own word (`needs-consent`, `needs-password`). */
      readonly status: 'paused' | 'needs-credential' | 'calendar-deleted';
      /** Why, for people (shown on the target). */
      readonly reason: string;
      /** For `paused`: until when (epoch ms). */
      readonly pausedUntil?: number | undefined;
    }
  | { readonly kind: 'permanent' | 'transient'; readonly label?: string | undefined };

/**
 * How a kind waits out its server's rate limit. `pause-queue`: the whole push queue of the kind pauses (one
 * server, one limit for every job: Google); its workers start at most `startsPerSecond` jobs. `delay-job`: only
 * this job is put aside, without using an attempt, and the host that asked cools down for every worker (many
 * servers: one throttling host must not stop the pushes to the others).
 */
export type RateLimitStrategy =
  | { readonly mode: 'pause-queue'; readonly startsPerSecond: number }
  | { readonly mode: 'delay-job'; coolDown(host: string, ms: number): Promise<unknown> };

/** The kind's words in logs and skip reasons. */
export interface PushWords {
  /** Skip reason while the target waits for a new credential: `target needs a new consent`. */
  readonly needsCredential: string;
  /** The credential, in `stored <credential> unreadable`: `token`, `password`. */
  readonly credential: string;
  /** Logged after a push: `pushed to Google Calendar`. */
  readonly pushed: string;
  /** Prefix of logs of a failed push: `push` (Google's, which came first), `CalDAV push`. */
  readonly push: string;
  /** Logged when the rate limit is waited out: `Google rate limit: push queue paused`. */
  readonly rateLimited: string;
  /** Skip reason when a push's record lands on a target that moved on meanwhile. */
  readonly movedOn: string;
}

/** A kind's push metrics: its own series, so that each kind's names stay what operators scrape today. */
export interface PushKindMetrics {
  /** Seconds per push job, by outcome. */
  readonly duration: Pick<Histogram<'outcome'>, 'observe'>;
  /** Write requests sent to the kind's server, by operation. */
  readonly writes: Pick<Counter<'operation'>, 'inc'>;
  /** The kind's errors, by the verdict's label. */
  readonly errors: Pick<Counter<'kind'>, 'inc'>;
}

/** A calendar kind as the push core sees it. */
export interface PushAdapter {
  /** The kind's name, as its targets store it (`google`, `caldav`). */
  readonly kind: TargetKind;
  readonly words: PushWords;
  /** Fields bound to every log line of the kind's push jobs (CalDAV's `push: 'caldav'`). */
  readonly logFields?: Readonly<Record<string, string>> | undefined;
  readonly targets: PushAdapterTargets;
  /** How long after a full reconcile the next one is due. */
  readonly reconcileIntervalMs: number;
  readonly rateLimit: RateLimitStrategy;
  readonly metrics: PushKindMetrics;
  /** Why no push of the kind can run in this process (no client credentials), if none can. */
  notConfigured(): string | undefined;
  /**
   * Brings one target in line with its source's published timetable; undefined when the source has none yet.
   * Throws the kind's typed errors, and `TargetRemovedError` when the target went away meanwhile.
   */
  sync(request: PushSyncRequest): Promise<SyncCounts | undefined>;
  /** What a failure of this kind's push means (`now`, epoch ms, places a pause). */
  classify(error: unknown, now: number): PushVerdict;
}
