import {
  type ActivationDeps,
  activateSource,
  type ReconcileRequestDeps,
  requestReconcile,
} from '../jobs/activation.ts';
import { enqueueRefresh, type RefreshJobSettings } from '../jobs/queues.ts';
import { type ForgetSourceDeps, forgetSource } from '../jobs/term-starts.ts';
import type { DiskWaiter } from '../lib/redis-durability.ts';
import { withLock } from '../lib/redis-lock.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import type { ChannelAdapter } from '../notify/channel.ts';
import type { PushKindTargets } from '../push/adapter.ts';
import { DecryptionError, SecretKeyMissingError } from '../security/errors.ts';
import { SignUpContentionError } from '../store/errors.ts';
import { announceFeedUpdate } from '../store/feed-updates.ts';
import type { GroupDirectory } from '../store/group-directory.ts';
import type { RedisKeys } from '../store/keys.ts';
import type { KnownCredentials } from '../store/known-credentials.ts';
import type { SourceRegistry } from '../store/registry.ts';
import type {
  IssuedSubscription,
  NewSubscription,
  Subscription,
  SubscriptionStore,
  TokenHolder,
} from '../store/subscription-store.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import { CredentialRefusedError, CredentialRejectedError } from './errors.ts';
import { type Profile, type ProfileDeps, profileCalendarName, verifiedProfile } from './profile.ts';
import { stopFollowing } from './push-disconnect.ts';

/** A subscription and its new feed token, the only copy of it there will ever be. */
export type SignedUp = IssuedSubscription;

/** A sign-in on the page: the subscription, and the secret of the browser session it opened (for the cookie). */
export interface SignedIn {
  subscription: Subscription;
  session: string;
  created: boolean;
}

/**
 * What checking a credential with the university uses: the university, the store that must be able to seal the
 * credential, and the known credentials that keep the university's verdict.
 */
type CredentialCheckDeps = ProfileDeps & {
  readonly subscriptions: Pick<SubscriptionStore, 'canStoreCredentials'>;
  readonly knownCredentials: Pick<KnownCredentials, 'remember' | 'forget'>;
};

/**
 * What {@link replaceCredential} uses: a credential check's, the subscription store, and what starts a refresh
 * that reads the new credential.
 */
export type ReplaceCredentialDeps = CredentialCheckDeps &
  ActivationDeps & {
    readonly config: RefreshJobSettings;
    readonly logger: Logger;
    readonly subscriptions: SubscriptionStore;
  };

/**
 * What {@link signUp} uses: a replacement's, and the group directory the profile's group goes to, the owner's
 * lock, the source registry a failed sign-up is taken back from, and the wait for Redis's disk.
 */
export type SignUpDeps = ReplaceCredentialDeps & {
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  readonly disk: Pick<DiskWaiter, 'wait'>;
  readonly registry: Pick<SourceRegistry, 'remove'>;
  readonly directory: Pick<GroupDirectory, 'record'>;
};

/** What {@link deleteSubscription} uses: its push targets', its source's, and the credentials it forgets. */
export type DeleteSubscriptionDeps = ForgetSourceDeps &
  ReconcileRequestDeps & {
    readonly logger: Logger;
    /** Every registered calendar kind: their targets of the subscription stop following it. */
    readonly pushKinds: readonly PushKindTargets<'idsForSource' | 'get' | 'credential' | 'remove'>[];
    readonly subscriptions: Pick<SubscriptionStore, 'credentialOf' | 'delete'>;
    readonly knownCredentials: Pick<KnownCredentials, 'forget'>;
    /** Every registered channel, on or off: their subscribers of the subscription's timetable leave it. */
    readonly notify: { readonly channels: readonly Pick<ChannelAdapter, 'name' | 'forgetSource'>[] };
  };

/** What {@link rotateFeedToken} and {@link revokeFeedUrl} use. */
export interface RotateFeedTokenDeps {
  readonly logger: Logger;
  readonly subscriptions: Pick<SubscriptionStore, 'rotateToken' | 'revokeToken' | 'revokeFeedUrl' | 'issuePageToken'>;
  readonly disk: Pick<DiskWaiter, 'wait'>;
  /** Epoch ms. */
  readonly now: () => number;
}

