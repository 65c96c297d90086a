/**
 * CalDAV push for people: `GET /caldav/connect?source=…` shows the connect page (a provider's form and its
 * app-password steps), `POST /caldav/connect` checks the login and app password with the server and connects,
 * keeping the manage token in an `HttpOnly` cookie scoped to the target's pages (`Path=/caldav/targets/<id>`),
 * and goes to its manage page, served with the manage link, the JSON view and Disconnect by the routes every kind
 * shares (push-target-routes.ts). A new app password is a form post of the manage page, checked with the server
 * first. A personal timetable is connected only by the browser signed in to it. No password is ever echoed into
 * a page, a URL or a log line.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CalDavTargetStore } from '../caldav/caldav-targets.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import { changeCaldavPassword, connectCaldavTarget } from '../subscriptions/caldav-connect.ts';
import { placeholderName } from '../timetable/calendar-name.ts';
import { timetablePagePath } from '../timetable/page-path.ts';
import { parseSource, type SourceKey, sourceKey, sourceOf } from '../timetable/source.ts';
import {
  type CalDavConnectView,
  type CalDavFormValues,
  caldavConnectPage,
  isCaldavPreset,
  nextcloudDavUrl,
  PRESET_SERVERS,
} from '../web/caldav-connect-page.ts';
import { type CalDavProblem, caldavProblemPage } from '../web/caldav-manage-page.ts';
import type { Lang } from '../web/i18n.ts';
import { notFoundPage } from '../web/not-found-page.ts';
import { pushOptionsLine } from '../web/push-options-line.ts';
import { type CalDavKindDeps, caldavRouteKind } from './caldav-manage-routes.ts';
import { caldavConnectFailure } from './caldav-target-view.ts';
import { clientGone } from './client-gone.ts';
import { ClientLimits, type ClientLimitsDeps } from './client-limits.ts';
import { toHttpError } from './errors.ts';
import { acceptForms, formField, formOf } from './form-body.ts';
import { type PageDeps, requestLang, requireSameOrigin, sendPage } from './pages.ts';
import { type PersonalSessionDeps, readPersonalSession } from './personal-session.ts';
import {
  type ChosenPushOptions,
  connectOptions,
  type PushOptionsFormDeps,
  readPushOptions,
  typedQuery,
} from './push-options-form.ts';
import {
  answerManagePage,
  cookieTarget,
  registerPushTargetRoutes,
  sendProblemPage,
  setManageCookie,
} from './push-target-routes.ts';

/** What the CalDAV pages read, limit, connect and disconnect with. */
export type CalDavRouteDeps = ClientLimitsDeps &
  PersonalSessionDeps &
  CalDavKindDeps &
  Parameters<typeof connectCaldavTarget>[0] &
  Parameters<typeof changeCaldavPassword>[0] &
  PushOptionsFormDeps & {
    readonly caldav: { readonly targets: Pick<CalDavTargetStore, 'canStoreCredentials'> };
    readonly snapshots: Pick<SnapshotStore, 'snapshot'>;
  };

