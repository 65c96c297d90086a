/**
 * Personal subscriptions, the three things a person does with one: sign up with a university credential (and
 * get a secret feed URL), replace the credential, delete the subscription. Routes and commands call these;
 * each keeps the stores consistent on its own (a half-made subscription is removed again, a deleted one takes
 * its source and its Google connections with it).
 */
import { activateSource, requestReconcile } from '../jobs/activation.ts';
import { enqueueRefresh } from '../jobs/queues.ts';
import { forgetSource } from '../jobs/term-starts.ts';
import type { Logger } from '../logger.ts';
import type { ServiceContext } from '../runtime/context.ts';
import { SecretKeyMissingError } from '../security/errors.ts';
import { OtherUserCredentialError, UnverifiableCredentialError } from './errors.ts';
import { disconnectTarget } from './google-disconnect.ts';
import { type Profile, profileCalendarName, verifiedProfile } from './profile.ts';
import type { Subscription } from './subscription-store.ts';

/** A new subscription and its feed token, the only copy of it there will ever be. */
export interface SignedUp {
  subscription: Subscription;
  token: string;
}

/**
 * Signs a person up: checks the credential with the university, stores the subscription (the credential
 * sealed) and queues its first refresh. A profile without a user id still signs up: the subscription is then
 * tied to this credential (its keyed digest), so only this same credential can replace it later. Throws SecretKeyMissingError without a `SECRET_KEY` (before the
 * university is asked), and CredentialRejectedError or CredentialCheckError from the check. `log` is the
 * request's logger when a route calls (the line then carries the request id).
 */
export async function signUp(
  ctx: ServiceContext,
  credential: string,
  log: Pick<Logger, 'info'> = ctx.logger,
): Promise<SignedUp> {
  requireCredentialStorage(ctx);
  const profile = await verifiedProfile(ctx, credential);
  const created = await ctx.subscriptions.create({
    credential,
    name: profileCalendarName(profile),
    upstreamUserId: profile.id,
    now: ctx.now(),
  });
  const { source, id } = created.subscription;
  try {
    await activateSource(ctx, source);
    await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'subscription', now: ctx.now() });
  } catch (error) {
    // Without its refresh the subscription would never get a feed: take it back, the person may try again.
    await ctx.subscriptions.delete(id);
    await ctx.registry.remove(source);
    throw error;
  }
  log.info({ subscription: id }, 'personal subscription created');
  return created;
}

/**
 * A new credential for an existing subscription (typically one the university started rejecting). It must
 * belong to the same university user: a subscription never changes whose timetable it shows
 * ({@link OtherUserCredentialError} otherwise; {@link UnverifiableCredentialError} when a user id is missing
 * on either side and it is not the subscription's own credential). Resolves to the subscription as it is now.
 */
export async function replaceCredential(
  ctx: ServiceContext,
  subscription: Subscription,
  credential: string,
  log: Pick<Logger, 'info'> = ctx.logger,
): Promise<Subscription> {
  requireCredentialStorage(ctx);
  const profile = await verifiedProfile(ctx, credential);
  await requireSameUser(ctx, subscription, profile, credential);
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
 * Deletes a subscription with everything that hangs on it: its Google calendars stop following it (they stay
 * in the person's account, with the classes they hold), its source and feed are removed, and the reconciler
 * drops the source's job scheduler now rather than at its next periodic run.
 */
export async function deleteSubscription(
  ctx: ServiceContext,
  subscription: Subscription,
  log: Pick<Logger, 'info'> = ctx.logger,
): Promise<void> {
  for (const target of await ctx.google.targets.idsForSource(subscription.source)) {
    await disconnectTarget(ctx, target, { deleteCalendar: false });
  }
  await ctx.subscriptions.delete(subscription.id);
  await forgetSource(ctx, subscription.source, log);
  await requestReconcile(ctx);
  log.info({ subscription: subscription.id }, 'personal subscription deleted');
}

/** Throws unless `credential` (whose profile is `profile`) may replace the credential of `subscription`. */
async function requireSameUser(
  ctx: ServiceContext,
  subscription: Subscription,
  profile: Profile,
  credential: string,
): Promise<void> {
  if (subscription.upstreamUserId !== null && profile.id !== null) {
    if (profile.id !== subscription.upstreamUserId) throw new OtherUserCredentialError();
    return;
  }
  // Without an id on both sides nothing tells two people apart: only the credential itself is recognised.
  if (!(await ctx.subscriptions.isOwnCredential(subscription.id, credential))) throw new UnverifiableCredentialError();
}

/** Credentials are stored sealed: without a `SECRET_KEY` nothing may be asked of the university first. */
function requireCredentialStorage(ctx: ServiceContext): void {
  if (!ctx.subscriptions.canStoreCredentials) throw new SecretKeyMissingError();
}
