/**
 * Per-client and overall limits on the requests that cost the university a call, the server CPU or a stored
 * record for an anonymous client (docs/design.md): first requests for a timetable never fetched, sign-ups and
 * credential replacements, teacher searches that miss the cache, Google connects, new feed variants. Beyond a
 * limit: 429 with Retry-After (RateLimitedError, through the error catalog). Clients are keyed as
 * client-address.ts says (an IPv6 /64, within its /48).
 *
 * An overall limit must not become a switch that a few busy clients turn off for everybody: each client's
 * first few requests (its floor, a tenth of its own allowance) may use the whole total, while requests beyond a
 * client's floor may use only half of it. A handful of heavy clients then leave the other half to everyone else.
 * Nor may many addresses asking for made-up ids turn it off for real ones: a first request for an id nobody
 * vouches for (not in the group directory, not a teacher the university named) may not take the last half of
 * the total either, which stays for ids that are likely real.
 */
import type { Config } from '../config.ts';
import type { RateLimitedError } from '../lib/errors.ts';
import { type Bucket, bucket, type Rate, TokenBuckets } from '../lib/rate-limit.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { secondsText } from '../lib/retry-after.ts';
import { secondsWords } from '../lib/words.ts';
import type { Logger } from '../logger.ts';
import { SecretKeyMissingError } from '../security/errors.ts';
import type { Admission, AdmitOptions } from '../serving/admission.ts';
import type { RedisKeys } from '../store/keys.ts';
import type { KnownCredentials } from '../store/known-credentials.ts';
import { CredentialRefusedError, CredentialRejectedError } from '../subscriptions/errors.ts';
import { UpstreamBudgetError, UpstreamBusyError } from '../upstream/errors.ts';
import { type ClientKeys, clientKeys } from './client-address.ts';
import type { Words } from './error-codes.ts';
import { ClientLimitError } from './errors.ts';

/** What a limit counts. */
export type LimitedAction =
  | 'first-request'
  | 'sign-up'
  | 'search'
  | 'google-connect'
  | 'caldav-connect'
  | 'variant-render'
  | 'telegram-link'
  | 'email-sign-up'
  | 'max-link';

type RateSetting = { [K in keyof Config]: Config[K] extends Rate ? K : never }[keyof Config];

/** How each action is limited, and how a refusal names it ("too many …", "слишком много …"). */
const ACTIONS: Record<LimitedAction, { perClient: RateSetting; total?: RateSetting; what: Words }> = {
  'first-request': {
    perClient: 'firstRequestsPerClient',
    total: 'firstRequestsTotal',
    what: { en: 'new timetables', ru: 'новых расписаний' },
  },
  'sign-up': { perClient: 'signUpsPerClient', total: 'signUpsTotal', what: { en: 'sign-ups', ru: 'попыток входа' } },
  search: {
    perClient: 'searchesPerClient',
    total: 'searchesTotal',
    what: { en: 'teacher searches', ru: 'поисков преподавателей' },
  },
  'google-connect': {
    perClient: 'googleConnectsPerClient',
    total: 'googleConnectsTotal',
    what: { en: 'Google connections', ru: 'подключений Google Календаря' },
  },
  'caldav-connect': {
    perClient: 'caldavConnectsPerClient',
    total: 'caldavConnectsTotal',
    what: { en: 'calendar connections', ru: 'подключений календаря' },
  },
  // Renders cost this process's CPU, not the university: the render bound and the cache cap them overall.
  'variant-render': {
    perClient: 'variantRendersPerClient',
    what: { en: 'new feed variants', ru: 'новых вариантов лент' },
  },
  // A page's link to the bot stores nothing lasting and asks nobody: only each client's own count.
  'telegram-link': {
    perClient: 'telegramLinksPerClient',
    what: { en: 'Telegram links', ru: 'ссылок на Telegram' },
  },
  // Each sends a mail to an address someone typed: each client's own count, and each address's (email-sign-up.ts).
  'email-sign-up': {
    perClient: 'mailConfirmationsPerClient',
    what: { en: 'e-mail sign-ups', ru: 'подписок по почте' },
  },
  // The MAX bot's link is the same request as Telegram's, to another messenger: the same allowance, counted apart.
  'max-link': {
    perClient: 'telegramLinksPerClient',
    what: { en: 'MAX links', ru: 'ссылок на MAX' },
  },
};

