/**
 * Personal subscriptions: `POST /api/subscriptions` turns a university credential into a secret feed URL
 * (`201` with a new subscription, `200` with the same one and a new feed URL when its user signed up before);
 * `GET`, `PATCH` (a new credential) and `DELETE /api/subscriptions/:id` are for the holder of that feed's token
 * or the admin. Credentials, tokens and request bodies never reach a log line or an error message.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Config } from '../config.ts';
import type { SourceRegistry } from '../store/registry.ts';
import { indexLegacyOwners } from '../subscriptions/owner-index.ts';
import { deleteSubscription, replaceCredential, signUp } from '../subscriptions/personal.ts';
import type { ClientLimits } from './client-limits.ts';
import { authorisedSubscription, type IdParams, type SubscriptionOwnerDeps } from './owner-auth.ts';
import { parseOr400 } from './parse.ts';
import { subscriptionView } from './views.ts';

const NO_STORE = 'no-store';
/** A credential is a token of at most 4 KiB: a larger body is refused before it is read. */
const BODY_LIMIT_BYTES = 16 * 1024;

const credentialBody = z.object(
  {
    credential: z
      .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
      .trim()
      .min(1, { error: 'must not be empty', abort: true })
      .max(4096, 'must be at most 4096 characters')
      // It travels in an HTTP header: anything else could never work (and the client would refuse it).
      .regex(/^[\t\x20-\x7e]+$/, 'must be printable ASCII text'),
  },
  { error: 'body must be JSON {"credential": "<your university token>"}' },
);

/** The credential of a request body, or a 400 naming what is wrong (never echoing the value). */
function credentialOf(body: unknown): string {
  return parseOr400(credentialBody, body, 'INVALID_BODY').credential;
}

/** What the subscription routes read and run their use cases with. */
export type SubscriptionRouteDeps = SubscriptionOwnerDeps &
  Parameters<typeof indexLegacyOwners>[0] &
  Parameters<typeof signUp>[0] &
  Parameters<typeof replaceCredential>[0] &
  Parameters<typeof deleteSubscription>[0] & {
    readonly config: Pick<Config, 'publicUrl'>;
    readonly registry: Pick<SourceRegistry, 'get'>;
  };

/**
 * Registers the subscription routes on `app`; errors are thrown for the app's handler. Before the first
 * sign-up is served, subscriptions made before one person had one are indexed by owner (once per deployment).
 */
export async function registerSubscriptionRoutes(
  app: FastifyInstance,
  ctx: SubscriptionRouteDeps,
  limits: ClientLimits,
): Promise<void> {
  const options = { bodyLimit: BODY_LIMIT_BYTES };
  await indexLegacyOwners(ctx);
  // Each sign-up and replacement asks the university about a credential: under `limits`, with a failure budget.

  app.post('/api/subscriptions', options, async (request, reply) => {
    const credential = credentialOf(request.body);
    const { subscription, token, created } = await limits.credentialCheck(request.ip, credential, () =>
      signUp(ctx, credential, request.log),
    );
    // The same answer either way, with the new feed URL: signing up again is how a lost one is recovered.
    reply.code(created ? 201 : 200);
    reply.header('location', `/api/subscriptions/${subscription.id}`).header('cache-control', NO_STORE);
    const { id, source, name, status } = subscription;
    return { id, source, name, status, feedUrl: `${ctx.config.publicUrl}/feeds/personal/${token}.ics`, token };
  });

  app.get<IdParams>('/api/subscriptions/:id', async (request, reply) => {
    const subscription = await authorisedSubscription(ctx, request);
    reply.header('cache-control', NO_STORE);
    return subscriptionView(subscription, await ctx.registry.get(subscription.source));
  });

  app.patch<IdParams>('/api/subscriptions/:id', options, async (request, reply) => {
    const subscription = await authorisedSubscription(ctx, request);
    const credential = credentialOf(request.body);
    const replaced = await limits.credentialCheck(request.ip, credential, () =>
      replaceCredential(ctx, subscription, credential, request.log),
    );
    reply.header('cache-control', NO_STORE);
    return subscriptionView(replaced, await ctx.registry.get(replaced.source));
  });

  app.delete<IdParams>('/api/subscriptions/:id', async (request, reply) => {
    await deleteSubscription(ctx, await authorisedSubscription(ctx, request), request.log);
    return reply.code(204).send();
  });
}
