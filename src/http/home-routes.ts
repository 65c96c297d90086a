/**
 * `/` and its sign-in: `GET /?q=` finds groups in the group directory and teachers as the JSON lookup does
 * (teacher-search.ts: the service's teacher directory, else the university's search, cached and limited; when
 * that fails or is limited, the groups still show, with a note), and opens the one timetable found at once (303),
 * and `POST /timetables/personal` signs a person up with their university credential under the same
 * limits as `POST /api/subscriptions`, keeps the subscription in this browser and sends it on to the personal
 * page (303). A credential that is refused, limited or cannot be checked shows the form again, saying why, opened at
 * the error (home-page.ts); the credential is never echoed. A sign-in opens a browser session, never a feed URL
 * (subscriptions/personal.ts `signIn`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { RateLimitedError } from '../lib/errors.ts';
import { retryAfterSeconds } from '../lib/retry-after.ts';
import { SecretKeyMissingError } from '../security/errors.ts';
import { SignUpContentionError } from '../store/errors.ts';
import type { GroupDirectory } from '../store/group-directory.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import { CredentialCheckError, CredentialRejectedError } from '../subscriptions/errors.ts';
import { signIn } from '../subscriptions/personal.ts';
import { timetablePagePath } from '../timetable/page-path.ts';
import type { Employee } from '../upstream/directory-schema.ts';
import {
  UpstreamAuthError,
  UpstreamBudgetError,
  UpstreamBusyError,
  UpstreamError,
  UpstreamRateLimitError,
} from '../upstream/errors.ts';
import { homePage, type SearchOutcome, type SignInError, type TeacherResult } from '../web/home-page.ts';
import type { ClientLimits } from './client-limits.ts';
import { acceptForms, formField } from './form-body.ts';
import { requestLang, requireSameOrigin, sendPage } from './pages.ts';
import {
  clearPersonalSession,
  holdsSignInCookie,
  type PersonalSessionDeps,
  readPersonalSession,
  setPersonalSession,
} from './personal-session.ts';
import {
  MAX_QUERY_LENGTH,
  MIN_QUERY_LENGTH,
  searchTeachers,
  searchText,
  type TeacherSearchDeps,
} from './teacher-search.ts';

/** Groups and teachers shown for one search. */
const RESULT_LIMIT = 20;
/** A form holds one credential of at most 4 KiB. */
const FORM_BODY_LIMIT = 16 * 1024;
/** The longest university message quoted back on a refused sign-in. */
const UNIVERSITY_MESSAGE_LENGTH = 200;
/** Where a signed-in person is sent. */
const PERSONAL_PAGE = '/timetables/personal';

/** What `/` and its sign-in read and sign up with. */
export type HomeRouteDeps = PersonalSessionDeps &
  TeacherSearchDeps &
  Parameters<typeof signIn>[0] & {
    readonly config: Pick<Config, 'universityTokenHelpUrl'>;
    readonly directory: Pick<GroupDirectory, 'search' | 'example'>;
    readonly subscriptions: Pick<SubscriptionStore, 'canStoreCredentials'>;
  };

/** Registers `GET /` and `POST /timetables/personal`. */
export async function registerHomeRoutes(
  app: FastifyInstance,
  ctx: HomeRouteDeps,
  limits: ClientLimits,
): Promise<void> {
  app.get<{ Querystring: { q?: string | string[]; done?: string | string[] } }>('/', async (request, reply) => {
    const lang = requestLang(ctx, request, reply);
    const raw = request.query.q;
    const query = (Array.isArray(raw) ? raw[0] : raw)?.slice(0, 4 * MAX_QUERY_LENGTH);
    const search = query === undefined || query.trim() === '' ? undefined : await find(ctx, limits, request, query);
    // One timetable found is the one wanted: open it rather than a list of one (a tap fewer on a phone).
    const only = search === undefined ? undefined : onlyTimetable(search);
    if (only !== undefined) return reply.code(303).header('location', only).header('cache-control', 'no-store').send();
    const signedIn = (await readPersonalSession(ctx, request)) !== undefined;
    const signIn = { available: ctx.subscriptions.canStoreCredentials, signedIn };
    // A sign-in cookie without a live session: this browser was signed out from another device (or the session
    // expired). It is told once, and the dead cookie is forgotten.
    const ended = !signedIn && holdsSignInCookie(request);
    if (ended) clearPersonalSession(ctx, reply);
    const done = request.query.done ?? (ended ? 'signed-out-elsewhere' : undefined);
    const shared = await sharedView(ctx);
    return sendPage(reply, homePage({ lang, url: request.url, query, search, signIn, done, ...shared }));
  });

  await app.register(async (scope) => {
    acceptForms(scope, FORM_BODY_LIMIT);
    scope.post(PERSONAL_PAGE, { bodyLimit: FORM_BODY_LIMIT }, async (request, reply) => {
      requireSameOrigin(ctx, request);
      const lang = requestLang(ctx, request, reply);
      const again = async (status: number, error?: SignInError) =>
        sendPage(
          reply,
          homePage({
            lang,
            url: '/',
            signIn: { available: ctx.subscriptions.canStoreCredentials, error },
            ...(await sharedView(ctx)),
          }),
          { status },
        );
      if (!ctx.subscriptions.canStoreCredentials) return again(503);
      const credential = (formField(request.body, 'credential') ?? '').trim();
      if (credential === '') return again(400, { kind: 'empty' });
      if (credential.length > 4096 || !/^[\t\x20-\x7e]+$/.test(credential)) return again(400, { kind: 'invalid' });
      try {
        const { subscription, session } = await limits.credentialCheck(request.ip, credential, () =>
          signIn(ctx, credential, request.log),
        );
        setPersonalSession(ctx, reply, subscription.id, session);
        return reply.code(303).header('location', PERSONAL_PAGE).header('cache-control', 'no-store').send();
      } catch (error) {
        const refusal = signInRefusal(error);
        if (refusal === undefined) throw error;
        if (refusal.retryAfterMs !== undefined)
          reply.header('retry-after', String(retryAfterSeconds(refusal.retryAfterMs)));
        if (refusal.status >= 500) request.log.warn({ err: error }, 'sign-in on the page failed');
        return again(refusal.status, refusal.error);
      }
    });
  });
}