/** An IPv6 /48 may use this many times one client's allowance. */
export const SITE_ALLOWANCE = 4;
/** A client's floor is this fraction of its own allowance (at least one request per period). */
const FLOOR_FRACTION = 0.1;
/** The fraction of an overall limit that requests beyond their client's floor may use. */
const HEAVY_FRACTION = 0.5;
/** The fraction of an overall limit (and of its heavy share) that requests not {@link AdmitOptions.likelyReal} leave. */
const UNVOUCHED_RESERVE = 0.5;
/** Seconds a client is told to wait when its own sign-ups in progress fill its allowance: about one check. */
const IN_FLIGHT_RETRY_MS = 5_000;

/** Outcomes of a credential check that tell a guesser something: each costs the client a failure token. */
const GUESS_OUTCOMES = [CredentialRejectedError, CredentialRefusedError];
/** Failures that happen before the university is asked (and before anything is stored): tokens go back. */
const NOTHING_SENT = [UpstreamBusyError, UpstreamBudgetError, SecretKeyMissingError];

/** What the limits count on (the service's Redis) and read their rates from. */
export interface ClientLimitsDeps {
  readonly config: Pick<
    Config,
    | RateSetting
    | 'failedSignUpsPerClient'
    | 'failedSignUpsTotal'
    | 'signUpsInFlightPerClient'
    | 'failedSignUpsPerAccepted'
    | 'acceptedCredentialsWindowMs'
    | 'failedSignUpsMaxPerClient'
  >;
  readonly redis: RedisClient;
  readonly keys: Pick<RedisKeys, 'rateLimit'>;
  readonly knownCredentials: Pick<KnownCredentials, 'has' | 'acceptedFrom' | 'acceptedCount'>;
  readonly logger: Pick<Logger, 'warn'>;
}

/**
 * What a credential check answers, as far as the failure budget reads it: the subscription it signed in to (or
 * the subscription itself), whose university user is the owner counted.
 */
export type CheckedCredential = { subscription: OwnedBy } | OwnedBy;
type OwnedBy = { upstreamUserId: number | null };

/** The limits of one app, on the service's Redis. */
export class ClientLimits {
  private readonly ctx: ClientLimitsDeps;
  private readonly buckets: TokenBuckets;
  /** Credential checks of each client running in this process. */
  private readonly checking = new Map<string, number>();

  constructor(ctx: ClientLimitsDeps) {
    this.ctx = ctx;
    this.buckets = new TokenBuckets(ctx.redis);
  }

  /** Counts one `action` of `ip`, or throws {@link RateLimitedError} when the client or everybody is over. */
  async admit(action: LimitedAction, ip: string, options: AdmitOptions = {}): Promise<Admission> {
    const { perClient, total, what } = ACTIONS[action];
    const client = clientKeys(ip);
    const own = this.ownBuckets(`${action}:client`, client, this.ctx.config[perClient]);
    await this.takeOrRefuse(own, {
      en: `too many ${what.en} from your address`,
      ru: `слишком много ${what.ru} с вашего адреса`,
    });
    if (total === undefined) return this.admission(own);
    try {
      const overall = { action, perClient, total, what, likelyReal: options.likelyReal ?? true };
      return this.admission([...own, ...(await this.takeFromTotal(overall, client))]);
    } catch (error) {
      await this.buckets.give(own);
      throw error;
    }
  }

  /**
   * Counts one `action` of `ip` against its own allowance only, not the overall limit: for what costs nobody else
   * (a chat waiting for a fetch another request queued already). Throws {@link RateLimitedError} when it is over.
   */
  async admitOwn(action: LimitedAction, ip: string): Promise<void> {
    const { perClient, what } = ACTIONS[action];
    const own = this.ownBuckets(`${action}:client`, clientKeys(ip), this.ctx.config[perClient]);
    await this.takeOrRefuse(own, {
      en: `too many ${what.en} from your address`,
      ru: `слишком много ${what.ru} с вашего адреса`,
    });
  }

  /** Runs `work` as one `action` of `ip`, giving the tokens back when it failed before asking the university. */
  async spend<T>(action: LimitedAction, ip: string, work: () => Promise<T>): Promise<T> {
    const admission = await this.admit(action, ip);
    try {
      return await work();
    } catch (error) {
      if (NOTHING_SENT.some((type) => error instanceof type)) await admission.refund();
      throw error;
    }
  }