/** Registers the CalDAV pages and their forms (in a scope of their own that reads form bodies). */
export async function registerCaldavRoutes(app: FastifyInstance, ctx: CalDavRouteDeps): Promise<void> {
  const limits = new ClientLimits(ctx);
  const kind = caldavRouteKind(ctx);
  await registerPushTargetRoutes(app, ctx, kind);
  await app.register(async (scope) => {
    acceptForms(scope);

    scope.get<{ Querystring: Record<string, unknown> }>('/caldav/connect', async (request, reply) => {
      const lang = requestLang(ctx, request, reply);
      const source = pageSource(request.query.source);
      if (source === undefined) return sendPage(reply, notFoundPage({ lang, url: request.url }), { status: 404 });
      if (!(await mayConnect(ctx, request, source))) return sendProblem(ctx, request, reply, 'sign-in', 403);
      const preset = isCaldavPreset(request.query.preset) ? request.query.preset : undefined;
      const chosen = await readPushOptions(ctx, source, request.query);
      const view = await connectView(ctx, request, lang, source, preset, chosen);
      return sendPage(reply, caldavConnectPage(view), { status: chosen.refused.length === 0 ? 200 : 400 });
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
      const chosen = await readPushOptions(ctx, source, formOf(request.body));
      const again = async (status: number, failure: Partial<CalDavConnectView>) => {
        const view = await connectView(ctx, request, lang, source, preset, chosen);
        return sendPage(reply, caldavConnectPage({ ...view, values, ...failure }), { status });
      };
      // Options that do not fit are said at the top of the page, before any server is asked.
      if (chosen.refused.length > 0) return again(400, {});
      const fixed = PRESET_SERVERS[preset];
      const address = values.address ?? '';
      if (fixed === undefined && address === '')
        return again(400, { error: REQUIRED[lang].address, errorField: 'address' });
      if ((values.username ?? '') === '') return again(400, { error: REQUIRED[lang].username, errorField: 'username' });
      if (password === '') return again(400, { error: REQUIRED[lang].password, errorField: 'password' });
      const url = fixed ?? (preset === 'nextcloud' ? nextcloudDavUrl(address) : address);
      const gone = clientGone(reply);
      try {
        // Each attempt asks a server somewhere: limited per client and in total, as Google connects are.
        await limits.admit('caldav-connect', request.ip);
        const connected = await connectCaldavTarget(ctx, {
          source,
          url,
          username: values.username ?? '',
          password,
          ...(values.calendarUrl === undefined ? {} : { calendarUrl: values.calendarUrl }),
          // A new calendar follows the options (`{}` when none was chosen), its reminders ours; a calendar
          // connected before takes the options given and keeps its own when none is (only targets from before,
          // and the admin API without options, have none).
          ...connectOptions(chosen),
          signal: gone.signal,
        });
        setManageCookie(ctx, kind, reply, connected.id, connected.manageToken);
        request.log.info({ target: connected.id, preset }, 'caldav target connected from the connect page');
        return reply
          .code(303)
          .header('location', `${kind.base}/${connected.id}`)
          .header('cache-control', 'no-store')
          .send();
      } catch (error) {
        if (gone.signal.aborted) return abandoned(request, reply);
        const failure = caldavConnectFailure(error, 'page');
        const answer = failure?.error ?? toHttpError(error);
        if (answer === undefined || (answer.statusCode >= 500 && failure === undefined)) throw error;
        reply.headers(answer.headers);
        return again(answer.statusCode, {
          error: answer.words[lang],
          errorField: failure?.field === 'calendarUrl' ? 'calendarUrl' : errorField(answer.code),
          calendars: failure?.calendars,
        });
      }
    });

    scope.post<{ Params: { id: string } }>('/caldav/targets/:id/password', async (request, reply) => {
      requireSameOrigin(ctx, request);
      const target = await cookieTarget(ctx, kind, request, reply);
      if (target === undefined) return reply;
      const lang = requestLang(ctx, request, reply);
      const password = formField(request.body, 'password') ?? '';
      if (password === '')
        return answerManagePage(ctx, kind, request, reply, target, { error: REQUIRED[lang].password }, 400);
      const gone = clientGone(reply);
      try {
        await limits.admit('caldav-connect', request.ip);
        if (!(await changeCaldavPassword(ctx, target.id, password, gone.signal)))
          return sendProblem(ctx, request, reply, 'unknown', 404);
      } catch (error) {
        if (gone.signal.aborted) return abandoned(request, reply);
        const failure = caldavConnectFailure(error, 'page');
        const answer = failure?.error ?? toHttpError(error);
        if (answer === undefined || (answer.statusCode >= 500 && failure === undefined)) throw error;
        reply.headers(answer.headers);
        return answerManagePage(ctx, kind, request, reply, target, { error: answer.words[lang] }, answer.statusCode);
      }
      request.log.info({ target: target.id }, 'caldav target password replaced from its manage page');
      const fresh = (await ctx.caldav.targets.get(target.id)) ?? target;
      return answerManagePage(ctx, kind, request, reply, fresh, { saved: true });
    });
  });
}

/** The answer to nobody: the client left while its server was being asked. */
function abandoned(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  request.log.info('caldav connect abandoned: the client closed the connection');
  return reply.code(499).send();
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
  if (['CALDAV_URL_REFUSED', 'CALDAV_REFUSED', 'CALDAV_UNREACHABLE', 'CALDAV_RESPONSE_TOO_LARGE'].includes(code))
    return 'address';
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
  chosen: ChosenPushOptions,
): Promise<CalDavConnectView> {
  const ref = sourceOf(source);
  const snapshot = await ctx.snapshots.snapshot(source);
  let name = snapshot?.name.trim() ?? '';
  if (name === '')
    name =
      ref.kind === 'personal'
        ? ((await ctx.subscriptions.get(ref.id))?.name ?? '')
        : placeholderName({ kind: ref.kind, id: Number(ref.id) });
  const refused = chosen.refused.map((error) => [error.field, error.fieldWords[lang]] as const);
  // The way back shows the options as typed (a refused one beside its reason, at the page's options form): the
  // timetable's page then shows what the calendar would get, and its links carry them on.
  const typed = typedQuery(chosen.typed);
  const backUrl = `${timetablePagePath(source)}${typed === '' ? '' : `?${typed.slice(1)}`}`;
  return {
    lang,
    url: request.url,
    source,
    name,
    backUrl,
    preset,
    available: ctx.caldav.targets.canStoreCredentials,
    optionFields: chosen.typed,
    optionsLine: pushOptionsLine(chosen.options, ref.kind, lang),
    optionsRefused: refused.length === 0 ? undefined : Object.fromEntries(refused),
    optionsUrl: `${backUrl}#options`,
  };
}

/** Answers a problem page of the CalDAV pages. */
function sendProblem(
  ctx: PageDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  problem: CalDavProblem,
  status: number,
): FastifyReply {
  return sendProblemPage(ctx, request, reply, (view) => caldavProblemPage({ ...view, problem }), status);
}
