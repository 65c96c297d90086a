/** Fault injection (seeded, so a test run is repeatable) and Google's per-user quota of requests per minute. */
import { createRandom, type Random } from '../../src/simulator/random.ts';
import { type ApiError, apiErrors } from './reply.ts';

/**
 * What an injected fault answers. `reset` drops the connection without an answer (a network error); `400`,
 * `403-forbidden`, `403-required-access` and `403-non-organizer` are refusals of the request itself (400 invalid;
 * 403 forbidden, requiredAccessLevel, forbiddenForNonOrganizer), which retrying does not change.
 */
export type FaultKind =
  | '429'
  | '403-rate'
  | '403-user-rate'
  | '403-quota'
  | '500'
  | '503'
  | '400'
  | '403-forbidden'
  | '403-required-access'
  | '403-non-organizer'
  | 'reset';

/** One injection rule; rules are tried in the order they were added. */
export interface FaultRule {
  kind: FaultKind;
  /** Chance that a matching request fails; default 1. */
  probability?: number;
  /** Fail at most this many requests, then the rule is spent; default unlimited. */
  times?: number;
  /**
   * API methods the rule applies to (`events.insert`, `calendars.get`, …, or `token` for the token
   * endpoint); default every Calendar API method (not the token endpoint).
   */
  methods?: readonly string[];
  /** Event ids the rule applies to (the path's, or an insert body's `id`); default any request. */
  eventIds?: readonly string[];
}

/** The Google error a fault kind answers with (`reset` has none). */
export function faultError(kind: FaultKind): ApiError | undefined {
  switch (kind) {
    case '429':
      return apiErrors.tooManyRequests();
    case '403-rate':
      return apiErrors.rateLimit();
    case '403-user-rate':
      return apiErrors.userRateLimit();
    case '403-quota':
      return apiErrors.quota();
    case '500':
      return apiErrors.backend(500);
    case '503':
      return apiErrors.backend(503);
    case '400':
      return apiErrors.invalid('Bad Request');
    case '403-forbidden':
      return apiErrors.forbidden();
    case '403-required-access':
      return apiErrors.requiredAccessLevel();
    case '403-non-organizer':
      return apiErrors.forbiddenForNonOrganizer();
    case 'reset':
      return undefined;
  }
}

/** Injected faults and latency. */
export class Faults {
  latencyMs = 0;
  private rules: { rule: FaultRule; left: number }[] = [];
  private readonly random: Random;

  constructor(seed: number | string) {
    this.random = createRandom(seed, 'fake-google-faults');
  }

  /** Adds a rule. */
  inject(rule: FaultRule): void {
    const probability = rule.probability ?? 1;
    if (!(probability >= 0 && probability <= 1)) throw new RangeError('fault probability must be within 0..1');
    this.rules.push({ rule: { ...rule }, left: rule.times ?? Number.POSITIVE_INFINITY });
  }

  /** Removes every rule and the latency. */
  clear(): void {
    this.rules = [];
    this.latencyMs = 0;
  }

  /**
   * The fault to answer `method` (about event `eventId`, if any) with, if a rule fires (spending one of its `times`).
   */
  decide(method: string, eventId?: string): FaultKind | undefined {
    for (const entry of this.rules) {
      const { rule } = entry;
      const applies = rule.methods === undefined ? method !== 'token' : rule.methods.includes(method);
      const matches = rule.eventIds === undefined || (eventId !== undefined && rule.eventIds.includes(eventId));
      if (!applies || !matches || entry.left <= 0) continue;
      if (!this.random.chance(rule.probability ?? 1)) continue;
      entry.left -= 1;
      return rule.kind;
    }
    return undefined;
  }
}

const WINDOW_MS = 60_000;

/** Google's per-user limit: at most `perMinute` requests in any sliding 60 s window. */
export class UserQuota {
  private readonly perMinute: number;
  private readonly now: () => number;
  private readonly recent = new Map<string, number[]>();

  constructor(perMinute: number, now: () => number) {
    this.perMinute = perMinute;
    this.now = now;
  }

  /** Records a request of `user` and answers true, or answers false (not recorded) when the window is full. */
  admit(user: string): boolean {
    const now = this.now();
    const times = (this.recent.get(user) ?? []).filter((at) => at > now - WINDOW_MS);
    this.recent.set(user, times);
    if (times.length >= this.perMinute) return false;
    times.push(now);
    return true;
  }

  /** Forgets every recorded request. */
  reset(): void {
    this.recent.clear();
  }
}
