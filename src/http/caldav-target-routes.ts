/**
 * CalDAV push targets in the admin API (registered inside the admin scope, behind the admin token):
 * `POST /admin/caldav-targets` connects a calendar once the server accepted the login and app password; listing,
 * showing and removing (with what it wrote) are the routes every kind shares (push-admin-routes.ts).
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { connectCaldavTarget } from '../subscriptions/caldav-connect.ts';
import { parseSource, sourceKey } from '../timetable/source.ts';
import { type CalDavKindDeps, caldavRouteKind } from './caldav-manage-routes.ts';
import { caldavConnectFailure } from './caldav-target-view.ts';
import { clientGone } from './client-gone.ts';
import { sendError } from './error-answer.ts';
import { parseOr400 } from './parse.ts';
import {
  answerRegistered,
  connectOptions,
  type OptionsEditingDeps,
  optionsEditing,
  registerPushAdminRoutes,
} from './push-admin-routes.ts';

const BODY_HINT =
  'body must be JSON {"source": "group:4242", "url": "https://caldav.example", "username": "…", "password": "…", "calendarUrl"?: "…", "options"?: {…}}';

const required = (what: string) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? `is required (${what})` : 'must be a string') })
    .min(1, { error: 'must not be empty', abort: true });

const targetBody = z.strictObject(
  {
    source: required('e.g. "group:4242"'),
    url: required('the server or a calendar URL, e.g. "https://caldav.yandex.ru"').max(
      2048,
      'must be at most 2048 characters',
    ),
    username: required('the login').max(320, 'must be at most 320 characters'),
    password: required('an app password').max(1024, 'must be at most 1024 characters'),
    calendarUrl: z
      .string({ error: 'must be a string' })
      .min(1, { error: 'must not be empty', abort: true })
      .max(2048, 'must be at most 2048 characters')
      .optional(),
    // Checked by `parsePushOptions`, which words its refusals as the feed query does.
    options: z.unknown().optional(),
  },
  // Only a body that is not an object gets the hint; unknown keys keep zod's message, which names them.
  { error: (issue) => (issue.code === 'invalid_type' ? BODY_HINT : undefined) },
);

/** What the admin's CalDAV target routes read, connect and disconnect with. */
export type CalDavTargetRouteDeps = CalDavKindDeps & Parameters<typeof connectCaldavTarget>[0] & OptionsEditingDeps;

/** Registers the admin routes of CalDAV targets on the admin scope (prefix `/admin`, admin token checked). */
export function registerCaldavTargetRoutes(admin: FastifyInstance, ctx: CalDavTargetRouteDeps): void {
  const kind = caldavRouteKind(ctx);
  admin.post(kind.adminBase, async (request, reply) => {
    const body = parseOr400(targetBody, request.body, 'INVALID_BODY');
    const source = sourceKey(parseSource(body.source));
    const options = await connectOptions(ctx, source, body.options);
    let connected: Awaited<ReturnType<typeof connectCaldavTarget>>;
    const gone = clientGone(reply);
    try {
      connected = await connectCaldavTarget(ctx, { ...body, source, options, signal: gone.signal });
    } catch (error) {
      if (gone.signal.aborted) return reply.code(499).send();
      const failure = caldavConnectFailure(error);
      if (failure === undefined) throw error;
      return sendError(
        request,
        reply,
        failure.error,
        failure.calendars === undefined ? {} : { calendars: failure.calendars },
      );
    }
    answerRegistered(reply, kind, connected.id);
    return { id: connected.id, calendarUrl: connected.calendarUrl, reused: connected.reused };
  });

  registerPushAdminRoutes(admin, kind, optionsEditing(ctx, { kind: 'caldav', targets: ctx.caldav.targets }));
}
