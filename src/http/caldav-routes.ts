/**
 * CalDAV push for people: `GET /caldav/connect?source=…` shows the connect page (a provider's form and its
 * app-password steps), `POST /caldav/connect` checks the login and app password with the server and connects,
 * keeping the manage token in an `HttpOnly` cookie scoped to the target's pages (`Path=/caldav/targets/<id>`),
 * and goes to its manage page. `GET /caldav/targets/:id` answers a browser with that page and an API client
 * (`Authorization: Bearer <manage token>`) with JSON; a manage link (`…/manage?token=…`) puts the cookie into
 * another browser; a new app password and Disconnect are form posts. A personal timetable is connected only by
 * the browser signed in to it. No password is ever echoed into a page, a URL or a log line.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CalDavTarget, CalDavTargetStore } from '../caldav/caldav-targets.ts';
import { caldavPendingChanges } from '../caldav/pending-resources.ts';
import type { Config } from '../config.ts';
import { pendingCaldavPush } from '../jobs/job-status.ts';
import { constantTimeEqual } from '../security/tokens.ts';
import { TARGET_ID } from '../store/push-target-store.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import { changeCaldavPassword, connectCaldavTarget } from '../subscriptions/caldav-connect.ts';
import { disconnectCaldavTarget } from '../subscriptions/caldav-disconnect.ts';
import { placeholderName } from '../timetable/calendar-name.ts';
import { parseSource, type SourceKey, sourceKey, sourceOf } from '../timetable/source.ts';
import {
  type CalDavConnectView,
  type CalDavFormValues,
  caldavConnectPage,
  isCaldavPreset,
  nextcloudDavUrl,
  PRESET_SERVERS,
} from '../web/caldav-connect-page.ts';
import {
  type CalDavProblem,
  caldavDisconnectedPage,
  caldavManagePage,
  caldavProblemPage,
} from '../web/caldav-manage-page.ts';
import type { Lang } from '../web/i18n.ts';
import { notFoundPage } from '../web/not-found-page.ts';
import { presentedToken } from './admin-auth.ts';
import {
  answerCaldavDisconnected,
  type CalDavTargetViewDeps,
  caldavConnectFailure,
  caldavTargetNotFound,
  caldavTargetView,
} from './caldav-target-view.ts';
import { ClientLimits, type ClientLimitsDeps } from './client-limits.ts';
import { clearCookie, readCookie, setCookie } from './cookies.ts';
import { HttpError, toHttpError } from './errors.ts';
import { acceptForms, formField } from './form-body.ts';
import { type PageDeps, requestLang, requireSameOrigin, sendPage } from './pages.ts';
import { type PersonalSessionDeps, readPersonalSession } from './personal-session.ts';

/** The cookie that holds a CalDAV target's manage token, on that target's path only. */
export const CALDAV_MANAGE_COOKIE = 'tts-caldav-manage';
/** A year: the token works until the connection is removed or connected again. */
const MAX_AGE_SECONDS = 365 * 24 * 3600;
const MANAGE_TOKEN = /^[A-Za-z0-9_-]{43}$/;

type IdRequest = FastifyRequest<{ Params: { id: string } }>;

/** What the CalDAV pages read, limit, connect and disconnect with. */
export type CalDavRouteDeps = ClientLimitsDeps &
  PersonalSessionDeps &
  CalDavTargetViewDeps &
  Parameters<typeof connectCaldavTarget>[0] &
  Parameters<typeof changeCaldavPassword>[0] &
  Parameters<typeof disconnectCaldavTarget>[0] & {
    readonly config: Pick<Config, 'publicUrl' | 'timezone' | 'adminToken'>;
    readonly caldav: { readonly targets: Pick<CalDavTargetStore, 'get' | 'verifyManageToken' | 'canStoreCredentials'> };
    readonly snapshots: Pick<SnapshotStore, 'snapshot'>;
  };

/** The path the manage cookie of target `id` is scoped to, and its manage page. */
export function caldavManagePath(id: string): string {
  return `/caldav/targets/${id}`;
}

