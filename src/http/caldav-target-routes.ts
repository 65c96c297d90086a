/**
 * CalDAV push targets in the admin API (registered inside the admin scope, behind the admin token):
 * `POST /admin/caldav-targets` connects a calendar once the server accepted the login and app password; `GET`
 * lists them or shows one; `DELETE` removes one and what it wrote.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { CalDavTarget, CalDavTargetStore } from '../caldav/caldav-targets.ts';
import { connectCaldavTarget } from '../subscriptions/caldav-connect.ts';
import { disconnectCaldavTarget } from '../subscriptions/caldav-disconnect.ts';
import { parseSource, sourceKey } from '../timetable/source.ts';
import {
  answerCaldavDisconnected,
  type CalDavTargetViewDeps,
  caldavConnectFailure,
  caldavTargetNotFound,
  caldavTargetView,
} from './caldav-target-view.ts';
import { sendError } from './error-answer.ts';
import { HttpError } from './errors.ts';
import type { IdParams } from './owner-auth.ts';
import { parseOr400, parsePage } from './parse.ts';

const BODY_HINT =
  'body must be JSON {"source": "group:4242", "url": "https://caldav.example", "username": "…", "password": "…", "calendarUrl"?: "…"}';

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
  },
  // Only a body that is not an object gets the hint; unknown keys keep zod's message, which names them.
  { error: (issue) => (issue.code === 'invalid_type' ? BODY_HINT : undefined) },
);

/** The id format of CalDAV targets (the store's). */
const TARGET_ID = /^[A-Za-z0-9_-]{22}$/;

/** What the admin's CalDAV target routes read, connect and disconnect with. */
export type CalDavTargetRouteDeps = CalDavTargetViewDeps &
  Parameters<typeof connectCaldavTarget>[0] &
  Parameters<typeof disconnectCaldavTarget>[0] & {
    readonly caldav: { readonly targets: Pick<CalDavTargetStore, 'page' | 'get'> };
  };

/** Registers the admin routes of CalDAV targets on the admin scope (prefix `/admin`, admin token checked). */
export function registerCaldavTargetRoutes(admin: FastifyInstance, ctx: CalDavTargetRouteDeps): void {
  admin.post('/caldav-targets', async (request, reply) => {
    const body = parseOr400(targetBody, request.body, 'INVALID_BODY');
    const source = sourceKey(parseSource(body.source));
    let connected: Awaited<ReturnType<typeof connectCaldavTarget>>;
    try {
      connected = await connectCaldavTarget(ctx, { ...body, source });
    } catch (error) {
      const failure = caldavConnectFailure(error);
      if (failure === undefined) throw error;
      return sendError(
        request,
        reply,
        failure.error,
        failure.calendars === undefined ? {} : { calendars: failure.calendars },
      );
    }
    reply.code(201).header('location', `/admin/caldav-targets/${connected.id}`).header('cache-control', 'no-store');
    return { id: connected.id, calendarUrl: connected.calendarUrl, reused: connected.reused };
  });

  admin.get('/caldav-targets', async (request) => {
    const { offset, limit } = parsePage(request.query);
    const page = await ctx.caldav.targets.page(offset, limit);
    const targets = await Promise.all(page.targets.map((target) => caldavTargetView(ctx, target)));
    return { total: page.total, offset, limit, targets };
  });

  admin.get<IdParams>('/caldav-targets/:id', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    return caldavTargetView(ctx, await knownTarget(ctx, request.params.id), { pendingChanges: true });
  });

  admin.delete<IdParams>('/caldav-targets/:id', async (request, reply) => {
    checkCaldavTargetId(request.params.id);
    const result = await disconnectCaldavTarget(ctx, request.params.id);
    if (result === undefined) throw caldavTargetNotFound(request.params.id);
    return answerCaldavDisconnected(request, reply, result);
  });
}

/** A 400 unless `id` looks like a CalDAV target id. */
export function checkCaldavTargetId(id: string): void {
  if (!TARGET_ID.test(id))
    throw new HttpError('INVALID_ID', {
      en: 'malformed CalDAV target id (22 characters: letters, digits, _ and -)',
      ru: 'неверный id подключения CalDAV (22 символа: латинские буквы, цифры, _ и -)',
    });
}

/** The target `id`, or a 400 (malformed) or 404 (unknown). */
async function knownTarget(ctx: Pick<CalDavTargetRouteDeps, 'caldav'>, id: string): Promise<CalDavTarget> {
  checkCaldavTargetId(id);
  const target = await ctx.caldav.targets.get(id);
  if (target === undefined) throw caldavTargetNotFound(id);
  return target;
}