/** What every rendering of `/` shows: an example group that exists here, and where a token is found. */
async function sharedView(ctx: HomeRouteDeps): Promise<{ exampleGroup?: string; tokenHelpUrl?: string }> {
  const exampleGroup = await ctx.directory.example();
  const tokenHelpUrl = ctx.config.universityTokenHelpUrl;
  return {
    ...(exampleGroup === undefined ? {} : { exampleGroup }),
    ...(tokenHelpUrl === undefined ? {} : { tokenHelpUrl }),
  };
}

/** What the page says to a sign-in that did not succeed, and with which status. */
interface Refusal {
  status: number;
  error?: SignInError;
  retryAfterMs?: number;
}

/**
 * The answer to a failed sign-up: 422 for a credential the university rejected (with its words, when it gave
 * some), 429 over the limits, 503 when the university or our budget for it is busy (or without SECRET_KEY),
 * 502 when it failed. Undefined for anything else (the app's handler answers 500).
 */
function signInRefusal(error: unknown): Refusal | undefined {
  if (error instanceof CredentialRejectedError) {
    const cause = error.cause instanceof UpstreamAuthError ? error.cause.upstreamMessage?.trim() : undefined;
    const universityMessage = cause ? cause.slice(0, UNIVERSITY_MESSAGE_LENGTH) : undefined;
    return { status: 422, error: { kind: 'rejected', universityMessage } };
  }
  if (error instanceof RateLimitedError) return limited(429, 'limited', error.retryAfterMs);
  if (error instanceof UpstreamBudgetError || error instanceof UpstreamBusyError)
    return limited(503, 'busy', error.retryAfterMs);
  if (error instanceof SignUpContentionError) return limited(503, 'busy', 1_000);
  if (error instanceof CredentialCheckError && error.cause instanceof UpstreamRateLimitError)
    return limited(503, 'busy', error.cause.retryAfterMs ?? 10_000);
  if (error instanceof CredentialCheckError || error instanceof UpstreamError)
    return { status: 502, error: { kind: 'unavailable' } };
  if (error instanceof SecretKeyMissingError) return { status: 503 };
  return undefined;
}

function limited(status: number, kind: 'limited' | 'busy', retryAfterMs: number): Refusal {
  return { status, error: { kind, seconds: retryAfterSeconds(retryAfterMs) }, retryAfterMs };
}

/** Groups by name from the directory, and teachers when the text has letters (a group number names no one). */
async function find(
  ctx: HomeRouteDeps,
  limits: ClientLimits,
  request: FastifyRequest,
  query: string,
): Promise<SearchOutcome> {
  const text = searchText(query);
  if (text === undefined)
    return query.trim().length < MIN_QUERY_LENGTH
      ? { kind: 'too-short', min: MIN_QUERY_LENGTH }
      : { kind: 'too-long', max: MAX_QUERY_LENGTH };
  const groups = await ctx.directory.search(text, RESULT_LIMIT);
  const outcome: SearchOutcome = {
    kind: 'results',
    // Group numbers have digits, names do not: a miss speaks of the one that was typed.
    looksLike: /\p{N}/u.test(text) ? 'group' : 'name',
    groups: groups.groups,
    groupTotal: groups.total,
    teachers: undefined,
  };
  if ((text.match(/\p{L}/gu) ?? []).length < MIN_QUERY_LENGTH) return outcome;
  try {
    const found = await searchTeachers(ctx, limits, request.ip, text);
    return { ...outcome, teachers: teacherResults(found) };
  } catch (error) {
    if (error instanceof RateLimitedError)
      return { ...outcome, teacherNote: { kind: 'limited', seconds: retryAfterSeconds(error.retryAfterMs) } };
    request.log.warn({ err: error }, 'teacher search failed; the page shows the groups only');
    return { ...outcome, teacherNote: { kind: 'unavailable' } };
  }
}

/**
 * The page of the one timetable a search found: one group and no teacher, or one teacher and no group. Undefined
 * for more or none, and when the teacher search failed or was limited (a teacher it would have found may be
 * the one meant).
 */
export function onlyTimetable(search: SearchOutcome): string | undefined {
  if (search.kind !== 'results' || search.teacherNote !== undefined) return undefined;
  const teachers = search.teachers ?? [];
  const [group] = search.groups;
  if (search.groupTotal === 1 && group !== undefined && teachers.length === 0)
    return timetablePagePath(`group:${group.id}`);
  const [teacher] = teachers;
  if (search.groupTotal === 0 && teachers.length === 1 && teacher !== undefined)
    return timetablePagePath(`employee:${teacher.id}`);
  return undefined;
}

/** Teachers first (then other employees), each with full name, and post and subdivision to tell namesakes apart. */
function teacherResults(employees: readonly Employee[]): TeacherResult[] {
  return [...employees]
    .sort((a, b) => Number(b.teacher) - Number(a.teacher))
    .slice(0, RESULT_LIMIT)
    .map((employee) => ({
      id: employee.id,
      fullName:
        [employee.lastName, employee.firstName, employee.middleName].filter(Boolean).join(' ') || `№ ${employee.id}`,
      detail: [employee.post, employee.subDivision]
        .map((part) => part.trim())
        .filter(Boolean)
        .join(' · '),
    }));
}