/** Registers the CalDAV pages and their forms (in a scope of their own that reads form bodies). */
export async function registerCaldavRoutes(app: FastifyInstance, ctx: CalDavRouteDeps): Promise<void> {
  const limits = new ClientLimits(ctx);
  await app.register(async (scope) => {
    acceptForms(scope);

    scope.get<{ Querystring: Record<string, unknown> }>('/caldav/connect', async (request, reply) => {
      const lang = requestLang(ctx, request, reply);
      const source = pageSource(request.query.source);
      if (source === undefined) return sendPage(reply, notFoundPage({ lang, url: request.url }), { status: 404 });
      if (!(await mayConnect(ctx, request, source))) return sendProblem(ctx, request, reply, 'sign-in', 403);
      const preset = isCaldavPreset(request.query.preset) ? request.query.preset : undefined;
      return sendPage(reply, caldavConnectPage(await connectView(ctx, request, lang, source, preset)));
    });

    scope.post('/caldav/connect', async (request, reply) => {
      requireSameOrigin(ctx, request);
      const lang = requestLang(ctx, request, reply);
      const source = pageSource(formField(request.body, 'source'));
      if (source === undefined) return sendPage(reply, notFoundPage({ lang, url: request.url }), { status: 404 });
      if (!(await mayConnect(ctx, request, source))) return sendProblem(ctx, request, reply, 'sign-in', 403);
      const presetField = formField(request.body, 'preset');
      const preset = isCaldavPreset(presetField) ? presetField : 'other';
      const values: CalDavFormValues = {
        address: formField(request.body, 'address')?.trim(),
        username: formField(request.body, 'username')?.trim(),
        calendarUrl: formField(request.body, 'calendarUrl')?.trim() || undefined,
      };
      const password = formField(request.body, 'password') ?? '';
      const again = async (status: number, failure: Partial<CalDavConnectView>) => {
        const view = await connectView(ctx, request, lang, source, preset);
        return sendPage(reply, caldavConnectPage({ ...view, values, ...failure }), { status });
      };
      const fixed = PRESET_SERVERS[preset];
      const address = values.address ?? '';
      if (fixed === undefined && address === '')
        return again(400, { error: REQUIRED[lang].address, errorField: 'address' });
      if ((values.username ?? '') === '') return again(400, { error: REQUIRED[lang].username, errorField: 'username' });
      if (password === '') return again(400, { error: REQUIRED[lang].password, errorField: 'password' });
      const url = fixed ?? (preset === 'nextcloud' ? nextcloudDavUrl(address) : address);
      try {
        // Each attempt asks a server somewhere: limited per client and in total, as Google connects are.
        await limits.admit('caldav-connect', request.ip);
        const connected = await connectCaldavTarget(ctx, {
          source,
          url,
          username: values.username ?? '',
          password,
          ...(values.calendarUrl === undefined ? {} : { calendarUrl: values.calendarUrl }),
        });
        setCookie(reply, ctx.config.publicUrl, CALDAV_MANAGE_COOKIE, connected.manageToken, {
          maxAge: MAX_AGE_SECONDS,
          path: caldavManagePath(connected.id),
        });
        request.log.info({ target: connected.id, preset }, 'caldav target connected from the connect page');
        return reply
          .code(303)
          .header('location', caldavManagePath(connected.id))
          .header('cache-control', 'no-store')
          .send();
      } catch (error) {
        const failure = caldavConnectFailure(error);
        const answer = failure?.error ?? toHttpError(error);
        if (answer === undefined || (answer.statusCode >= 500 && failure === undefined)) throw error;
        reply.headers(answer.headers);
        return again(answer.statusCode, {
          error: answer.words[lang],
          errorField: errorField(answer.code),
          calendars: failure?.calendars,
        });
      }
    });

    scope.get<{ Params: { id: string } }>('/caldav/targets/:id', async (request, reply) => {
      reply.header('cache-control', 'no-store');
      if (!wantsPage(request)) return caldavTargetView(ctx, await bearerTarget(ctx, request), { pendingChanges: true });
      const target = await cookieTarget(ctx, request, reply);
      if (target === undefined) return reply;
      return answerManagePage(ctx, request, reply, target);
    });

    scope.delete<{ Params: { id: string } }>('/caldav/targets/:id', async (request, reply) => {
      const target = await bearerTarget(ctx, request);
      const result = await disconnectCaldavTarget(ctx, target.id);
      if (result === undefined) throw caldavTargetNotFound(target.id);
      return answerCaldavDisconnected(request, reply, result);
    });

    scope.get<{ Params: { id: string }; Querystring: { token?: unknown } }>(
      '/caldav/targets/:id/manage',
      async (request, reply) => {
        reply.header('referrer-policy', 'no-referrer');
        const { id } = request.params;
        const token = request.query.token;
        if (!TARGET_ID.test(id) || typeof token !== 'string' || !MANAGE_TOKEN.test(token))
          return sendProblem(ctx, request, reply, 'bad-link', 404);
        if (!(await ctx.caldav.targets.verifyManageToken(id, token))) {
          const known = (await ctx.caldav.targets.get(id)) !== undefined;
          return sendProblem(ctx, request, reply, known ? 'bad-link' : 'unknown', known ? 403 : 404);
        }
        setCookie(reply, ctx.config.publicUrl, CALDAV_MANAGE_COOKIE, token, {
          maxAge: MAX_AGE_SECONDS,
          path: caldavManagePath(id),
        });
        return reply.code(303).header('location', caldavManagePath(id)).header('cache-control', 'no-store').send();
      },
    );

    scope.post<{ Params: { id: string } }>('/caldav/targets/:id/password', async (request, reply) => {
      requireSameOrigin(ctx, request);
      const target = await cookieTarget(ctx, request, reply);
      if (target === undefined) return reply;
      const lang = requestLang(ctx, request, reply);
      const password = formField(request.body, 'password') ?? '';
      if (password === '')
        return answerManagePage(ctx, request, reply, target, { error: REQUIRED[lang].password }, 400);
      try {
        await limits.admit('caldav-connect', request.ip);
        if (!(await changeCaldavPassword(ctx, target.id, password)))
          return sendProblem(ctx, request, reply, 'unknown', 404);
      } catch (error) {
        const failure = caldavConnectFailure(error);
        const answer = failure?.error ?? toHttpError(error);
        if (answer === undefined || (answer.statusCode >= 500 && failure === undefined)) throw error;
        reply.headers(answer.headers);
        return answerManagePage(ctx, request, reply, target, { error: answer.words[lang] }, answer.statusCode);
      }
      request.log.info({ target: target.id }, 'caldav target password replaced from its manage page');
      const fresh = (await ctx.caldav.targets.get(target.id)) ?? target;
      return answerManagePage(ctx, request, reply, fresh, { saved: true });
    });

    scope.post<{ Params: { id: string } }>('/caldav/targets/:id/disconnect', async (request, reply) => {
      requireSameOrigin(ctx, request);
      const target = await cookieTarget(ctx, request, reply);
      if (target === undefined) return reply;
      const result = await disconnectCaldavTarget(ctx, target.id);
      clearCookie(reply, ctx.config.publicUrl, CALDAV_MANAGE_COOKIE, caldavManagePath(target.id));
      if (result === undefined) return sendProblem(ctx, request, reply, 'unknown', 404);
      request.log.info({ target: target.id }, 'caldav target disconnected from its manage page');
      const lang = requestLang(ctx, request, reply);
      const document = caldavDisconnectedPage({
        lang,
        url: '/',
        calendarName: target.calendarName,
        calendarOwned: target.calendarOwned,
        failed: result.error !== undefined,
      });
      return sendPage(reply, document);
    });
  });
}

