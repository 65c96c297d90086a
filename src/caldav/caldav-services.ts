/**
 * Everything CalDAV push needs, built once per process by the composition root (the twin of
 * google/google-services.ts): the target store (with each target's index), the per-host budget shared by every
 * worker, and a factory of clients whose every request first waits for its host's turn.
 */
import type { Config } from '../config.ts';
import { RateLimitedError } from '../lib/errors.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { CalDavHostBudget } from '../store/caldav-host-budget.ts';
import type { RedisKeys } from '../store/keys.ts';
import { PushTargetStore } from '../store/push-target-store.ts';
import type { BeforeCalDavRequest, CalDavClient, CalDavClientFactory, CalDavCredentials } from './caldav-client.ts';
import { type CalDavTargetStore, caldavTargetLayout } from './caldav-targets.ts';
import { CalDavRateLimitError } from './errors.ts';

/** The CalDAV side of the service context. */
export interface CalDavServices {
  readonly targets: CalDavTargetStore;
  readonly budget: CalDavHostBudget;
  /**
   * A client for one account whose every request first waits for its host's budget and cool-down (a wait ends
   * when `signal` aborts, e.g. on shutdown; a cool-down longer than a request should wait in place fails the
   * request with {@link CalDavRateLimitError}, so that the push job is put aside until it is over).
   */
  client(credentials: CalDavCredentials, signal?: AbortSignal): CalDavClient;
  /** Closes what the client factory holds open (connection pools). */
  close(): Promise<void>;
}

/** What {@link createCalDavServices} is built from. */
export interface CalDavServicesOptions {
  config: Pick<Config, 'secretKey' | 'caldavRateLimit'>;
  redis: RedisClient;
  keys: RedisKeys;
  /** Builds clients: the real adapter in production, an in-memory server in tests. */
  factory: CalDavClientFactory;
  /** Closes what `factory` holds open, if anything. */
  closeFactory?: (() => Promise<void>) | undefined;
}

/** Builds the CalDAV services; nothing connects until a client makes its first request. */
export function createCalDavServices(options: CalDavServicesOptions): CalDavServices {
  const { config, redis, keys, factory } = options;
  const budget = new CalDavHostBudget(redis, keys, config.caldavRateLimit);
  const targets = new PushTargetStore(redis, caldavTargetLayout(keys), config.secretKey);
  return {
    targets,
    budget,
    client: (credentials, signal) => factory(credentials, hostBudgetHook(budget, signal), signal),
    close: async () => {
      await options.closeFactory?.();
    },
  };
}

/**
 * The wait before each request to a host: its cool-down, then a token of its rate. A cool-down too long to wait
 * in place becomes the rate limit the server would have answered: the push job is put aside until it is over.
 * It carries no status (the server said nothing new), so the failure policy does not extend the cool-down.
 */
export function hostBudgetHook(
  budget: Pick<CalDavHostBudget, 'take'>,
  signal: AbortSignal | undefined,
): BeforeCalDavRequest {
  return async (host) => {
    try {
      await budget.take(host, signal ? { signal } : {});
    } catch (error) {
      if (!(error instanceof RateLimitedError)) throw error;
      throw new CalDavRateLimitError(`${host} is cooling down after it asked us to slow down`, {
        host,
        retryAfterMs: error.retryAfterMs,
        cause: error,
      });
    }
  };
}
