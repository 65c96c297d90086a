/**
 * Managing a Google Calendar connection in a browser, without curl: after consent the manage token is kept in
 * an `HttpOnly` cookie scoped to that target's pages (`Path=/google/targets/<id>`), and `GET
 * /google/targets/:id` answers a browser with the manage page (API clients with `Authorization: Bearer` keep
 * the JSON). A manage link (`/google/targets/<id>/manage?token=…`, shown only to the browser that holds the
 * token) puts the cookie into another browser; Disconnect is a form post. Every failure is a page in the
 * site's language. URLs are never logged (the app logs route patterns); the manage link and the problem pages
 * (served at URLs that may carry a token) send no referrer, while the manage page itself (a URL without a
 * secret) keeps the default same-origin one, so that its Disconnect form carries its origin.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { ConsentCallbackError, GoogleNotConfiguredError } from '../google/errors.ts';
import type { GoogleTarget, GoogleTargetStore } from '../google/google-targets.ts';
import { pendingChanges } from '../google/pending-changes.ts';
import { pendingPush } from '../jobs/job-status.ts';
import { TARGET_ID } from '../store/push-target-store.ts';
import { disconnectTarget } from '../subscriptions/google-disconnect.ts';
import {
  type GoogleProblem,
  googleDisconnectedPage,
  googleManagePage,
  googleProblemPage,
} from '../web/google-manage-page.ts';
import { clearCookie, readCookie, setCookie } from './cookies.ts';
import { acceptForms, formOf } from './form-body.ts';
import { type PageDeps, requestLang, requireSameOrigin, sendPage } from './pages.ts';

/** The cookie that holds a target's manage token, on that target's path only. */
export const MANAGE_COOKIE = 'tts-manage';
/** A year: the token works until the connection is removed or consented again. */
const MAX_AGE_SECONDS = 365 * 24 * 3600;
const MANAGE_TOKEN = /^[A-Za-z0-9_-]{43}$/;

type IdRequest = FastifyRequest<{ Params: { id: string } }>;

/** What the manage page and the manage cookie's checks read. */
export type ManagePageDeps = PageDeps &
  Parameters<typeof pendingChanges>[0] &
  Parameters<typeof pendingPush>[0] & {
    readonly config: Pick<Config, 'publicUrl' | 'timezone'>;
    readonly google: { readonly targets: Pick<GoogleTargetStore, 'get' | 'verifyManageToken'> };
  };

/** What the manage link and the Disconnect form use: the manage page's reads, and disconnecting. */
export type GoogleManageRouteDeps = ManagePageDeps & Parameters<typeof disconnectTarget>[0];

/** The path the manage cookie of target `id` is scoped to, and its manage page. */
export function managePath(id: string): string {
  return `/google/targets/${id}`;
}

/** Keeps target `id`'s manage token in this browser. */
export function setManageCookie(ctx: PageDeps, reply: FastifyReply, id: string, token: string): void {
  setCookie(reply, ctx.config.publicUrl, MANAGE_COOKIE, token, { maxAge: MAX_AGE_SECONDS, path: managePath(id) });
}

/** True when the client asks for a page: its Accept names text/html, and not JSON before it. */
export function wantsPage(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return /\btext\/html\b/i.test(accept) && request.headers.authorization === undefined;
}

/** Answers a problem page. */
export function sendProblem(
  ctx: PageDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  problem: GoogleProblem,
  status: number,
  detail?: string,
): FastifyReply {
  const lang = requestLang(ctx, request, reply);
  const document = googleProblemPage({
    lang,
    url: request.url.split('?', 1)[0] ?? '/',
    problem,
    ...(detail ? { detail } : {}),
  });
  return sendPage(reply, document, { status, secret: true });
}

/** The page form of a failed consent callback; undefined for errors that are not the consent's. */
export function consentProblem(
  error: unknown,
): { problem: GoogleProblem; status: number; detail?: string } | undefined {
  if (error instanceof GoogleNotConfiguredError) return { problem: 'google-off', status: 503 };
  if (!(error instanceof ConsentCallbackError)) return undefined;
  if (/consent was refused/.test(error.message)) return { problem: 'consent-refused', status: 400 };
  return { problem: 'consent-failed', status: 400, detail: error.message };
}

