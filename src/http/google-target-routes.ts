/**
 * Google push targets in the admin API (registered inside the admin scope, behind the admin token):
 * `POST /admin/google-targets` registers a target from an existing refresh token; `GET` lists them or shows
 * one; `DELETE` removes one. Also the pieces the user-facing Google routes share: a target's view, how
 * connection failures answer, and how a disconnection answers. No view or message ever holds a token.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import {
  connectTarget,
  type Disconnected,
  disconnectTarget,
  TargetGoneError,
  UnknownSourceError,
} from '../google/connect-target.ts';
import {
  CalendarGoneError,
  GoogleConsentError,
  GooglePermanentError,
  GoogleQuotaError,
  GoogleRateLimitError,
  GoogleTransientError,
} from '../google/errors.ts';
import { GoogleNotConfiguredError } from '../google/google-services.ts';
import { pendingChanges } from '../google/pending-changes.ts';
import type { PushTarget } from '../google/target-record.ts';
import { TARGET_ID } from '../google/target-store.ts';
import { pushDeduplicationId } from '../jobs/queues.ts';
import type { ServiceContext } from '../runtime/context.ts';
import { SecretKeyMissingError } from '../security/secret-box.ts';
import { InvalidSourceError, parseSource, sourceKey } from '../sources/source.ts';
import { HttpError } from './errors.ts';

const BODY_HINT = 'body must be JSON {"source": "group:4242", "refreshToken": "…", "calendarId"?: "…"}';

const targetBody = z.strictObject(
  {
    source: z.string({
      error: (issue) => (issue.input === undefined ? 'is required (e.g. "group:4242")' : 'must be a string'),
    }),
    refreshToken: z
      .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
      .trim()
      .min(1, 'must not be empty')
      .max(2048, 'must be at most 2048 characters')
      // It travels in a form body to Google's token endpoint: anything else cannot be a refresh token.
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces'),
    calendarId: z
      .string({ error: 'must be a string' })
      .trim()
      .min(1, 'must not be empty')
      .max(1024, 'must be at most 1024 characters')
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
      .optional(),
  },
  // Only a body that is not an object gets the hint; unknown keys keep zod's message, which names them.
  { error: (issue) => (issue.code === 'invalid_type' ? BODY_HINT : undefined) },
);

const pageQuery = z.object({
  offset: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .default(0),
  limit: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(500, 'must be at most 500')
    .default(100),
});

const deleteQuery = z.object({
  deleteCalendar: z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
});

/** Route parameters of `…/google-targets/:id` and `/google/targets/:id`. */
export type TargetParams = { Params: { id: string } };

/** Registers the admin routes of Google targets on the admin scope (prefix `/admin`, admin token checked). */
export function registerGoogleTargetRoutes(admin: FastifyInstance, ctx: ServiceContext): void {
  admin.post('/google-targets', async (request, reply) => {
    const { source, refreshToken, calendarId } = parseTargetBody(request.body);
    const connected = await connectTarget(ctx, {
      source,
      refreshToken,
      ...(calendarId === undefined ? {} : { calendarId }),
    }).catch((error: unknown) => {
      if (error instanceof GoogleConsentError) {
        throw new HttpError(
          400,
          `refreshToken: Google refused the refresh token (${error.reason ?? 'invalid_grant'}): it is revoked, expired, issued to another OAuth client or lacks the calendar scope`,
        );
      }
      throw googleHttpError(error);
    });
    // A second registration of one refresh token for one source and calendar answers the first's target, with
    // `reused: true`; still 201, as DESIGN.md's contract says of every registration.
    reply.code(201).header('location', `/admin/google-targets/${connected.id}`).header('cache-control', 'no-store');
    return { id: connected.id, calendarId: connected.calendarId, reused: connected.reused };
  });

  admin.get('/google-targets', async (request) => {
    const parsed = pageQuery.safeParse(request.query ?? {});
    if (!parsed.success) throw new HttpError(400, issuesText(parsed.error));
    const { offset, limit } = parsed.data;
    const page = await ctx.google.targets.page(offset, limit);
    return {
      total: page.total,
      offset,
      limit,
      targets: await Promise.all(page.targets.map((target) => targetView(ctx, target))),
    };
  });

  admin.get<TargetParams>('/google-targets/:id', async (request) =>
    targetView(ctx, await knownTarget(ctx, request.params.id), { pendingChanges: true }),
  );

  admin.delete<TargetParams>('/google-targets/:id', async (request, reply) => {
    const deleteCalendar = deleteCalendarOption(request.query);
    checkTargetId(request.params.id);
    const result = await disconnectTarget(ctx, request.params.id, { deleteCalendar });
    if (result === undefined) throw new HttpError(404, `no Google target ${request.params.id}`);
    return answerDisconnected(reply, result);
  });
}

/** The body of `POST /admin/google-targets`, with a valid source; a 400 naming what is wrong otherwise. */
function parseTargetBody(body: unknown): { source: string; refreshToken: string; calendarId?: string } {
  const parsed = targetBody.safeParse(body);
  if (!parsed.success) throw new HttpError(400, issuesText(parsed.error));
  try {
    return { ...parsed.data, source: sourceKey(parseSource(parsed.data.source)) };
  } catch (error) {
    if (error instanceof InvalidSourceError) throw new HttpError(400, `source: ${error.message}`);
    throw error;
  }
}

