/**
 * The routes of a push target for its holder, the same for every calendar kind (push-route-kind.ts):
 * `GET <base>/:id` answers a browser with the manage page (its manage token in an `HttpOnly` cookie scoped to
 * `<base>/<id>`) and an API client (`Authorization: Bearer <manage token or admin token>`) with JSON;
 * `DELETE <base>/:id` disconnects for an API client; a manage link (`<base>/<id>/manage?token=…`, shown only to
 * the browser that holds the token) puts the cookie into another browser; Disconnect is a form post with a ticked
 * confirmation (`confirm=yes`; without it the page asks again), and `POST <base>/:id/options` changes the feed
 * options the calendar follows (checked against its timetable; a refused field is shown again as typed, with
 * why; a save answers with a 303 back to the page, which says what changed). Every failure is a page in the
 * site's language. URLs are never logged (the app logs route patterns); the manage link and the problem pages
 * (served at URLs that may carry a token) send no referrer, while the manage page itself (a URL without a secret)
 * keeps the default same-origin one, so that its forms carry their origin.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { changePushOptions, type PushOptionsDeps } from '../subscriptions/push-options.ts';
import { defaultTitleTemplate } from '../timetable/event-text.ts';
import { timetablePagePath } from '../timetable/page-path.ts';
import { sourceOf } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import { optionsQuery } from '../web/feed-links.ts';
import type { Html } from '../web/html.ts';
import type { Lang } from '../web/i18n.ts';
import type { PushProblem } from '../web/push-manage-page.ts';
import { pushOptionsChanges, pushOptionsLine } from '../web/push-options-line.ts';
import { clearCookie, readCookie, setCookie } from './cookies.ts';
import { sendError } from './error-answer.ts';
import { acceptForms, formOf } from './form-body.ts';
import { authorised, type IdParams } from './owner-auth.ts';
import { type PageDeps, requestLang, requireSameOrigin, sendPage } from './pages.ts';
import {
  type ChosenPushOptions,
  optionsSavedOutcome,
  optionsSavedPath,
  type PushOptionsFormDeps,
  readPushOptions,
} from './push-options-form.ts';
import type { Disconnection, PushRouteKind, RoutedTarget } from './push-route-kind.ts';

/** A year: the token works until the connection is removed or connected again. */
const MAX_AGE_SECONDS = 365 * 24 * 3600;
const MANAGE_TOKEN = /^[A-Za-z0-9_-]{43}$/;

type IdRequest = FastifyRequest<IdParams>;

/**
 * What the shared routes read: the page settings, the public URL (cookies, links) and the admin token; the
 * timetable's subgroups and kinds (the options form), and the push queue that applies changed options.
 */
export type PushTargetRouteDeps = PageDeps &
  PushOptionsFormDeps &
  PushOptionsDeps & { readonly config: Pick<Config, 'publicUrl' | 'timezone' | 'adminToken'> };

/** What the manage page says beyond the target itself: the outcome of its last form. */
export interface ManageOutcome {
  /** The options form was refused: its fields as typed, each bad one with why. */
  refusedOptions?: ChosenPushOptions | undefined;
  /**
   * The page is the redirect's after a save of the options: what the calendar followed before (undefined: no
   * options of its own), to say what changed.
   */
  saved?: { before: SubscriberOptions | undefined } | undefined;
  /** Disconnect was sent without its confirmation ticked. */
  disconnectUnconfirmed?: boolean | undefined;
}

/** Keeps target `id`'s manage token in this browser, on that target's pages only. */
export function setManageCookie(
  ctx: PushTargetRouteDeps,
  kind: Pick<PushRouteKind<RoutedTarget>, 'cookie' | 'base'>,
  reply: FastifyReply,
  id: string,
  token: string,
): void {
  setCookie(reply, ctx.config.publicUrl, kind.cookie, token, { maxAge: MAX_AGE_SECONDS, path: `${kind.base}/${id}` });
}

/** True when the client asks for a page: its Accept names text/html, and it sends no token. */
export function wantsPage(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return /\btext\/html\b/i.test(accept) && request.headers.authorization === undefined;
}