const REQUIRED: Record<Lang, Record<'address' | 'username' | 'password', string>> = {
  ru: {
    address: 'Введите адрес сервера.',
    username: 'Введите логин.',
    password: 'Введите пароль приложения.',
  },
  en: {
    address: 'Enter the server address.',
    username: 'Enter the login.',
    password: 'Enter the app password.',
  },
};

/** The form field an error is about. */
function errorField(code: string): CalDavConnectView['errorField'] {
  if (code === 'CALDAV_CREDENTIALS_REFUSED') return 'password';
  if (code === 'CALDAV_CALENDAR_NOT_FOUND') return 'calendarUrl';
  if (code === 'CALDAV_URL_REFUSED' || code === 'CALDAV_REFUSED' || code === 'CALDAV_UNREACHABLE') return 'address';
  return undefined;
}

/** The source of a page's `source` field, or undefined when it names none. */
function pageSource(value: unknown): SourceKey | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    return sourceKey(parseSource(value));
  } catch {
    return undefined;
  }
}

/** A public source may be connected by anyone; a personal one by the browser signed in to it. */
async function mayConnect(ctx: PersonalSessionDeps, request: FastifyRequest, source: SourceKey): Promise<boolean> {
  const ref = sourceOf(source);
  if (ref.kind !== 'personal') return true;
  return (await readPersonalSession(ctx, request))?.subscription.id === ref.id;
}

/** The connect page's view for a source, before any form values. */
async function connectView(
  ctx: CalDavRouteDeps,
  request: FastifyRequest,
  lang: Lang,
  source: SourceKey,
  preset: CalDavConnectView['preset'],
): Promise<CalDavConnectView> {
  const ref = sourceOf(source);
  const snapshot = await ctx.snapshots.snapshot(source);
  let name = snapshot?.name.trim() ?? '';
  if (name === '')
    name =
      ref.kind === 'personal'
        ? ((await ctx.subscriptions.get(ref.id))?.name ?? '')
        : placeholderName({ kind: ref.kind, id: Number(ref.id) });
  const backUrl =
    ref.kind === 'group'
      ? `/timetables/groups/${ref.id}`
      : ref.kind === 'employee'
        ? `/timetables/employees/${ref.id}`
        : '/timetables/personal';
  return {
    lang,
    url: request.url,
    source,
    name,
    backUrl,
    preset,
    available: ctx.caldav.targets.canStoreCredentials,
  };
}