/** What {@link saveFeedOptions} uses: the store, and the channel API processes drop their caches on. */
export interface SaveFeedOptionsDeps {
  readonly logger: Logger;
  readonly subscriptions: Pick<SubscriptionStore, 'saveFeedOptions'>;
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  /** Epoch ms. */
  readonly now: () => number;
}

/** How long one sign-up may hold its owner's lock: it makes a few Redis writes, far less. */
const SIGN_UP_LOCK_MS = 10_000;

/**
 * Signs a person up: checks the credential with the university, then either stores a new subscription (the
 * credential sealed) and queues its first refresh, or, when this university user has a subscription already,
 * gives that one a new feed token (its least recently used beyond five is revoked) and the credential just checked, and
 * queues a refresh that reads it (`created` says which). A group the profile names (id and name) is kept on
 * the subscription and recorded in the group directory. A profile without a user id is tied to its credential
 * (a keyed digest): the same credential finds the same subscription, another credential makes another one.
 * The answer waits until the new token is on Redis's disk; when it cannot be, the sign-up is taken back (a
 * person's existing feed URLs are revoked only after the new one is known to last) and Redis's error thrown.
 * Throws SecretKeyMissingError without a `SECRET_KEY` (before the university is asked), and
 * CredentialRejectedError or CredentialCheckError from the check. `log` is the request's logger when a route
 * calls (the line then carries the request id).
 */
export async function signUp(
  ctx: SignUpDeps,
  credential: string,
  log: Pick<Logger, 'info'> = ctx.logger,
): Promise<SignedUp> {
  return asOwner(ctx, credential, async (input) => {
    // Pending: the person's other tokens all stay live until the new one is known to last.
    const issued = await ctx.subscriptions.create(input, { pending: true });
    await startRefreshing(ctx, issued);
    // The token is shown once: it must survive a Redis crash right after the answer (appendfsync everysec).
    // Waited for under the lock, so that a rollback never races the next sign-up.
    await rollBackOnFailure(ctx, issued, () => ctx.disk.wait());
    const { id } = issued.subscription;
    if (issued.created) {
      log.info({ subscription: id }, 'personal subscription created');
      return issued;
    }
    // The new token lasts: now the least recently used beyond the limit go. Should that fail, the token is
    // still answered (it is safely stored); the next sign-up trims the extra one.
    const trimmed = await ctx.subscriptions.trimTokens(id).catch((error: unknown) => {
      ctx.logger.warn({ err: error, subscription: id }, 'could not revoke the tokens beyond the limit');
      return 0;
    });
    const revoked = issued.revoked + trimmed;
    log.info({ subscription: id, revokedTokens: revoked }, 'personal subscription signed up again');
    return { ...issued, revoked };
  });
}

/**
 * Signs a person in on the page: the credential is checked and stored as {@link signUp} does, but what the
 * browser gets is a session of its own, not a feed URL. A new subscription's first token becomes the page's own
 * feed URL; an existing subscription keeps every feed URL it has (a sign-in revokes none: the URL a calendar
 * reads stays), and gets a page URL only when it has none yet. Beyond the most sessions the oldest session is
 * closed. The answer waits until the session (and a page URL issued now) is on Redis's disk; when it cannot be,
 * both are taken back (a new subscription deleted) and Redis's error thrown. Throws as {@link signUp}.
 */
