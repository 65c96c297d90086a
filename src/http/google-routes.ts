/**
 * Google push for users: `GET /google/connect?source=…` sends the browser to Google's consent page,
 * `GET /google/callback` turns the consent into a push target and answers its manage token once, and
 * `GET`/`DELETE /google/targets/:id` are for the holder of that token (or the admin). The callback's URL
 * carries a one-time code and the answer a secret: neither reaches a log line, and no answer is cached.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { type ConnectedTarget, connectTarget, disconnectTarget } from '../google/connect-target.ts';
import { GoogleConsentError } from '../google/errors.ts';
import { GoogleNotConfiguredError } from '../google/google-services.ts';
import { ConsentStateError, createConsent, takeConsent } from '../google/oauth-state.ts';
import type { PushTarget } from '../google/target-record.ts';
import type { ServiceContext } from '../runtime/context.ts';
import { constantTimeEqual } from '../security/tokens.ts';
import { InvalidSourceError, parseSource, type SourceKey, sourceKey } from '../sources/source.ts';
import { presentedToken } from './admin-auth.ts';
import { HttpError } from './errors.ts';
import {
  answerDisconnected,
  checkTargetId,
  deleteCalendarOption,
  googleHttpError,
  type TargetParams,
  targetView,
} from './google-target-routes.ts';

const NO_STORE = 'no-store';

/** Query strings arrive as text (an array when repeated: refused as "must be a string"). */
const text = z.string({ error: 'must be given once, as text' });
const connectQuery = z.object({ source: text, token: text.optional() });
const callbackQuery = z.object({ state: text.optional(), code: text.optional(), error: text.optional() });

/** Registers the user-facing Google routes on `app`; errors are thrown as HttpError for the app's handler. */
export async function registerGoogleRoutes(app: FastifyInstance, ctx: ServiceContext): Promise<void> {
  app.get('/google/connect', async (request, reply) => {
    requireGoogle(ctx);
    const source = await authorisedSource(ctx, request.query);
    const url = await createConsent(ctx, source).catch((error: unknown) => {
      throw googleHttpError(error);
    });
    return reply.code(302).header('location', url).header('cache-control', NO_STORE).send();
  });

  app.get('/google/callback', async (request, reply) => {
    const { source, connected } = await completeConsent(ctx, request.query);
    request.log.info({ target: connected.id, source, reused: connected.reused }, 'google consent completed');
    reply.header('cache-control', NO_STORE).header('referrer-policy', 'no-referrer');
    if (prefersJson(request.headers.accept)) {
      const { id, calendarId, calendarName, manageToken, reused } = connected;
      return reply
        .type('application/json; charset=utf-8')
        .send({ id, calendarId, calendarName, source, manageToken, reused });
    }
    return reply.type('text/html; charset=utf-8').send(connectedPage(ctx, connected));
  });

  app.get<TargetParams>('/google/targets/:id', async (request, reply) => {
    const target = await authorisedTarget(ctx, request);
    reply.header('cache-control', NO_STORE);
    return targetView(ctx, target, { pendingChanges: true });
  });

  app.delete<TargetParams>('/google/targets/:id', async (request, reply) => {
    const deleteCalendar = deleteCalendarOption(request.query);
    const target = await authorisedTarget(ctx, request);
    const result = await disconnectTarget(ctx, target.id, { deleteCalendar });
    if (result === undefined) throw new HttpError(404, `no Google target ${target.id}`);
    return answerDisconnected(reply, result);
  });
}

/** A 503 unless Google push can work: OAuth client settings, and a SECRET_KEY to seal refresh tokens with. */
function requireGoogle(ctx: ServiceContext): void {
  if (!ctx.google.configured) throw googleHttpError(new GoogleNotConfiguredError());
  if (ctx.config.secretKey === undefined)
    throw new HttpError(503, 'Google push needs SECRET_KEY (refresh tokens are stored encrypted)');
}

/** The source of a connect request; a personal one only for the holder of its feed token. */
async function authorisedSource(ctx: ServiceContext, query: unknown): Promise<SourceKey> {
  const parsed = connectQuery.safeParse(query ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new HttpError(
      400,
      `${issue?.path.join('.') || 'source'}: ${issue?.message ?? 'is required'} (e.g. ?source=group:4242)`,
    );
  }
  let source: SourceKey;
  try {
    source = sourceKey(parseSource(parsed.data.source));
  } catch (error) {
    if (error instanceof InvalidSourceError) throw new HttpError(400, `source: ${error.message}`);
    throw error;
  }
  if (!source.startsWith('personal:')) return source;
  const id = source.slice('personal:'.length);
  const { token } = parsed.data;
  if (token === undefined)
    throw new HttpError(401, 'a personal timetable needs token=<the secret token of its feed URL>');
  const owner = await ctx.subscriptions.verifyToken(id, token);
  if ((await ctx.subscriptions.get(id)) === undefined) throw new HttpError(404, `no subscription ${id}`);
  if (!owner) throw new HttpError(401, 'wrong feed token for this subscription');
  return source;
}

