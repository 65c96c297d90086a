/**
 * Who may act on a record that has a secret token of its own (a personal subscription and its feed token, a
 * Google push target and its manage token): the holder of that token, or the admin. Tokens are compared in
 * constant time and never echoed.
 */
import type { FastifyRequest } from 'fastify';
import type { ServiceContext } from '../runtime/context.ts';
import { constantTimeEqual } from '../security/tokens.ts';
import type { Subscription } from '../store/subscription-store.ts';
import type { PushTarget } from '../store/target-record.ts';
import { TARGET_ID } from '../store/target-store.ts';
import { SUBSCRIPTION_ID } from '../timetable/source.ts';
import { presentedToken } from './admin-auth.ts';
import { HttpError } from './errors.ts';

/** Route parameters of `/api/subscriptions/:id`, `/google/targets/:id` and `/admin/google-targets/:id`. */
export type IdParams = { Params: { id: string } };

/** How one kind of record is found and its token checked. */
interface OwnedRecords<T> {
  /** `subscription`, `Google target`: for messages. */
  what: string;
  /** What the token is called: `feed token`, `manage token`. */
  token: string;
  format: RegExp;
  /** The error for a malformed id. */
  malformed: string;
  verify(id: string, token: string): Promise<boolean>;
  get(id: string): Promise<T | undefined>;
}

/**
 * The record the request may act on: the holder of its token or the admin. A malformed id is a 400; a missing
 * token a 401 before anything is looked up; an unknown id a 404; a wrong token a 401.
 */
async function authorised<T>(
  ctx: ServiceContext,
  request: FastifyRequest<IdParams>,
  records: OwnedRecords<T>,
): Promise<T> {
  const { id } = request.params;
  if (!records.format.test(id)) throw new HttpError(400, records.malformed);
  const token = presentedToken(request.headers.authorization, false);
  if (token === undefined)
    throw unauthorised(`this needs Authorization: Bearer <${records.token} of the ${records.what}>`);
  const admin = ctx.config.adminToken !== undefined && constantTimeEqual(token, ctx.config.adminToken);
  // Ids are 128-bit random values, so answering 404 before the token check tells a caller nothing useful.
  const owner = await records.verify(id, token);
  const record = await records.get(id);
  if (record === undefined) throw new HttpError(404, `no ${records.what} ${id}`);
  if (!admin && !owner) throw unauthorised(`wrong token for this ${records.what}`, 'invalid_token');
  return record;
}

/** The subscription of `/api/subscriptions/:id`, for the holder of its feed token or the admin. */
export function authorisedSubscription(ctx: ServiceContext, request: FastifyRequest<IdParams>): Promise<Subscription> {
  return authorised(ctx, request, {
    what: 'subscription',
    token: 'feed token',
    format: SUBSCRIPTION_ID,
    malformed: 'malformed subscription id',
    verify: (id, token) => ctx.subscriptions.verifyToken(id, token),
    get: (id) => ctx.subscriptions.get(id),
  });
}

/** A 400 unless `id` looks like a Google target id. */
export function checkTargetId(id: string): void {
  if (!TARGET_ID.test(id)) throw new HttpError(400, TARGET_ID_MALFORMED);
}

const TARGET_ID_MALFORMED = 'malformed Google target id (22 characters: letters, digits, _ and -)';

/** The target of `/google/targets/:id`, for the holder of its manage token or the admin. */
export function authorisedTarget(ctx: ServiceContext, request: FastifyRequest<IdParams>): Promise<PushTarget> {
  return authorised(ctx, request, {
    what: 'Google target',
    token: 'manage token',
    format: TARGET_ID,
    malformed: TARGET_ID_MALFORMED,
    verify: (id, token) => ctx.google.targets.verifyManageToken(id, token),
    get: (id) => ctx.google.targets.get(id),
  });
}

function unauthorised(message: string, error?: string): HttpError {
  const challenge =
    error === undefined ? 'Bearer realm="timetable-sync"' : `Bearer realm="timetable-sync", error="${error}"`;
  return new HttpError(401, message, { 'www-authenticate': challenge });
}
