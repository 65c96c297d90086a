/**
 * Subscribing an address to a timetable's changes by e-mail, with double opt-in: asking stores a sign-up for
 * 48 h and queues a mail with its confirmation link; only the link's POST subscribes (a mail scanner that fetches
 * the link confirms nothing); the mails' one-click link unsubscribes and, with the last timetable, deletes the
 * address. The routes (http/email-routes.ts) and any later command call these.
 *
 * Asking answers the same whether the address was new, waiting for its confirmation or subscribed already, so
 * that nobody learns from it whether an address is subscribed; a second confirmation only replaces the options.
 * One address gets at most `MAIL_CONFIRMATIONS_PER_ADDRESS` confirmation mails, whoever asks (each client is
 * limited by `MAIL_CONFIRMATIONS_PER_CLIENT` at the route).
 */
import type { Config } from '../config.ts';
import { activateSource } from '../jobs/activation.ts';
import { enqueueConfirmation } from '../jobs/email-confirm.ts';
import { enqueueRefresh, type Queues, type RefreshJobSettings } from '../jobs/queues.ts';
import { bucket, TokenBuckets } from '../lib/rate-limit.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { SecretKeyMissingError } from '../security/errors.ts';
import type { RedisKeys } from '../store/keys.ts';
import type { ConfirmOutcome, Mailboxes } from '../store/mailboxes.ts';
import type { SourceRegistry } from '../store/registry.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import type { NotifyOptions } from '../timetable/notify-change.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import { ConfirmationsLimitError } from './errors.ts';

/** What asking for a subscription uses. */
export interface EmailSignUpDeps {
  readonly config: Pick<Config, 'mailConfirmationsPerAddress'>;
  readonly redis: RedisClient;
  readonly keys: Pick<RedisKeys, 'rateLimit'>;
  readonly mailboxes: Pick<Mailboxes, 'canStoreAddresses' | 'addressHash' | 'createPending'>;
  readonly queues: Pick<Queues, 'email'>;
  readonly now: () => number;
}

/** What one asks for. `address` is normalised (lib/mail-address.ts). Never log it. */
export interface EmailSignUp {
  address: string;
  source: SourceKey;
  options: NotifyOptions;
  digest: boolean;
}

/**
 * Stores a sign-up and queues its confirmation mail. Throws {@link ConfirmationsLimitError} when the address had
 * its confirmation mails for now, and SecretKeyMissingError without `SECRET_KEY` (nothing can be sealed).
 */
export async function askEmailSubscription(ctx: EmailSignUpDeps, input: EmailSignUp): Promise<void> {
  if (!ctx.mailboxes.canStoreAddresses) throw new SecretKeyMissingError();
  const hash = ctx.mailboxes.addressHash(input.address);
  const own = bucket(ctx.keys.rateLimit(`mail-confirm:address:${hash}`), ctx.config.mailConfirmationsPerAddress);
  const wait = await new TokenBuckets(ctx.redis).tryTake([own]);
  if (wait > 0) throw new ConfirmationsLimitError(wait);
  const pendingId = await ctx.mailboxes.createPending({ ...input, now: ctx.now() });
  await enqueueConfirmation(ctx.queues, pendingId);
}

/** What confirming uses: the mailboxes, and the registry and queues that make a timetable refreshed. */
export interface EmailConfirmationDeps {
  readonly config: RefreshJobSettings;
  readonly mailboxes: Pick<Mailboxes, 'pendingIdOf' | 'pending' | 'forgetPending' | 'confirm'>;
  /** A personal timetable's subscription, which must still exist. */
  readonly subscriptions: Pick<SubscriptionStore, 'get'>;
  readonly registry: Pick<SourceRegistry, 'isActive' | 'activate'>;
  readonly queues: Queues;
  readonly now: () => number;
}

/**
 * Confirms the sign-up a link's token names: its mailbox follows the timetable from now on, and the timetable is
 * refreshed as a visited page's is (made active, fetched when it was not). `expired` for a token that is not ours,
 * used already or 48 h old, or for a personal timetable deleted since the sign-up (its sign-up is forgotten).
 */
export async function confirmEmailSubscription(ctx: EmailConfirmationDeps, token: string): Promise<ConfirmOutcome> {
  const pendingId = ctx.mailboxes.pendingIdOf(token);
  if (pendingId === undefined) return { kind: 'expired' };
  const signUp = await ctx.mailboxes.pending(pendingId);
  if (signUp === undefined) return { kind: 'expired' };
  const { kind, id } = sourceOf(signUp.source);
  if (kind === 'personal' && (await ctx.subscriptions.get(id)) === undefined) {
    await ctx.mailboxes.forgetPending(pendingId);
    return { kind: 'expired' };
  }
  const outcome = await ctx.mailboxes.confirm(pendingId, ctx.now());
  if (outcome.kind === 'added' && !(await ctx.registry.isActive(outcome.source))) {
    await activateSource(ctx, outcome.source);
    await enqueueRefresh(ctx.queues, ctx.config, outcome.source, { reason: 'demand', now: ctx.now() });
  }
  return outcome;
}

/**
 * Unsubscribes the mailbox and timetable an unsubscribe token names (deleting the address with its last
 * timetable); resolves to the timetable it left, or undefined for a token that names nothing (any more).
 */
export async function unsubscribeEmail(
  ctx: { readonly mailboxes: Pick<Mailboxes, 'resolveUnsubscribe' | 'unsubscribe'> },
  token: string,
): Promise<SourceKey | undefined> {
  const found = await ctx.mailboxes.resolveUnsubscribe(token);
  if (found === undefined) return undefined;
  await ctx.mailboxes.unsubscribe(found.mailboxId, found.source);
  return found.source;
}