/**
 * The callback: takes the pending consent (first, so that a replay or a refusal uses the state up),
 * exchanges the code, and connects the target.
 */
async function completeConsent(
  ctx: ServiceContext,
  query: unknown,
): Promise<{ source: SourceKey; connected: ConnectedTarget }> {
  const parsed = callbackQuery.safeParse(query ?? {});
  if (!parsed.success)
    throw new HttpError(
      400,
      parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '),
    );
  const { state, code, error } = parsed.data;
  if (state === undefined) throw new HttpError(400, 'state is missing: start at /google/connect');
  const pending = await takeConsent(ctx, state).catch((failure: unknown) => {
    throw failure instanceof ConsentStateError ? new HttpError(400, failure.message) : failure;
  });
  if (error !== undefined) {
    const why = error === 'access_denied' ? 'consent was refused' : `Google answered "${error.slice(0, 60)}"`;
    throw new HttpError(400, `${why}: nothing was connected`);
  }
  if (code === undefined || code === '') throw new HttpError(400, 'code is missing: start again at /google/connect');
  const oauth = ctx.google.oauth;
  if (!ctx.google.configured || oauth === undefined) throw googleHttpError(new GoogleNotConfiguredError());
  try {
    const granted = await oauth.exchangeCode({ code, codeVerifier: pending.codeVerifier });
    const request = {
      source: pending.source,
      refreshToken: granted.refreshToken,
      ...(granted.googleUser === undefined ? {} : { googleUser: granted.googleUser }),
    };
    return { source: pending.source, connected: await connectTarget(ctx, request) };
  } catch (failure) {
    if (failure instanceof GoogleConsentError)
      throw new HttpError(
        400,
        `Google did not grant what Google push needs: ${failure.message}; start again at /google/connect`,
      );
    throw googleHttpError(failure);
  }
}

/**
 * The target the request may act on: the holder of its manage token or the admin. A missing token is a 401
 * before anything is looked up; an unknown id a 404; a wrong token a 401.
 */
async function authorisedTarget(ctx: ServiceContext, request: FastifyRequest<TargetParams>): Promise<PushTarget> {
  const { id } = request.params;
  checkTargetId(id);
  const token = presentedToken(request.headers.authorization, false);
  if (token === undefined)
    throw new HttpError(401, 'this needs Authorization: Bearer <manage token of the target>', {
      'www-authenticate': 'Bearer realm="timetable-sync"',
    });
  const admin = ctx.config.adminToken !== undefined && constantTimeEqual(token, ctx.config.adminToken);
  // Ids are 128-bit random values, so answering 404 before the token check tells a caller nothing useful.
  const owner = await ctx.google.targets.verifyManageToken(id, token);
  const target = await ctx.google.targets.get(id);
  if (target === undefined) throw new HttpError(404, `no Google target ${id}`);
  if (!admin && !owner)
    throw new HttpError(401, 'wrong token for this Google target', {
      'www-authenticate': 'Bearer realm="timetable-sync", error="invalid_token"',
    });
  return target;
}

/** True when the client asks for JSON rather than a page (a browser's Accept names text/html). */
function prefersJson(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  return /\bapplication\/json\b/i.test(accept) && !/\btext\/html\b/i.test(accept);
}

/** The page a browser lands on after consenting: what was connected, and how to disconnect it. */
function connectedPage(ctx: ServiceContext, connected: ConnectedTarget): string {
  const manageUrl = `${ctx.config.publicUrl}/google/targets/${connected.id}`;
  const lines = [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer"><title>Google Calendar connected</title></head><body>',
    `<h1>Connected: ${escapeHtml(connected.calendarName)}</h1>`,
    `<p>${connected.reused ? 'Your existing calendar' : 'A new calendar'} <strong>${escapeHtml(connected.calendarName)}</strong> in your Google Calendar now follows this timetable. The first events arrive within a few minutes.</p>`,
    '<p>Keep this manage token: it is shown only once, and it is what lets you check or remove the connection.</p>',
    `<pre>${escapeHtml(connected.manageToken)}</pre>`,
    `<p>State: <code>curl -H "Authorization: Bearer &lt;manage token&gt;" ${escapeHtml(manageUrl)}</code></p>`,
    `<p>Disconnect (and delete the calendar): <code>curl -X DELETE -H "Authorization: Bearer &lt;manage token&gt;" "${escapeHtml(manageUrl)}?deleteCalendar=true"</code></p>`,
    '</body></html>',
    '',
  ];
  return lines.join('\n');
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