/** `GET /google/targets/:id` for a browser: the manage page, for the holder of the cookie. */
export async function answerManagePage(
  ctx: ManagePageDeps,
  request: IdRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const target = await cookieTarget(ctx, request, reply);
  if (target === undefined) return reply;
  const token = readCookie(request.headers.cookie, MANAGE_COOKIE) ?? '';
  const [changes, queued] = await Promise.all([
    pendingChanges(ctx, target.id, target.source),
    pendingPush(ctx, target.id),
  ]);
  const lang = requestLang(ctx, request, reply);
  const document = googleManagePage({
    lang,
    url: managePath(target.id),
    target,
    pendingChanges: changes,
    pushQueued: queued !== null,
    manageLink: `${ctx.config.publicUrl}${managePath(target.id)}/manage?token=${token}`,
    connectUrl: `/google/connect?source=${encodeURIComponent(target.source)}`,
    timeZone: ctx.config.timezone,
  });
  return sendPage(reply, document);
}

/** Registers the manage link and the Disconnect form (in a scope of their own that reads form bodies). */
export async function registerGoogleManageRoutes(app: FastifyInstance, ctx: GoogleManageRouteDeps): Promise<void> {
  await app.register(async (scope) => {
    acceptForms(scope);

    scope.get<{ Params: { id: string }; Querystring: { token?: unknown } }>(
      '/google/targets/:id/manage',
      async (request, reply) => {
        reply.header('referrer-policy', 'no-referrer');
        const { id } = request.params;
        const token = request.query.token;
        if (!TARGET_ID.test(id) || typeof token !== 'string' || !MANAGE_TOKEN.test(token))
          return sendProblem(ctx, request, reply, 'bad-link', 404);
        if (!(await ctx.google.targets.verifyManageToken(id, token))) {
          const known = (await ctx.google.targets.get(id)) !== undefined;
          return sendProblem(ctx, request, reply, known ? 'bad-link' : 'unknown', known ? 403 : 404);
        }
        setManageCookie(ctx, reply, id, token);
        return reply.code(303).header('location', managePath(id)).header('cache-control', 'no-store').send();
      },
    );

    scope.post<{ Params: { id: string } }>('/google/targets/:id/disconnect', async (request, reply) => {
      requireSameOrigin(ctx, request);
      const target = await cookieTarget(ctx, request, reply);
      if (target === undefined) return reply;
      const deleteCalendar = formOf(request.body).deleteCalendar === 'yes';
      const result = await disconnectTarget(ctx, target.id, { deleteCalendar });
      clearCookie(reply, ctx.config.publicUrl, MANAGE_COOKIE, managePath(target.id));
      if (result === undefined) return sendProblem(ctx, request, reply, 'unknown', 404);
      request.log.info({ target: target.id, deleteCalendar }, 'google target disconnected from its manage page');
      const lang = requestLang(ctx, request, reply);
      const document = googleDisconnectedPage({
        lang,
        url: '/',
        calendarName: target.calendarName,
        calendarDeleted: result.calendarDeleted,
        deleteFailed: result.calendarError !== undefined,
      });
      return sendPage(reply, document);
    });
  });
}

/**
 * The target of the request's id when this browser's cookie holds its manage token; otherwise a problem page
 * has been sent (unknown target 404, no or wrong token 403) and undefined is answered.
 */
async function cookieTarget(
  ctx: ManagePageDeps,
  request: IdRequest,
  reply: FastifyReply,
): Promise<GoogleTarget | undefined> {
  const { id } = request.params;
  const target = TARGET_ID.test(id) ? await ctx.google.targets.get(id) : undefined;
  if (target === undefined) {
    sendProblem(ctx, request, reply, 'unknown', 404);
    return undefined;
  }
  const token = readCookie(request.headers.cookie, MANAGE_COOKIE);
  if (token === undefined || !(await ctx.google.targets.verifyManageToken(id, token))) {
    sendProblem(ctx, request, reply, 'no-access', 403);
    return undefined;
  }
  return target;
}