export async function signIn(
  ctx: SignUpDeps & { readonly subscriptions: Pick<SubscriptionStore, 'openSession' | 'closeSession'> },
  credential: string,
  log: Pick<Logger, 'info'> = ctx.logger,
): Promise<SignedIn> {
  return asOwner(ctx, credential, async (input) => {
    const issued = await ctx.subscriptions.create(input, { page: true });
    const { id } = issued.subscription;
    const fresh = issued.created || issued.pageTokenIssued === true;
    // Only what was issued now is taken back on failure: a page URL the subscription had stays.
    const undo: IssuedSubscription = fresh ? issued : { ...issued, token: '' };
    await startRefreshing(ctx, undo);
    let session: string | undefined;
    await rollBackOnFailure(ctx, undo, async () => {
      session = await ctx.subscriptions.openSession(id, ctx.now());
      if (session === undefined) throw new SignUpContentionError();
      await ctx.disk.wait().catch(async (error: unknown) => {
        if (session !== undefined) await ctx.subscriptions.closeSession(id, session).catch(() => undefined);
        throw error;
      });
    });
    if (session === undefined) throw new SignUpContentionError();
    log.info({ subscription: id, created: issued.created }, 'personal subscription signed in on the page');
    return { subscription: issued.subscription, session, created: issued.created };
  });
}

/**
 * Checks `credential` with the university, records the group its profile names, and runs `step` with the new
 * subscription's fields under the owner's lock: sign-ups and sign-ins of one person take turns.
 */
async function asOwner<T>(
  ctx: SignUpDeps,
  credential: string,
  step: (input: NewSubscription) => Promise<T>,
): Promise<T> {
  requireCredentialStorage(ctx);
  const profile = await checkedProfile(ctx, credential);
  // The university just named this group: the directory learns it, whether or not the sign-up goes on.
  if (profile.group) await ctx.directory.record(profile.group.id, profile.group.name);
  const owner = ctx.subscriptions.ownerOf(profile.id, credential);
  // The store alone already ends simultaneous sign-ups with one subscription; the lock spares them retrying
  // against each other, and keeps a rollback from racing the next sign-up.
  return withLock(ctx.redis, ctx.keys.lock(`sign-up:${owner}`), SIGN_UP_LOCK_MS, () =>
    step({
      credential,
      name: profileCalendarName(profile),
      upstreamUserId: profile.id,
      group: profile.group,
      now: ctx.now(),
    }),
  );
}

/**
 * Keeps the source of a sign-up refreshed and queues a refresh with the credential just stored. Without it a
 * new subscription would never get a feed: it is taken back (as is the token of an existing one, whose answer
 * is never sent), and the person may try again.
 */
async function startRefreshing(ctx: SignUpDeps, issued: IssuedSubscription): Promise<void> {
  const { source } = issued.subscription;
  await rollBackOnFailure(ctx, issued, async () => {
    await activateSource(ctx, source);
    // A refresh already running for an existing subscription uses its old credential: queue one behind it.
    await enqueueRefresh(ctx.queues, ctx.config, source, {
      reason: 'subscription',
      now: ctx.now(),
      ...(issued.created ? {} : { followUp: true }),
    });
  });
}

/**
 * Runs `step`; when it fails, the sign-up is taken back before its error goes on: a new subscription is
 * deleted with its source, a new token of an existing one revoked (its answer is never sent). A rollback that
 * fails too (Redis away) is logged: the token it leaves was never shown to anyone.
 */
async function rollBackOnFailure(ctx: SignUpDeps, issued: IssuedSubscription, step: () => Promise<void>) {
  try {
    await step();
  } catch (error) {
    const { id, source } = issued.subscription;
    try {
      if (issued.created) {
        await ctx.subscriptions.delete(id);
        await ctx.registry.remove(source);
      } else if (issued.token !== '') {
        await ctx.subscriptions.revokeToken(id, issued.token);
      }
    } catch (rollback) {
      ctx.logger.warn({ err: rollback, subscription: id }, 'could not take back a failed sign-up');
    }
    throw error;
  }
}

/**
 * A new credential for an existing subscription (typically one the university started rejecting). It must
 * belong to the same university user: a subscription never changes whose timetable it shows. A credential the
 * university rejects, one of another user, and one whose user cannot be told (a user id missing on either
 * side, and not the subscription's own credential) are all refused alike with {@link CredentialRefusedError}
 * (why is logged): telling them apart would make this a test of stolen credentials that sign-up is not.
 * Resolves to the subscription as it is now.
 */
