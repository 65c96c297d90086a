/**
 * Personal subscriptions: `POST /api/subscriptions` turns a university credential into a secret feed URL;
 * `GET`, `PATCH` (a new credential) and `DELETE /api/subscriptions/:id` are for the holder of that feed's token
 * or the admin. Credentials, tokens and request bodies never reach a log line or an error message.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { activateSource, requestReconcile } from '../jobs/activation.ts';
import { enqueueRefresh } from '../jobs/queues.ts';
import type { ServiceContext } from '../runtime/context.ts';
import { SecretKeyMissingError } from '../security/secret-box.ts';
import { constantTimeEqual } from '../security/tokens.ts';
import { SUBSCRIPTION_ID } from '../sources/source.ts';
import type { Subscription } from '../subscriptions/subscription-store.ts';
import { UpstreamAuthError, UpstreamError, UpstreamProtocolError } from '../upstream/errors.ts';
import { presentedToken } from './admin-auth.ts';
import { HttpError } from './errors.ts';

const BODY_HINT = 'body must be JSON {"credential": "<your university token>"}';

const credentialBody = z.object(
  {
    credential: z
      .string({ error: (issue) => (issue.input === undefined ? 'credential is required' : 'credential must be a string') })
      .trim()
      .min(1, 'credential must not be empty')
      .max(4096, 'credential must be at most 4096 characters')
      // It travels in an HTTP header: anything else could never work (and the client would refuse it).
      .regex(/^[\t\x20-\x7e]+$/, 'credential must be printable ASCII text'),
  },
  { error: BODY_HINT },
);

/** The profile fields a subscription needs: who it is (to check a replacement) and a calendar name. */
interface Profile {
  id: number;
  firstName: string;
  lastName: string;
  groupName?: string;
}

type IdParams = { Params: { id: string } };

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
    await ctx.subscriptions.delete(subscription.id);
    await ctx.registry.remove(subscription.source);
    // The reconciler drops the source's job scheduler now rather than at its next periodic run.
    await requestReconcile(ctx);
    request.log.info({ subscription: subscription.id }, 'personal subscription deleted');
    return reply.code(204).send();
  });
}

function requireSecretKey(ctx: ServiceContext): void {
  if (ctx.config.secretKey === undefined || !ctx.subscriptions.canStoreCredentials) {
    throw new HttpError(503, 'personal subscriptions need SECRET_KEY');
  }
}

/** The credential of a request body, or a 400 naming what is wrong (never echoing the value). */
function parseCredential(body: unknown): string {
  const result = credentialBody.safeParse(body);
  if (result.success) return result.data.credential;
  const issue = result.error.issues[0];
  const message = issue === undefined || issue.path.length === 0 ? BODY_HINT : issue.message;
  throw new HttpError(400, message);
}

/**
 * A new credential for an existing subscription (typically one the university started rejecting). It must
 * belong to the same university user: a subscription never changes whose timetable it shows.
 */
async function replaceCredential(ctx: ServiceContext, subscription: Subscription, body: unknown): Promise<Subscription> {
  requireSecretKey(ctx);
  const credential = parseCredential(body);
  const profile = await verifiedProfile(ctx, credential);
  if (profile.id !== subscription.upstreamUserId) throw new HttpError(409, 'this credential belongs to another university user');
  await ctx.subscriptions.replaceCredential(subscription.id, credential, ctx.now());
  await activateSource(ctx, subscription.source);
  await enqueueRefresh(ctx.queues, ctx.config, subscription.source, { reason: 'subscription', now: ctx.now() });
  return (await ctx.subscriptions.get(subscription.id)) ?? subscription;
}

/** Stores the subscription and queues its first refresh; a half-made subscription is removed again. */
async function storeSubscription(ctx: ServiceContext, credential: string, profile: Profile): Promise<{ subscription: Subscription; token: string }> {
  let created: { subscription: Subscription; token: string };
  try {
    created = await ctx.subscriptions.create({ credential, name: profileCalendarName(profile), upstreamUserId: profile.id, now: ctx.now() });
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

/**
 * Asks the university who this credential belongs to. The group name is optional in practice (not every
 * account has a group), so a profile that lacks it is asked for again without it.
 */
async function verifiedProfile(ctx: ServiceContext, credential: string): Promise<Profile> {
  try {
    try {
      const user = await ctx.upstream.me(credential, { id: true, firstName: true, lastName: true, group: { name: true } });
      return { id: user.id, firstName: user.firstName, lastName: user.lastName, groupName: user.group.name };
    } catch (error) {
      if (!(error instanceof UpstreamProtocolError) || error.reason !== 'wrong-shape') throw error;
      const user = await ctx.upstream.me(credential, { id: true, firstName: true, lastName: true });
      return { id: user.id, firstName: user.firstName, lastName: user.lastName };
    }
  } catch (error) {
    if (error instanceof UpstreamAuthError) throw new HttpError(401, 'the university rejected this credential');
    if (error instanceof UpstreamError) throw new HttpError(502, `could not verify the credential: ${error.message}`);
    throw error;
  }
}

/** "Расписание: Иванова Мария (ИВТ-21)", from whatever parts the profile has. */
export function profileCalendarName(profile: Pick<Profile, 'firstName' | 'lastName' | 'groupName'>): string {
  const person = `${profile.lastName} ${profile.firstName}`.replace(/\s+/g, ' ').trim();
  const group = profile.groupName?.trim() ?? '';
  const base = person === '' ? 'Моё расписание' : `Расписание: ${person}`;
  return group === '' ? base : `${base} (${group})`;
}

/**
 * The subscription the request may act on: the holder of its feed token or the admin. A missing token is a
 * 401 before anything is looked up; an unknown id a 404; a wrong token a 401.
 */
async function authorisedSubscription(ctx: ServiceContext, request: FastifyRequest<IdParams>): Promise<Subscription> {
  const { id } = request.params;
  if (!SUBSCRIPTION_ID.test(id)) throw new HttpError(400, 'malformed subscription id');
  const token = presentedToken(request.headers.authorization, false);
  if (token === undefined) throw unauthorised('this needs Authorization: Bearer <feed token of the subscription>');
  const admin = ctx.config.adminToken !== undefined && constantTimeEqual(token, ctx.config.adminToken);
  // Ids are 128-bit random values, so answering 404 before the token check tells a caller nothing useful.
  const owner = await ctx.subscriptions.verifyToken(id, token);
  const subscription = await ctx.subscriptions.get(id);
  if (subscription === undefined) throw new HttpError(404, `no subscription ${id}`);
  if (!admin && !owner) throw unauthorised('wrong token for this subscription', 'invalid_token');
  return subscription;
}

function unauthorised(message: string, error?: string): HttpError {
  const challenge = error === undefined ? 'Bearer realm="timetable-sync"' : `Bearer realm="timetable-sync", error="${error}"`;
  return new HttpError(401, message, { 'www-authenticate': challenge });
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
