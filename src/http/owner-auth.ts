/**
 * Who may act on a record that has a secret token of its own (a personal subscription and its feed token, a
 * Google push target and its manage token): the holder of that token, or the admin. Tokens are compared in
 * constant time and never echoed.
 */
import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import type { GoogleTarget, GoogleTargetStore } from '../google/google-targets.ts';
import { constantTimeEqual } from '../security/tokens.ts';
import { TARGET_ID } from '../store/push-target-store.ts';
import type { Subscription, SubscriptionStore } from '../store/subscription-store.ts';
import { SUBSCRIPTION_ID } from '../timetable/source.ts';
import { presentedToken } from './admin-auth.ts';
import type { Words } from './error-codes.ts';
import { HttpError } from './errors.ts';

/** Route parameters of `/api/subscriptions/:id`, `/google/targets/:id` and `/admin/google-targets/:id`. */
export type IdParams = { Params: { id: string } };

/** What every owner check reads: the admin token, which may act on any record. */
export interface OwnerAuthDeps {
  readonly config: Pick<Config, 'adminToken'>;
}

/** What checking a subscription's owner reads. */
export interface SubscriptionOwnerDeps extends OwnerAuthDeps {
  readonly subscriptions: Pick<SubscriptionStore, 'verifyToken' | 'get'>;
}

/** What checking a Google target's owner reads. */
export interface GoogleOwnerDeps extends OwnerAuthDeps {
  readonly google: { readonly targets: Pick<GoogleTargetStore, 'verifyManageToken' | 'get'> };
}

/** How one kind of record is found and its token checked, and what its refusals say. */
export interface OwnedRecords<T> {
  format: RegExp;
  /** The error for a malformed id. */
  malformed: Words;
  /** The error for a request without a token. */
  noToken: Words;
  /** The error for a wrong token. */
  wrongToken: Words;
  notFound(id: string): HttpError;
  verify(id: string, token: string): Promise<boolean>;
  get(id: string): Promise<T | undefined>;
}

/**
 * The record the request may act on: the holder of its token or the admin. A malformed id is a 400; a missing
 * token a 401 before anything is looked up; an unknown id a 404; a wrong token a 401.
 */
export async function authorised<T>(
  ctx: OwnerAuthDeps,
  request: FastifyRequest<IdParams>,
  records: OwnedRecords<T>,
): Promise<T> {
  const { id } = request.params;
  if (!records.format.test(id)) throw new HttpError('INVALID_ID', records.malformed);
  const token = presentedToken(request.headers.authorization, false);
  if (token === undefined) throw unauthorised(records.noToken);
  const admin = ctx.config.adminToken !== undefined && constantTimeEqual(token, ctx.config.adminToken);
  // Ids are 128-bit random values, so answering 404 before the token check tells a caller nothing useful.
  const owner = await records.verify(id, token);
  const record = await records.get(id);
  if (record === undefined) throw records.notFound(id);
  if (!admin && !owner) throw unauthorised(records.wrongToken, 'invalid_token');
  return record;
}

/** The subscription of `/api/subscriptions/:id`, for the holder of its feed token or the admin. */
export function authorisedSubscription(
  ctx: SubscriptionOwnerDeps,
  request: FastifyRequest<IdParams>,
): Promise<Subscription> {
  return authorised(ctx, request, {
    format: SUBSCRIPTION_ID,
    malformed: { en: 'malformed subscription id', ru: 'неверный id подписки' },
    noToken: {
      en: 'this needs Authorization: Bearer <feed token of the subscription>',
      ru: 'нужен Authorization: Bearer <токен ленты этой подписки>',
    },
    wrongToken: { en: 'wrong token for this subscription', ru: 'неверный токен для этой подписки' },
    notFound: subscriptionNotFound,
    verify: (id, token) => ctx.subscriptions.verifyToken(id, token),
    get: (id) => ctx.subscriptions.get(id),
  });
}

/** The 404 of a subscription id nobody has. */
export function subscriptionNotFound(id: string): HttpError {
  return new HttpError('SUBSCRIPTION_NOT_FOUND', { en: `no subscription ${id}`, ru: `нет подписки ${id}` });
}

/** The 404 of a Google target id nobody has. */
export function googleTargetNotFound(id: string): HttpError {
  return new HttpError('TARGET_NOT_FOUND', {
    en: `no Google target ${id}`,
    ru: `нет подключения Google Календаря ${id}`,
  });
}

const TARGET_ID_MALFORMED: Words = {
  en: 'malformed Google target id (22 characters: letters, digits, _ and -)',
  ru: 'неверный id подключения Google Календаря (22 символа: латинские буквы, цифры, _ и -)',
};

/** How Google targets are found and their manage tokens checked, and what each refusal says. */
export function googleTargetRecords(ctx: GoogleOwnerDeps): OwnedRecords<GoogleTarget> {
  return {
    format: TARGET_ID,
    malformed: TARGET_ID_MALFORMED,
    noToken: {
      en: 'this needs Authorization: Bearer <manage token of the Google target>',
      ru: 'нужен Authorization: Bearer <токен управления этим подключением Google Календаря>',
    },
    wrongToken: {
      en: 'wrong token for this Google target',
      ru: 'неверный токен для этого подключения Google Календаря',
    },
    notFound: googleTargetNotFound,
    verify: (id, token) => ctx.google.targets.verifyManageToken(id, token),
    get: (id) => ctx.google.targets.get(id),
  };
}

function unauthorised(words: Words, error?: string): HttpError {
  const challenge =
    error === undefined ? 'Bearer realm="timetable-sync"' : `Bearer realm="timetable-sync", error="${error}"`;
  return new HttpError('OWNER_UNAUTHORIZED', words, { 'www-authenticate': challenge });
}