export async function replaceCredential(
  ctx: ReplaceCredentialDeps,
  subscription: Subscription,
  credential: string,
  log: Pick<Logger, 'info'> = ctx.logger,
): Promise<Subscription> {
  requireCredentialStorage(ctx);
  try {
    const profile = await checkedProfile(ctx, credential);
    await requireSameUser(ctx, subscription, profile, credential);
  } catch (error) {
    const refused =
      error instanceof CredentialRejectedError ? new CredentialRefusedError('rejected', { cause: error }) : error;
    if (refused instanceof CredentialRefusedError)
      log.info({ subscription: subscription.id, reason: refused.reason }, 'replacement credential refused');
    throw refused;
  }
  await ctx.subscriptions.replaceCredential(subscription.id, credential, ctx.now());
  await activateSource(ctx, subscription.source);
  // A refresh already running uses the old credential: queue one behind it that reads the new one.
  await enqueueRefresh(ctx.queues, ctx.config, subscription.source, {
    reason: 'subscription',
    now: ctx.now(),
    followUp: true,
  });
  log.info({ subscription: subscription.id }, 'personal subscription credential replaced');
  return (await ctx.subscriptions.get(subscription.id)) ?? subscription;
}

/**
 * Deletes a subscription with everything that hangs on it: its calendars of every kind stop following it
 * (they stay in the person's account, with the classes they hold), every channel's subscribers leave it (a
 * mailbox that followed nothing else is deleted with its address: no mail with an unsubscribe link would ever come
 * again), its source and feed are removed, and the reconciler drops the source's job scheduler now rather than at
 * its next periodic run.
 */
export async function deleteSubscription(
  ctx: DeleteSubscriptionDeps,
  subscription: Subscription,
  log: Pick<Logger, 'info'> = ctx.logger,
): Promise<void> {
  await stopFollowing(ctx, ctx.pushKinds, subscription.source);
  for (const channel of ctx.notify.channels) {
    const left = (await channel.forgetSource?.(subscription.source)) ?? 0;
    if (left > 0) log.info({ subscription: subscription.id, channel: channel.name, left }, 'channel subscribers left');
  }
  await forgetStoredCredential(ctx, subscription);
  await ctx.subscriptions.delete(subscription.id);
  await forgetSource(ctx, subscription.source, log);
  await requestReconcile(ctx);
  log.info({ subscription: subscription.id }, 'personal subscription deleted');
}

/**
 * A new feed URL for the holder of a browser session (or, signed in before sessions, of a live feed token):
 * every token of the subscription is revoked at once (calendars subscribed with any old URL must subscribe
 * again; browser sessions stay) and one new one issued, the page's own URL from now on. Answers the new token,
 * or undefined when the holder is no longer live (rotated, signed out or deleted meanwhile). The answer waits
 * until the rotation is on Redis's disk; when it cannot be, the new token is revoked too and Redis's error
 * thrown (no URL of the subscription works then until the person signs in again).
 */
export async function rotateFeedToken(
  ctx: RotateFeedTokenDeps,
  subscription: Subscription,
  holder: TokenHolder,
  log: Pick<Logger, 'info'> = ctx.logger,
): Promise<string | undefined> {
  const token = await ctx.subscriptions.rotateToken(subscription.id, holder, ctx.now());
  if (token === undefined) return undefined;
  try {
    // Shown once, like a sign-up's: it must survive a Redis crash right after the answer.
    await ctx.disk.wait();
  } catch (error) {
    // Never shown: taken back. The old URLs stay revoked (their holder asked for that, a leak may be why);
    // signing up again with the credential gives a working URL.
    await ctx.subscriptions
      .revokeToken(subscription.id, token)
      .catch((rollback: unknown) =>
        ctx.logger.warn({ err: rollback, subscription: subscription.id }, 'could not take back a failed rotation'),
      );
    throw error;
  }
  log.info({ subscription: subscription.id }, 'personal feed token rotated');
  return token;
}

