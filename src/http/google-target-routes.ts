/**
 * Google push targets in the admin API (registered inside the admin scope, behind the admin token):
 * `POST /admin/google-targets` registers a target from an existing refresh token; `GET` lists them or shows
 * one; `DELETE` removes one.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { CalendarGoneError, GoogleConsentError } from '../google/errors.ts';
import type { GoogleTarget, GoogleTargetStore } from '../google/google-targets.ts';
import { connectTarget } from '../subscriptions/google-connect.ts';
import { disconnectTarget } from '../subscriptions/google-disconnect.ts';
import { parseSource, sourceKey } from '../timetable/source.ts';
import { HttpError } from './errors.ts';
import { answerDisconnected, deleteCalendarOption, type TargetViewDeps, targetView } from './google-target-view.ts';
import { checkTargetId, type IdParams, targetNotFound } from './owner-auth.ts';
import { parseOr400, parsePage } from './parse.ts';

const BODY_HINT = 'body must be JSON {"source": "group:4242", "refreshToken": "…", "calendarId"?: "…"}';

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
  },
  // Only a body that is not an object gets the hint; unknown keys keep zod's message, which names them.
  { error: (issue) => (issue.code === 'invalid_type' ? BODY_HINT : undefined) },
);

/** What the admin's target routes read, connect and disconnect with. */
export type GoogleTargetRouteDeps = TargetViewDeps &
  Parameters<typeof connectTarget>[0] &
  Parameters<typeof disconnectTarget>[0] & {
    readonly google: { readonly targets: Pick<GoogleTargetStore, 'page' | 'get'> };
  };

/** Registers the admin routes of Google targets on the admin scope (prefix `/admin`, admin token checked). */
export function registerGoogleTargetRoutes(admin: FastifyInstance, ctx: GoogleTargetRouteDeps): void {
  admin.post('/google-targets', async (request, reply) => {
    const body = parseOr400(targetBody, request.body, 'INVALID_BODY');
    const source = sourceKey(parseSource(body.source));
    const connected = await connectTarget(ctx, { ...body, source }).catch((error: unknown) => {
      throw registrationError(error);
    });
    // A second registration of one refresh token for one source and calendar answers the first's target, with
    // `reused: true`; still 201, as the contract says of every registration.
    reply.code(201).header('location', `/admin/google-targets/${connected.id}`).header('cache-control', 'no-store');
    return { id: connected.id, calendarId: connected.calendarId, reused: connected.reused };
  });

  admin.get('/google-targets', async (request) => {
    const { offset, limit } = parsePage(request.query);
    const page = await ctx.google.targets.page(offset, limit);
    const targets = await Promise.all(page.targets.map((target) => targetView(ctx, target)));
    return { total: page.total, offset, limit, targets };
  });

  admin.get<IdParams>('/google-targets/:id', async (request) =>
    targetView(ctx, await knownTarget(ctx, request.params.id), { pendingChanges: true }),
  );

  admin.delete<IdParams>('/google-targets/:id', async (request, reply) => {
    const deleteCalendar = deleteCalendarOption(request.query);
    checkTargetId(request.params.id);
    const result = await disconnectTarget(ctx, request.params.id, { deleteCalendar });
    if (result === undefined) throw targetNotFound(request.params.id);
    return answerDisconnected(request, reply, result);
  });
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

/** The target `id`, or a 400 (malformed) or 404 (unknown). */
async function knownTarget(ctx: Pick<GoogleTargetRouteDeps, 'google'>, id: string): Promise<GoogleTarget> {
  checkTargetId(id);
  const target = await ctx.google.targets.get(id);
  if (target === undefined) throw targetNotFound(id);
  return target;
}
