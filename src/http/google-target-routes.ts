/**
 * Google push targets in the admin API (registered inside the admin scope, behind the admin token):
 * `POST /admin/google-targets` registers a target from an existing refresh token; listing, showing and removing
 * are the routes every kind shares (push-admin-routes.ts).
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { CalendarGoneError, GoogleConsentError } from '../google/errors.ts';
import { connectGoogleTarget } from '../subscriptions/google-connect.ts';
import { parseSource, sourceKey } from '../timetable/source.ts';
import { HttpError } from './errors.ts';
import { type GoogleKindDeps, googleRouteKind } from './google-manage-routes.ts';
import { parseOr400 } from './parse.ts';
import {
  answerRegistered,
  connectOptions,
  type OptionsEditingDeps,
  optionsEditing,
  registerPushAdminRoutes,
} from './push-admin-routes.ts';

const BODY_HINT =
  'body must be JSON {"source": "group:4242", "refreshToken": "…", "calendarId"?: "…", "options"?: {…}}';

const targetBody = z.strictObject(
  {
    source: z.string({
      error: (issue) => (issue.input === undefined ? 'is required (e.g. "group:4242")' : 'must be a string'),
    }),
    refreshToken: z
      .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
      .trim()
      .min(1, { error: 'must not be empty', abort: true })
      .max(2048, 'must be at most 2048 characters')
      // It travels in a form body to Google's token endpoint: anything else cannot be a refresh token.
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces'),
    calendarId: z
      .string({ error: 'must be a string' })
      .trim()
      .min(1, { error: 'must not be empty', abort: true })
      .max(1024, 'must be at most 1024 characters')
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
      .optional(),
    // Checked by `parsePushOptions`, which words its refusals as the feed query does.
    options: z.unknown().optional(),
  },
  // Only a body that is not an object gets the hint; unknown keys keep zod's message, which names them.
  { error: (issue) => (issue.code === 'invalid_type' ? BODY_HINT : undefined) },
);

/** What the admin's target routes read, connect and disconnect with. */
export type GoogleTargetRouteDeps = GoogleKindDeps & Parameters<typeof connectGoogleTarget>[0] & OptionsEditingDeps;

/** Registers the admin routes of Google targets on the admin scope (prefix `/admin`, admin token checked). */
export function registerGoogleTargetRoutes(admin: FastifyInstance, ctx: GoogleTargetRouteDeps): void {
  const kind = googleRouteKind(ctx);
  admin.post(kind.adminBase, async (request, reply) => {
    const body = parseOr400(targetBody, request.body, 'INVALID_BODY');
    const source = sourceKey(parseSource(body.source));
    const options = await connectOptions(ctx, source, body.options);
    const connected = await connectGoogleTarget(ctx, { ...body, source, options }).catch((error: unknown) => {
      throw registrationError(error);
    });
    // A second registration of one refresh token for one source and calendar answers the first's target, with
    // `reused: true`; still 201, as the contract says of every registration.
    answerRegistered(reply, kind, connected.id);
    return { id: connected.id, calendarId: connected.calendarId, reused: connected.reused };
  });

  registerPushAdminRoutes(admin, kind, optionsEditing(ctx, { kind: 'google', targets: ctx.google.targets }));
}

/**
 * A registration's failures worded for its body's fields: the refresh token Google refused, the calendar it
 * does not reach. Everything else answers as the catalog says.
 */
function registrationError(error: unknown): unknown {
  if (error instanceof GoogleConsentError) {
    const reason = error.reason ?? 'invalid_grant';
    return new HttpError('GOOGLE_CONSENT_REFUSED', {
      en: `refreshToken: Google refused the refresh token (${reason}): it is revoked, expired, issued to another OAuth client or lacks the calendar scope`,
      ru: `refreshToken: Google не принял токен обновления (${reason}): он отозван, истёк, выдан другому клиенту OAuth или не даёт доступа к календарю`,
    });
  }
  if (error instanceof CalendarGoneError)
    return new HttpError('CALENDAR_NOT_FOUND', {
      en: 'calendarId: calendar not found or not accessible with this refresh token',
      ru: 'calendarId: календарь не найден или недоступен с этим токеном обновления',
    });
  return error;
}