/** Answers the problem page `render` makes in the request's language, at its path without the query. */
export function sendProblemPage(
  ctx: PageDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  render: (view: { lang: Lang; url: string }) => Html,
  status: number,
): FastifyReply {
  const lang = requestLang(ctx, request, reply);
  return sendPage(reply, render({ lang, url: request.url.split('?', 1)[0] ?? '/' }), { status, secret: true });
}

function sendProblem(
  ctx: PageDeps,
  kind: Pick<PushRouteKind<RoutedTarget>, 'problemPage'>,
  request: FastifyRequest,
  reply: FastifyReply,
  problem: PushProblem,
  status: number,
): FastifyReply {
  return sendProblemPage(ctx, request, reply, (view) => kind.problemPage({ ...view, problem }), status);
}

/** The manage page of `target` (with the kind's `extras`), for the browser holding its cookie (checked before). */
export async function answerManagePage<T extends RoutedTarget, O extends object, E>(
  ctx: PushTargetRouteDeps,
  kind: PushRouteKind<T, O, E>,
  request: IdRequest,
  reply: FastifyReply,
  target: T,
  extras?: E,
  status = 200,
  outcome: ManageOutcome = {},
): Promise<FastifyReply> {
  const token = readCookie(request.headers.cookie, kind.cookie) ?? '';
  const lang = requestLang(ctx, request, reply);
  const refused = outcome.refusedOptions;
  const [{ changes, queued }, chosen] = await Promise.all([
    kind.pending(target),
    refused ?? readPushOptions(ctx, target.source, {}),
  ]);
  const path = `${kind.base}/${target.id}`;
  const sourceKind = sourceOf(target.source).kind;
  const fieldErrors = Object.fromEntries(
    (refused?.refused ?? []).map((error) => [error.field, error.fieldWords[lang]]),
  );
  const view = {
    lang,
    url: path,
    pendingChanges: changes,
    pushQueued: queued,
    manageLink: `${ctx.config.publicUrl}${path}/manage?token=${token}`,
    connectUrl: kind.connectUrl(target.source, target.options),
    // The timetable as this calendar gets it: its page with the target's options, as the push links carry them.
    timetableUrl: `${timetablePagePath(target.source)}${optionsQuery(target.options ?? {}, defaultTitleTemplate(sourceKind))}`,
    timeZone: ctx.config.timezone,
    options: {
      line: pushOptionsLine(target.options, sourceKind, lang),
      form: {
        values: chosen.values,
        options: refused === undefined ? (target.options ?? {}) : {},
        typed: refused?.typed,
        fieldErrors,
        defaultTitle: chosen.defaultTitle,
        preview: undefined,
      },
      saved:
        outcome.saved === undefined
          ? undefined
          : { changes: pushOptionsChanges(outcome.saved.before, target.options ?? {}, sourceKind, lang) },
    },
    disconnectUnconfirmed: outcome.disconnectUnconfirmed,
  };
  return sendPage(reply, kind.managePage(view, target, extras), { status });
}

/**
 * The target of the request's id when this browser's cookie holds its manage token; otherwise a problem page
 * has been sent (unknown target 404, no or wrong token 403) and undefined is answered.
 */
export async function cookieTarget<T extends RoutedTarget, O extends object, E>(
  ctx: PushTargetRouteDeps,
  kind: PushRouteKind<T, O, E>,
  request: IdRequest,
  reply: FastifyReply,
): Promise<T | undefined> {
  const { id } = request.params;
  const target = kind.records.format.test(id) ? await kind.records.get(id) : undefined;
  if (target === undefined) {
    sendProblem(ctx, kind, request, reply, 'unknown', 404);
    return undefined;
  }
  const token = readCookie(request.headers.cookie, kind.cookie);
  if (token === undefined || !(await kind.records.verify(id, token))) {
    sendProblem(ctx, kind, request, reply, 'no-access', 403);
    return undefined;
  }
  return target;
}