/** Zod issues as one line, each prefixed by its field (never quoting a value). */
function issuesText(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length === 0 ? issue.message : `${issue.path.join('.')}: ${issue.message}`))
    .join('; ');
}

/** A 400 unless `id` looks like a target id. */
export function checkTargetId(id: string): void {
  if (!TARGET_ID.test(id))
    throw new HttpError(400, 'malformed Google target id (22 characters: letters, digits, _ and -)');
}

/** The target `id`, or a 400 (malformed) or 404 (unknown). */
async function knownTarget(ctx: ServiceContext, id: string): Promise<PushTarget> {
  checkTargetId(id);
  const target = await ctx.google.targets.get(id);
  if (target === undefined) throw new HttpError(404, `no Google target ${id}`);
  return target;
}

/** `?deleteCalendar=true|false` of a DELETE (default false); a 400 for anything else. */
export function deleteCalendarOption(query: unknown): boolean {
  const parsed = deleteQuery.safeParse(query ?? {});
  if (!parsed.success) throw new HttpError(400, issuesText(parsed.error));
  return parsed.data.deleteCalendar === 'true';
}

/**
 * 204 when everything asked for was done. When the owned calendar could not be deleted the target is removed
 * all the same: a 502 says so and names the calendar, so that it can be deleted by hand.
 */
export async function answerDisconnected(reply: FastifyReply, result: Disconnected): Promise<FastifyReply> {
  if (result.calendarError === undefined) return reply.code(204).send();
  return reply.code(502).send({
    error: `the target was removed, but its calendar ${result.calendarId} could not be deleted (${result.calendarError}); delete it in Google Calendar by hand`,
    calendarId: result.calendarId,
  });
}

/**
 * How a failure to connect answers: a fitting status and words for the typed errors of the connection and
 * the Google adapter; anything else is returned unchanged (a 500 from the app's handler).
 */
export function googleHttpError(error: unknown): unknown {
  if (error instanceof GoogleNotConfiguredError)
    return new HttpError(503, 'Google push is not configured: set GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET');
  if (error instanceof SecretKeyMissingError)
    return new HttpError(503, 'Google push needs SECRET_KEY (refresh tokens are stored encrypted)');
  if (error instanceof UnknownSourceError) return new HttpError(400, `source: ${error.message}`);
  if (error instanceof TargetGoneError) return new HttpError(409, error.message);
  if (error instanceof CalendarGoneError)
    return new HttpError(400, 'calendarId: calendar not found or not accessible with this refresh token');
  if (error instanceof GoogleConsentError)
    return new HttpError(400, `Google refused access (${error.reason ?? 'consent'}): ${error.message}`);
  if (error instanceof GoogleRateLimitError) {
    const seconds = Math.max(1, Math.ceil((error.retryAfterMs ?? 60_000) / 1000));
    return new HttpError(503, 'Google is rate limiting requests: try again later', { 'retry-after': String(seconds) });
  }
  if (error instanceof GoogleQuotaError)
    return new HttpError(503, 'Google calendar usage limits are exceeded for this account: try again in a few hours');
  if (error instanceof GoogleTransientError) return new HttpError(502, `Google failed, try again: ${error.message}`);
  if (error instanceof GooglePermanentError) return new HttpError(502, `Google refused the request: ${error.message}`);
  return error;
}

/** A target's state as the API shows it (times as ISO text), with its pending push and index size; never a token. */
export async function targetView(
  ctx: ServiceContext,
  target: PushTarget,
  detail: { pendingChanges?: boolean } = {},
): Promise<Record<string, unknown>> {
  const [pendingPush, indexSize, changes] = await Promise.all([
    pendingPushOf(ctx, target.id),
    ctx.google.index.size(target.id),
    // Expanding the timetable costs milliseconds: one target's view has it, a page of targets does not.
    detail.pendingChanges ? pendingChanges(ctx, target.id, target.source) : undefined,
  ]);
  return {
    id: target.id,
    source: target.source,
    calendarId: target.calendarId,
    calendarName: target.calendarName,
    calendarOwned: target.calendarOwned,
    status: target.status,
    statusReason: target.statusReason ?? null,
    pausedUntil: iso(target.pausedUntil),
    createdAt: iso(target.createdAt),
    lastPushAt: iso(target.lastPushAt),
    lastPush: target.lastPush === undefined ? null : { ...target.lastPush, at: iso(target.lastPush.at) },
    lastErrorAt: iso(target.lastErrorAt),
    lastError: target.lastError ?? null,
    lastRefusals: target.lastRefusals ?? [],
    reconcileRequested: target.reconcileRequested,
    pendingPush,
    ...(changes === undefined ? {} : { pendingChanges: changes }),
    indexSize,
  };
}

/** The push job queued or running for the target (its changes are not in the calendar yet), or null. */
async function pendingPushOf(ctx: ServiceContext, id: string): Promise<{ job: string; state: string } | null> {
  const job = await ctx.queues.push.getDeduplicationJobId(pushDeduplicationId(id));
  if (job === null) return null;
  const state = await ctx.queues.push.getJobState(job);
  return state === 'completed' || state === 'failed' || state === 'unknown' ? null : { job, state };
}

function iso(ms: number | undefined): string | null {
  return ms === undefined ? null : new Date(ms).toISOString();
}
