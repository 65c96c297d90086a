/**
 * Everything Google push needs, built once per process by the composition root: the target store (with each
 * target's index), the shared request budget, the OAuth client, and a factory of calendars that wait for the
 * budget before every request.
 */
import type { Config } from '../config.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { hashToken } from '../security/tokens.ts';
import type { RedisKeys } from '../store/keys.ts';
import { PushTargetStore } from '../store/push-target-store.ts';
import { RequestBudget } from '../store/request-budget.ts';
import type { CalendarClient, CalendarClientFactory } from './calendar-client.ts';
import { GoogleNotConfiguredError } from './errors.ts';
import { createGoogleCalendar } from './google-calendar.ts';
import { type GoogleTargetStore, googleTargetLayout } from './google-targets.ts';
import { GoogleOAuth } from './oauth.ts';

/** The Google side of the service context. */
export interface GoogleServices {
  /** Whether calendars can be reached: client credentials are configured, or a calendar factory was given (tests). */
  readonly configured: boolean;
  readonly targets: GoogleTargetStore;
  readonly budget: RequestBudget;
  /** Consent and code exchange; undefined without client credentials. */
  readonly oauth: GoogleOAuth | undefined;
  /**
   * A calendar acting with `refreshToken` whose every request first takes one from the budget `budgetKey`
   * (a wait for it ends when `signal` aborts, e.g. on shutdown). Throws {@link GoogleNotConfiguredError} when
   * not {@link configured}.
   */
  calendar(refreshToken: string, budgetKey: string, signal?: AbortSignal): CalendarClient;
}

/** What {@link createGoogleServices} is built from. */
export interface GoogleServicesOptions {
  config: Config;
  redis: RedisClient;
  keys: RedisKeys;
  /** Builds calendars; default: the Google adapter for `config`. Tests pass an in-memory one. */
  factory?: CalendarClientFactory;
}

/** Builds the Google services; nothing connects until a calendar makes its first request. */
export function createGoogleServices(options: GoogleServicesOptions): GoogleServices {
  const { config, redis, keys } = options;
  const credentials = config.googleClientId !== undefined && config.googleClientSecret !== undefined;
  const factory: CalendarClientFactory | undefined =
    options.factory ??
    (credentials
      ? (refreshToken, beforeRequest) => createGoogleCalendar(config, refreshToken, beforeRequest)
      : undefined);
  const budget = new RequestBudget(redis, keys, {
    userPerMinute: config.googleUserRateLimit,
    globalPerSecond: config.googleRateLimit,
  });
  const targets = new PushTargetStore(redis, googleTargetLayout(keys), config.secretKey);
  return {
    configured: factory !== undefined,
    targets,
    budget,
    oauth: credentials ? new GoogleOAuth(config) : undefined,
    calendar: (refreshToken, budgetKey, signal) => {
      if (factory === undefined) throw new GoogleNotConfiguredError();
      return factory(refreshToken, () => budget.take(budgetKey, signal));
    },
  };
}

/**
 * The budget a grant's requests count against: Google's user id when known (the limit is per user, and one
 * user may grant several tokens), else a digest of the refresh token (the same token is the same user).
 * Never the token itself: budget keys appear in Redis key names.
 */
export function budgetKeyFor(googleUser: string | undefined, refreshToken: string): string {
  return googleUser === undefined ? `token:${hashToken(refreshToken).slice(0, 16)}` : `user:${googleUser}`;
}
