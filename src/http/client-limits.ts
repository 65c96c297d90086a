/**
 * Per-client and overall limits on the requests that cost the university a call or store something for an
 * anonymous client (docs/design.md): first requests for a timetable never fetched, sign-ups and credential
 * replacements, teacher searches that miss the cache, Google connects. Beyond a limit: 429 with Retry-After
 * (RateLimitedError, through the error catalog). A client is its address (`request.ip`, which TRUST_PROXY
 * decides); an IPv6 client is its /64, the block one subscriber usually holds.
 */
import { isIPv6 } from 'node:net';
import type { Config } from '../config.ts';
import { type Bucket, bucket, type Rate, RateLimitedError, TokenBuckets } from '../lib/rate-limit.ts';
import type { ServiceContext } from '../runtime/context.ts';
import { CredentialRefusedError, CredentialRejectedError } from '../subscriptions/errors.ts';

/** What a limit counts. */
export type LimitedAction = 'first-request' | 'sign-up' | 'search' | 'google-connect';

/** How each action is limited, and how a refusal reads. */
const ACTIONS: Record<LimitedAction, { perClient: keyof Config; total: keyof Config; what: string }> = {
  'first-request': { perClient: 'firstRequestsPerClient', total: 'firstRequestsTotal', what: 'new timetables' },
  'sign-up': { perClient: 'signUpsPerClient', total: 'signUpsTotal', what: 'sign-ups' },
  search: { perClient: 'searchesPerClient', total: 'searchesTotal', what: 'teacher searches' },
  'google-connect': { perClient: 'googleConnectsPerClient', total: 'googleConnectsTotal', what: 'Google connections' },
};

/** Outcomes of a credential check that tell a guesser something: each costs the client a failure token. */
const GUESS_OUTCOMES = [CredentialRejectedError, CredentialRefusedError];

/** The limits of one app, on the service's Redis. */
export class ClientLimits {
  private readonly ctx: ServiceContext;
  private readonly buckets: TokenBuckets;

  constructor(ctx: ServiceContext) {
    this.ctx = ctx;
    this.buckets = new TokenBuckets(ctx.redis);
  }

  /** Counts one `action` of `ip`, or throws {@link RateLimitedError} when the client or everybody is over. */
  async admit(action: LimitedAction, ip: string): Promise<void> {
    const { perClient, total, what } = ACTIONS[action];
    const client = this.bucket(`${action}:client:${clientOf(ip)}`, perClient);
    const all = this.bucket(`${action}:total`, total);
    await this.takeOrRefuse([client], `too many ${what} from your address`);
    try {
      await this.takeOrRefuse([all], `too many ${what} right now`);
    } catch (error) {
      await this.buckets.give([client]);
      throw error;
    }
  }

  /**
   * Runs a credential check (sign-up, replacement) for `ip` under the sign-up limits, with a failure budget:
   * each check holds a failure token, given back unless the university refused the credential (or it belongs
   * to someone else). A guesser gets FAILED_SIGN_UPS_PER_CLIENT tries, then one per refill.
   */
  async credentialCheck<T>(ip: string, check: () => Promise<T>): Promise<T> {
    const failures = this.bucket(`sign-up:failures:${clientOf(ip)}`, 'failedSignUpsPerClient');
    await this.takeOrRefuse([failures], 'too many refused credentials from your address');
    let guessed = false;
    try {
      await this.admit('sign-up', ip);
      return await check();
    } catch (error) {
      guessed = GUESS_OUTCOMES.some((type) => error instanceof type);
      throw error;
    } finally {
      if (!guessed) await this.buckets.give([failures]);
    }
  }

  private bucket(name: string, setting: keyof Config): Bucket {
    return bucket(this.ctx.keys.rateLimit(name), this.ctx.config[setting] as Rate);
  }

  private async takeOrRefuse(buckets: Bucket[], reason: string): Promise<void> {
    const wait = await this.buckets.tryTake(buckets);
    if (wait === 0) return;
    const seconds = Math.max(1, Math.ceil(wait / 1000));
    throw new RateLimitedError(wait, `${reason}; try again in ${seconds} seconds`);
  }
}

/** The key of a client address: IPv4 as is (IPv4-mapped IPv6 included), IPv6 by its /64 prefix. */
export function clientOf(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1] as string;
  if (!isIPv6(ip)) return ip;
  return `${expandIPv6(ip).slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, `::` expanded (a zone id such as `%eth0` dropped). */
function expandIPv6(ip: string): string[] {
  const [head = '', tail] = (ip.split('%')[0] as string).split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = 8 - left.length - right.length;
  return [...left, ...Array.from({ length: Math.max(0, missing) }, () => '0'), ...right].map((group) =>
    group.toLowerCase().replace(/^0+(?=.)/, ''),
  );
}