/**
 * Revokes one feed URL of the subscription that its owner chose on the page (by its key): a calendar reading it
 * gets 404 from now on. When it was the page's own URL, a new one is issued in its place (the page must show a
 * working URL) and waited for on Redis's disk like a rotation's. Resolves to what was revoked, or undefined when
 * no live URL has that key.
 */
export async function revokeFeedUrl(
  ctx: RotateFeedTokenDeps,
  subscription: Subscription,
  key: string,
  log: Pick<Logger, 'info'> = ctx.logger,
): Promise<'page' | 'other' | undefined> {
  const revoked = await ctx.subscriptions.revokeFeedUrl(subscription.id, key);
  if (revoked === 'page') {
    const token = await ctx.subscriptions.issuePageToken(subscription.id, ctx.now());
    if (token !== undefined) await ctx.disk.wait();
  }
  if (revoked !== undefined) log.info({ subscription: subscription.id, page: revoked === 'page' }, 'feed URL revoked');
  return revoked;
}

/**
 * Saves the feed options (already validated) that the subscription's plain feed URL serves from now on, and
 * announces the change on the feed-updates channel, so that every API process drops what it cached of them.
 * Google push does not apply them: a pushed calendar holds the whole timetable, like a group's. Resolves to
 * whether it saved (false when the subscription is gone).
 */
export async function saveFeedOptions(
  ctx: SaveFeedOptionsDeps,
  subscription: Subscription,
  options: SubscriberOptions,
  log: Pick<Logger, 'info'> = ctx.logger,
): Promise<boolean> {
  const saved = await ctx.subscriptions.saveFeedOptions(subscription.id, options, ctx.now());
  if (!saved) return false;
  await announceFeedUpdate(ctx.redis, ctx.keys, { kind: 'feed', source: subscription.source });
  log.info({ subscription: subscription.id, options: Object.keys(options) }, 'personal feed options saved');
  return true;
}

/**
 * Asks the university whose `credential` is ({@link verifiedProfile}), and keeps its verdict: a credential it
 * accepted is known from now on (the sign-up failure limits never refuse it), one it rejected no longer is.
 */
async function checkedProfile(ctx: CredentialCheckDeps, credential: string): Promise<Profile> {
  try {
    const profile = await verifiedProfile(ctx, credential);
    await ctx.knownCredentials.remember(credential);
    return profile;
  } catch (error) {
    if (error instanceof CredentialRejectedError) await ctx.knownCredentials.forget(credential);
    throw error;
  }
}

/**
 * A deleted subscription's credential is no longer known. One that cannot be read (another SECRET_KEY) is left
 * to expire: nothing could have recognised it either.
 */
async function forgetStoredCredential(
  ctx: Pick<DeleteSubscriptionDeps, 'subscriptions' | 'knownCredentials'>,
  subscription: Subscription,
): Promise<void> {
  let credential: string | undefined;
  try {
    credential = await ctx.subscriptions.credentialOf(subscription.id);
  } catch (error) {
    if (error instanceof DecryptionError || error instanceof SecretKeyMissingError) return;
    throw error;
  }
  if (credential !== undefined) await ctx.knownCredentials.forget(credential);
}

/** Throws unless `credential` (whose profile is `profile`) may replace the credential of `subscription`. */
async function requireSameUser(
  ctx: { readonly subscriptions: Pick<SubscriptionStore, 'isOwnCredential'> },
  subscription: Subscription,
  profile: Profile,
  credential: string,
): Promise<void> {
  if (subscription.upstreamUserId !== null && profile.id !== null) {
    if (profile.id !== subscription.upstreamUserId) throw new CredentialRefusedError('other-user');
    return;
  }
  // Without an id on both sides nothing tells two people apart: only the credential itself is recognised.
  if (!(await ctx.subscriptions.isOwnCredential(subscription.id, credential)))
    throw new CredentialRefusedError('unverifiable');
}

/** Credentials are stored sealed: without a `SECRET_KEY` nothing may be asked of the university first. */
function requireCredentialStorage(ctx: Pick<CredentialCheckDeps, 'subscriptions'>): void {
  if (!ctx.subscriptions.canStoreCredentials) throw new SecretKeyMissingError();
}
