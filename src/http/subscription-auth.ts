/**
 * Who may act on a personal subscription: the holder of its feed token, or the admin. Tokens are compared
 * in constant time and never echoed.
 */
import type { FastifyRequest } from 'fastify';
import type { ServiceContext } from '../runtime/context.ts';
import { constantTimeEqual } from '../security/tokens.ts';
import { SUBSCRIPTION_ID } from '../sources/source.ts';
import type { Subscription } from '../subscriptions/subscription-store.ts';
import { presentedToken } from './admin-auth.ts';
import { HttpError } from './errors.ts';

/** Route parameters of `/api/subscriptions/:id`. */
export type IdParams = { Params: { id: string } };

/**
 * The subscription the request may act on: the holder of its feed token or the admin. A missing token is a
 * 401 before anything is looked up; an unknown id a 404; a wrong token a 401.
 */
export async function authorisedSubscription(
  ctx: ServiceContext,
  request: FastifyRequest<IdParams>,
): Promise<Subscription> {
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
  const challenge =
    error === undefined ? 'Bearer realm="timetable-sync"' : `Bearer realm="timetable-sync", error="${error}"`;
  return new HttpError(401, message, { 'www-authenticate': challenge });
}