/** True when the client asks for a page: its Accept names text/html, and it sends no token. */
function wantsPage(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return /\btext\/html\b/i.test(accept) && request.headers.authorization === undefined;
}

/** Answers a problem page. */
function sendProblem(
  ctx: PageDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  problem: CalDavProblem,
  status: number,
): FastifyReply {
  const lang = requestLang(ctx, request, reply);
  const document = caldavProblemPage({ lang, url: request.url.split('?', 1)[0] ?? '/', problem });
  return sendPage(reply, document, { status, secret: true });
}

/** The manage page of `target`, for the browser holding its cookie (checked by the caller). */
async function answerManagePage(
  ctx: CalDavRouteDeps,
  request: IdRequest,
  reply: FastifyReply,
  target: CalDavTarget,
  password?: { error: string } | { saved: true },
  status = 200,
): Promise<FastifyReply> {
  const token = readCookie(request.headers.cookie, CALDAV_MANAGE_COOKIE) ?? '';
  const [changes, queued] = await Promise.all([
    caldavPendingChanges(ctx, target.id, target.source),
    pendingCaldavPush(ctx, target.id),
  ]);
  const lang = requestLang(ctx, request, reply);
  const document = caldavManagePage({
    lang,
    url: caldavManagePath(target.id),
    target,
    pendingChanges: changes,
    pushQueued: queued !== null,
    manageLink: `${ctx.config.publicUrl}${caldavManagePath(target.id)}/manage?token=${token}`,
    timeZone: ctx.config.timezone,
    connectUrl: `/caldav/connect?source=${encodeURIComponent(target.source)}`,
    password,
  });
  return sendPage(reply, document, { status });
}

/**
 * The target of the request's id when this browser's cookie holds its manage token; otherwise a problem page
 * has been sent (unknown target 404, no or wrong token 403) and undefined is answered.
 */
async function cookieTarget(
  ctx: CalDavRouteDeps,
  request: IdRequest,
  reply: FastifyReply,
): Promise<CalDavTarget | undefined> {
  const { id } = request.params;
  const target = TARGET_ID.test(id) ? await ctx.caldav.targets.get(id) : undefined;
  if (target === undefined) {
    sendProblem(ctx, request, reply, 'unknown', 404);
    return undefined;
  }
  const token = readCookie(request.headers.cookie, CALDAV_MANAGE_COOKIE);
  if (token === undefined || !(await ctx.caldav.targets.verifyManageToken(id, token))) {
    sendProblem(ctx, request, reply, 'no-access', 403);
    return undefined;
  }
  return target;
}

/**
 * The target of `/caldav/targets/:id` for an API client: the holder of its manage token or the admin
 * (`Authorization: Bearer …`). A malformed id is a 400, a missing token a 401, an unknown id a 404, a wrong
 * token a 401.
 */
async function bearerTarget(ctx: CalDavRouteDeps, request: IdRequest): Promise<CalDavTarget> {
  const { id } = request.params;
  if (!TARGET_ID.test(id))
    throw new HttpError('INVALID_ID', {
      en: 'malformed CalDAV target id (22 characters: letters, digits, _ and -)',
      ru: 'неверный id подключения CalDAV (22 символа: латинские буквы, цифры, _ и -)',
    });
  const token = presentedToken(request.headers.authorization, false);
  if (token === undefined)
    throw unauthorised({
      en: 'this needs Authorization: Bearer <manage token of the CalDAV target>',
      ru: 'нужен Authorization: Bearer <токен управления этим подключением CalDAV>',
    });
  const admin = ctx.config.adminToken !== undefined && constantTimeEqual(token, ctx.config.adminToken);
  const owner = await ctx.caldav.targets.verifyManageToken(id, token);
  const target = await ctx.caldav.targets.get(id);
  if (target === undefined) throw caldavTargetNotFound(id);
  if (!admin && !owner)
    throw unauthorised(
      { en: 'wrong token for this CalDAV target', ru: 'неверный токен для этого подключения CalDAV' },
      'invalid_token',
    );
  return target;
}

function unauthorised(words: { en: string; ru: string }, error?: string): HttpError {
  const challenge =
    error === undefined ? 'Bearer realm="timetable-sync"' : `Bearer realm="timetable-sync", error="${error}"`;
  return new HttpError('OWNER_UNAUTHORIZED', words, { 'www-authenticate': challenge });
}