/** Registers a kind's target routes for its holder (in a scope of their own that reads form bodies). */
export async function registerPushTargetRoutes<T extends RoutedTarget, O extends object, E>(
  app: FastifyInstance,
  ctx: PushTargetRouteDeps,
  kind: PushRouteKind<T, O, E>,
): Promise<void> {
  await app.register(async (scope) => {
    acceptForms(scope);

    scope.get<IdParams>(`${kind.base}/:id`, async (request, reply) => {
      reply.header('cache-control', 'no-store');
      if (!wantsPage(request)) return kind.view(await authorised(ctx, request, kind.records), { pendingChanges: true });
      const target = await cookieTarget(ctx, kind, request, reply);
      if (target === undefined) return reply;
      const saved = optionsSavedOutcome(request.query);
      return answerManagePage(ctx, kind, request, reply, target, undefined, 200, { saved });
    });

    scope.delete<IdParams>(`${kind.base}/:id`, async (request, reply) => {
      const options = kind.disconnectQuery(request.query);
      const target = await authorised(ctx, request, kind.records);
      const result = await kind.disconnect(target.id, options);
      if (result === undefined) throw kind.records.notFound(target.id);
      return answerDisconnected(request, reply, result);
    });

    scope.get<{ Params: { id: string }; Querystring: { token?: unknown } }>(
      `${kind.base}/:id/manage`,
      async (request, reply) => {
        reply.header('referrer-policy', 'no-referrer');
        const { id } = request.params;
        const token = request.query.token;
        if (!kind.records.format.test(id) || typeof token !== 'string' || !MANAGE_TOKEN.test(token))
          return sendProblem(ctx, kind, request, reply, 'bad-link', 404);
        if (!(await kind.records.verify(id, token))) {
          const known = (await kind.records.get(id)) !== undefined;
          return sendProblem(ctx, kind, request, reply, known ? 'bad-link' : 'unknown', known ? 403 : 404);
        }
        setManageCookie(ctx, kind, reply, id, token);
        return reply.code(303).header('location', `${kind.base}/${id}`).header('cache-control', 'no-store').send();
      },
    );

    scope.post<IdParams>(`${kind.base}/:id/options`, async (request, reply) => {
      requireSameOrigin(ctx, request);
      const target = await cookieTarget(ctx, kind, request, reply);
      if (target === undefined) return reply;
      const chosen = await readPushOptions(ctx, target.source, formOf(request.body));
      if (chosen.refused.length > 0)
        return answerManagePage(ctx, kind, request, reply, target, undefined, 400, { refusedOptions: chosen });
      const before = target.options;
      const kindOptions = { kind: kind.name, targets: kind.optionsTargets };
      if ((await changePushOptions(ctx, kindOptions, target.id, chosen.options)) === undefined)
        return sendProblem(ctx, kind, request, reply, 'unknown', 404);
      request.log.info({ target: target.id }, `${kind.name} target options changed from its manage page`);
      // Back to the page with a word of what was saved: a reload there reads the page again, not this post.
      const path = optionsSavedPath(
        `${kind.base}/${target.id}`,
        before,
        defaultTitleTemplate(sourceOf(target.source).kind),
      );
      return reply.code(303).header('location', path).header('cache-control', 'no-store').send();
    });

    scope.post<IdParams>(`${kind.base}/:id/disconnect`, async (request, reply) => {
      requireSameOrigin(ctx, request);
      const target = await cookieTarget(ctx, kind, request, reply);
      if (target === undefined) return reply;
      // As deleting a subscription does: a ticked box confirms it, no script needed.
      if (formOf(request.body).confirm !== 'yes')
        return answerManagePage(ctx, kind, request, reply, target, undefined, 400, { disconnectUnconfirmed: true });
      const options = kind.disconnectForm(request.body);
      const result = await kind.disconnect(target.id, options);
      clearCookie(reply, ctx.config.publicUrl, kind.cookie, `${kind.base}/${target.id}`);
      if (result === undefined) return sendProblem(ctx, kind, request, reply, 'unknown', 404);
      const fields: Record<string, unknown> = { target: target.id, ...options };
      request.log.info(fields, `${kind.name} target disconnected from its manage page`);
      const lang = requestLang(ctx, request, reply);
      return sendPage(reply, result.page({ lang, url: '/' }, target));
    });
  });
}

/**
 * 204 when everything asked for was done. When not all could be removed the target is gone all the same: the
 * kind's error (a 502) says so and names what is left, so that it can be deleted by hand.
 */
export async function answerDisconnected(
  request: FastifyRequest,
  reply: FastifyReply,
  result: Pick<Disconnection<unknown>, 'failure'>,
): Promise<FastifyReply> {
  if (result.failure === undefined) return reply.code(204).send();
  return sendError(request, reply, result.failure.error, result.failure.fields);
}