  /**
   * Runs a check of `credential` (sign-up, replacement) for `ip` under the sign-up limits and a failure budget.
   * A refusal by the university (or a credential of someone else) costs the client a failure token, after the
   * fact: correct sign-ups running at once never hold one. A client without failure tokens is refused; so,
   * while the overall failure budget is used up, is one refused twice or more within its own refill time. At most
   * SIGN_UPS_IN_FLIGHT_PER_CLIENT checks of one client run at once, which bounds how far a burst of guesses
   * overshoots its budget (the overshoot is a debt that delays the next try).
   *
   * The failure budget delays guesses, never credentials that work: one the university accepted before (a known
   * credential, by keyed digest) is checked whatever the client's failures, behind a campus NAT while someone
   * there guesses too. It is still sent to the university, like any other, so a right guess is answered no
   * sooner than a wrong one; an unknown credential from a client out of failure tokens is not sent at all. A
   * guesser there learns from the answer only whether a guess is a credential known here, and gets anything
   * only for one the university accepts now, which the credential itself gives at the university anyway.
   *
   * A client's failure budget grows with the distinct people (university users) whose credentials the
   * university accepted from it recently ({@link failureBudget}): first-time credentials behind a NAT that many
   * people use get through their neighbours' typos, while one person's many tokens count once. The budget is
   * read before every check, whatever the credential, and the owner accepted is counted (awaited) after its
   * answer is known, so a right guess is answered no sooner than a wrong one.
   */
  async credentialCheck<T extends CheckedCredential>(
    ip: string,
    credential: string,
    check: () => Promise<T>,
  ): Promise<T> {
    const client = clientKeys(ip);
    const own = this.ownBuckets('sign-up:failures', client, await this.failureBudget(client.client));
    const all = this.bucket('sign-up:failures:total', this.ctx.config.failedSignUpsTotal);
    if (!(await this.ctx.knownCredentials.has(credential))) await this.refuseGuesser(own, all);
    const release = this.startCheck(client.client);
    try {
      const result = await this.spend('sign-up', ip, check);
      await this.countAccepted(client.client, ownerOf(result, credential));
      return result;
    } catch (error) {
      if (GUESS_OUTCOMES.some((type) => error instanceof type)) await this.buckets.charge([...own, all]);
      throw error;
    } finally {
      release();
    }
  }

  /**
   * Counts `owner` among those the university accepted a credential of from `client`. A sign-in that succeeded
   * is answered as one even when this fails (Redis away a moment): the count is only a budget's room, logged.
   */
  private async countAccepted(client: string, owner: string): Promise<void> {
    try {
      await this.ctx.knownCredentials.acceptedFrom(client, owner, this.ctx.config.acceptedCredentialsWindowMs);
    } catch (error) {
      this.ctx.logger.warn({ err: error }, 'could not count an accepted credential of a client');
    }
  }

  /**
   * The failure budget of `client`: the base (`FAILED_SIGN_UPS_PER_CLIENT`), plus `FAILED_SIGN_UPS_PER_ACCEPTED`
   * for each distinct owner beyond the first (a university user; a credential, for a profile without a user id)
   * whose credential the university accepted from it within `ACCEPTED_CREDENTIALS_WINDOW`, at most
   * `FAILED_SIGN_UPS_MAX_PER_CLIENT` (never below the base), over the base's period. One person does not widen
   * it, however many tokens of theirs they send: a lone guesser keeps the base.
   */
  private async failureBudget(client: string): Promise<Rate> {
    const {
      failedSignUpsPerClient: base,
      failedSignUpsPerAccepted: per,
      failedSignUpsMaxPerClient: max,
    } = this.ctx.config;
    const accepted = await this.ctx.knownCredentials.acceptedCount(client, this.ctx.config.acceptedCredentialsWindowMs);
    const grown = base.count + per * Math.max(0, accepted - 1);
    return { count: Math.max(base.count, Math.min(max, grown)), periodMs: base.periodMs };
  }

  /** Refuses a client out of failure tokens, and one with a recent failure while everybody is out of them. */
  private async refuseGuesser(own: Bucket[], all: Bucket): Promise<void> {
    const wait = await this.buckets.wouldTake(own);
    if (wait > 0)
      throw refusal(wait, {
        en: 'too many refused credentials from your address',
        ru: 'слишком много отклонённых токенов с вашего адреса',
      });
    const overall = await this.buckets.wouldTake([all]);
    if (overall === 0) return;
    const [mine] = own as [Bucket];
    // One failure is a typo, and behind a campus NAT anyone's: only a client with two or more recent failures
    // is refused while the overall budget is out (a client with a budget of one: any recent failure).
    const sinceFailure = await this.buckets.wouldTake([mine], Math.max(1, mine.capacity - 1));
    if (sinceFailure === 0) return;
    throw refusal(Math.min(overall, sinceFailure), {
      en: 'too many refused credentials right now, one from your address',
      ru: 'сейчас слишком много отклонённых токенов, и один из них с вашего адреса',
    });
  }

