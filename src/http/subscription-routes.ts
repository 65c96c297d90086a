/**
 * Personal subscriptions: `POST /api/subscriptions` turns a university credential into a secret feed URL;
 * `GET`, `PATCH` (a new credential) and `DELETE /api/subscriptions/:id` are for the holder of that feed's token
 * or the admin. Credentials, tokens and request bodies never reach a log line or an error message.
 */
import type { FastifyInstance } from 'fastify';
import { disconnectTarget } from '../google/connect-target.ts';
import { activateSource, requestReconcile } from '../jobs/activation.ts';
import { enqueueRefresh } from '../jobs/queues.ts';
import type { ServiceContext } from '../runtime/context.ts';
import { SecretKeyMissingError } from '../security/secret-box.ts';
import type { Subscription } from '../subscriptions/subscription-store.ts';
import { HttpError } from './errors.ts';
import { authorisedSubscription, type IdParams } from './subscription-auth.ts';
import {
  type Profile,
  parseCredential,
  profileCalendarName,
  requireSecretKey,
  verifiedProfile,
} from './subscription-credential.ts';

const NO_STORE = 'no-store';

/** Registers the subscription routes on `app`; errors are thrown as HttpError for the app's handler. */
export async function registerSubscriptionRoutes(app: FastifyInstance, ctx: ServiceContext): Promise<void> {
  const options = { bodyLimit: 16 * 1024 };

  app.post('/api/subscriptions', options, async (request, reply) => {
    requireSecretKey(ctx);
    const credential = parseCredential(request.body);
    const profile = await verifiedProfile(ctx, credential);
    const { subscription, token } = await storeSubscription(ctx, credential, profile);
    request.log.info({ subscription: subscription.id }, 'personal subscription created');
    reply.code(201).header('location', `/api/subscriptions/${subscription.id}`).header('cache-control', NO_STORE);
    const { id, source, name, status } = subscription;
    return { id, source, name, status, feedUrl: `${ctx.config.publicUrl}/feeds/personal/${token}.ics`, token };
  });

  app.get<IdParams>('/api/subscriptions/:id', async (request, reply) => {
    const subscription = await authorisedSubscription(ctx, request);
    reply.header('cache-control', NO_STORE);
    return publicView(ctx, subscription);
  });

  app.patch<IdParams>('/api/subscriptions/:id', options, async (request, reply) => {
    const subscription = await authorisedSubscription(ctx, request);
    const replaced = await replaceCredential(ctx, subscription, request.body);
    request.log.info({ subscription: subscription.id }, 'personal subscription credential replaced');
    reply.header('cache-control', NO_STORE);
    return publicView(ctx, replaced);
  });

  app.delete<IdParams>('/api/subscriptions/:id', async (request, reply) => {
    const subscription = await authorisedSubscription(ctx, request);
    // Its Google calendars stop following it (they stay in the user's account, with the classes they hold).
    for (const target of await ctx.redis.smembers(ctx.keys.sourceTargets(subscription.source)))
      await disconnectTarget(ctx, target, { deleteCalendar: false });
    await ctx.subscriptions.delete(subscription.id);
    await ctx.registry.remove(subscription.source);
    // The reconciler drops the source's job scheduler now rather than at its next periodic run.
    await requestReconcile(ctx);
    request.log.info({ subscription: subscription.id }, 'personal subscription deleted');
    return reply.code(204).send();
  });
}

/**
 * A new credential for an existing subscription (typically one the university started rejecting). It must
 * belong to the same university user: a subscription never changes whose timetable it shows.
 */
async function replaceCredential(
  ctx: ServiceContext,
  subscription: Subscription,
  body: unknown,
): Promise<Subscription> {
  requireSecretKey(ctx);
  const credential = parseCredential(body);
  const profile = await verifiedProfile(ctx, credential);
  if (profile.id !== subscription.upstreamUserId)
    throw new HttpError(409, 'this credential belongs to another university user');
  await ctx.subscriptions.replaceCredential(subscription.id, credential, ctx.now());
  await activateSource(ctx, subscription.source);
  // A refresh already running uses the old credential: queue one behind it that reads the new one.
  await enqueueRefresh(ctx.queues, ctx.config, subscription.source, {
    reason: 'subscription',
    now: ctx.now(),
    followUp: true,
  });
  return (await ctx.subscriptions.get(subscription.id)) ?? subscription;
}

/** Stores the subscription and queues its first refresh; a half-made subscription is removed again. */
async function storeSubscription(
  ctx: ServiceContext,
  credential: string,
  profile: Profile,
): Promise<{ subscription: Subscription; token: string }> {
  let created: { subscription: Subscription; token: string };
  try {
    created = await ctx.subscriptions.create({
      credential,
      name: profileCalendarName(profile),
      upstreamUserId: profile.id,
      now: ctx.now(),
    });
  } catch (error) {
    if (error instanceof SecretKeyMissingError) throw new HttpError(503, 'personal subscriptions need SECRET_KEY');
    throw error;
  }
  const { source, id } = created.subscription;
  try {
    await activateSource(ctx, source);
    await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'subscription', now: ctx.now() });
  } catch (error) {
    await ctx.subscriptions.delete(id);
    await ctx.registry.remove(source);
    throw error;
  }
  return created;
}

/** The public view of a subscription joined with its source's refresh state; never a secret. */
async function publicView(ctx: ServiceContext, subscription: Subscription): Promise<Record<string, unknown>> {
  const state = await ctx.registry.get(subscription.source);
  const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
  return {
    id: subscription.id,
    source: subscription.source,
    name: subscription.name,
    status: subscription.status,
    statusReason: subscription.statusReason,
    createdAt: iso(subscription.createdAt),
    updatedAt: iso(subscription.updatedAt),
    feedStatus: state?.status,
    lastSuccess: iso(state?.lastSuccess),
    lastError: state?.lastError,
    staleSince: iso(state?.staleSince),
  };
}