  /** Counts a credential check of `client` as running; answers the function that ends it. */
  private startCheck(client: string): () => void {
    const running = this.checking.get(client) ?? 0;
    if (running >= this.ctx.config.signUpsInFlightPerClient)
      throw refusal(IN_FLIGHT_RETRY_MS, {
        en: 'too many sign-ups in progress from your address',
        ru: 'с вашего адреса уже идёт слишком много попыток входа',
      });
    this.checking.set(client, running + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const left = (this.checking.get(client) ?? 1) - 1;
      if (left > 0) this.checking.set(client, left);
      else this.checking.delete(client);
    };
  }

  /**
   * Takes a token of the overall limit: within the client's floor from the whole of it, beyond the floor only
   * while the heavy share (half the total, a bucket of its own) has one too. A request not likely real leaves
   * the last half of each (a reserve: the buckets are the same, so likely real ones find their tokens there).
   */
  private async takeFromTotal(overall: OverallLimit, client: ClientKeys): Promise<Bucket[]> {
    const { action, perClient, total, what, likelyReal } = overall;
    const totalRate = this.ctx.config[total];
    const shared = (bucket: Bucket): Bucket =>
      likelyReal ? bucket : { ...bucket, reserve: Math.floor(bucket.capacity * UNVOUCHED_RESERVE) };
    const all = shared(this.bucket(`${action}:total`, totalRate));
    const light = [
      this.bucket(`${action}:floor:${client.client}`, fraction(this.ctx.config[perClient], FLOOR_FRACTION)),
      all,
    ];
    const lightWait = await this.buckets.tryTake(light);
    if (lightWait === 0) return light;
    const heavy = [all, shared(this.bucket(`${action}:total-heavy`, fraction(totalRate, HEAVY_FRACTION)))];
    const heavyWait = await this.buckets.tryTake(heavy);
    if (heavyWait === 0) return heavy;
    throw refusal(Math.min(lightWait, heavyWait), {
      en: `too many ${what.en} right now`,
      ru: `сейчас слишком много ${what.ru}`,
    });
  }

  /** The client's own bucket and, for IPv6, its site's. */
  private ownBuckets(name: string, client: ClientKeys, rate: Rate): Bucket[] {
    const own = [this.bucket(`${name}:${client.client}`, rate)];
    if (client.site === undefined) return own;
    return [...own, this.bucket(`${name}:${client.site}`, { ...rate, count: rate.count * SITE_ALLOWANCE })];
  }

  private admission(taken: Bucket[]): Admission {
    let refunded = false;
    return {
      refund: async () => {
        if (refunded) return;
        refunded = true;
        await this.buckets.give(taken);
      },
    };
  }

  private bucket(name: string, rate: Rate): Bucket {
    return bucket(this.ctx.keys.rateLimit(name), rate);
  }

  private async takeOrRefuse(buckets: Bucket[], reason: Words): Promise<void> {
    const wait = await this.buckets.tryTake(buckets);
    if (wait > 0) throw refusal(wait, reason);
  }
}

/** The overall limit of one admitted action, and whether the request is likely real. */
interface OverallLimit {
  action: LimitedAction;
  perClient: RateSetting;
  total: RateSetting;
  what: Words;
  likelyReal: boolean;
}

/**
 * The owner a successful check answered: `user:<id>` of the university user, or for a profile without a user id
 * the credential itself (nothing else tells such people apart; it is digested before it is stored).
 */
function ownerOf(result: CheckedCredential, credential: string): string {
  const { upstreamUserId } = 'subscription' in result ? result.subscription : result;
  return upstreamUserId === null ? `credential:${credential}` : `user:${upstreamUserId}`;
}

/** A 429 that says why and when to try again. */
function refusal(waitMs: number, reason: Words): RateLimitedError {
  return new ClientLimitError(waitMs, {
    en: `${reason.en}; try again in ${secondsText(waitMs)}`,
    ru: `${reason.ru}; попробуйте снова через ${secondsWords(waitMs).ru}`,
  });
}

/** `rate` scaled by `share`, over the same period, at least one request. */
function fraction(rate: Rate, share: number): Rate {
  return { count: Math.max(1, Math.floor(rate.count * share)), periodMs: rate.periodMs };
}
