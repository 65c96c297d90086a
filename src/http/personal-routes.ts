/**
 * The owner's actions on a personal subscription from its page, for the browser signed in to it (its session
 * cookie, personal-session.ts): save feed options, rotate the feed URL, revoke one feed URL, sign out, sign out
 * every other browser, delete. Each is a form post, checked to come from our own pages, answered with a 303
 * back to a page and a `?done=` word it shows. A browser without a live session is sent to `/` to sign in (a
 * rotation by way of the personal page, so that one tab's stale rotation does not clear the cookie another
 * tab's rotation just set).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { OptionRefusedError } from '../serving/errors.ts';
import { optionsMisfitsFor } from '../serving/variant-render.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import { deleteSubscription, revokeFeedUrl, rotateFeedToken, saveFeedOptions } from '../subscriptions/personal.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import { optionsRefusedPage, PERSONAL_ACTIONS, type PersonalDone } from '../web/personal-manage.ts';
import { acceptForms, type FormFields, formOf } from './form-body.ts';
import { type PageDeps, requestLang, requireSameOrigin, sendPage } from './pages.ts';
import {
  clearPersonalSession,
  holdsSignInCookie,
  type PersonalSession,
  type PersonalSessionDeps,
  readPersonalSession,
  sessionCookie,
  setPersonalSession,
} from './personal-session.ts';
import { filledOptionFields, readSubscriberOptions } from './subscriber-query.ts';

const PERSONAL_PAGE = '/timetables/personal';

/** What the personal actions read and run their use cases with. */
export type PersonalRouteDeps = PersonalSessionDeps &
  Parameters<typeof saveFeedOptions>[0] &
  Parameters<typeof rotateFeedToken>[0] &
  Parameters<typeof deleteSubscription>[0] & {
    readonly snapshots: Pick<SnapshotStore, 'timetableOptionValues'>;
    readonly subscriptions: Pick<SubscriptionStore, 'openSession' | 'closeSession' | 'closeOtherSessions'>;
  };

/** Registers the personal subscription's form actions (in a scope of their own that reads form bodies). */
export async function registerPersonalRoutes(app: FastifyInstance, ctx: PersonalRouteDeps): Promise<void> {
  await app.register(async (scope) => {
    acceptForms(scope);

    scope.post(PERSONAL_ACTIONS.options, async (request, reply) => {
      const session = await signedIn(ctx, request, reply);
      if (session === undefined) return reply;
      const form = formOf(request.body);
      const chosen = form.action === 'clear' ? { options: {}, refused: [] } : await validOptions(ctx, session, form);
      if (chosen.refused.length > 0) {
        // The way back keeps what was typed: the page's form shows it again, each reason beside its field.
        const lang = requestLang(ctx, request, reply);
        const typed = new URLSearchParams();
        for (const [name, value] of Object.entries(filledOptionFields(form)))
          for (const item of typeof value === 'string' ? [value] : value) typed.append(name, item);
        const reasons = chosen.refused.map((error) => error.fieldWords[lang]);
        const back = `${PERSONAL_PAGE}?${typed}#options`;
        return sendPage(reply, optionsRefusedPage({ lang, url: PERSONAL_PAGE, reasons, back }), { status: 400 });
      }
      const saved = await saveFeedOptions(ctx, session.subscription, chosen.options, request.log);
      if (!saved) return forgetAndLeave(ctx, request, reply);
      return back(reply, Object.keys(chosen.options).length === 0 ? 'options-cleared' : 'options', '#options');
    });

    scope.post(PERSONAL_ACTIONS.rotate, async (request, reply) => {
      requireSameOrigin(ctx, request);
      // A token already gone here is most likely another tab's rotation, whose new cookie this browser may hold
      // by now: the cookie is left alone and the page, which reads it, decides (it sends a dead one to sign in).
      const session = await readPersonalSession(ctx, request);
      const token = session && (await rotateFeedToken(ctx, session.subscription, session.holder, request.log));
      if (session === undefined || token === undefined) return redirect(reply, PERSONAL_PAGE);
      // Every other browser is signed out by the rotation; one signed in before sessions, by the feed token just
      // revoked, gets a session instead.
      await keepSignedIn(ctx, reply, session);
      return back(reply, 'rotated');
    });

    scope.post(PERSONAL_ACTIONS.signOutOthers, async (request, reply) => {
      const session = await signedIn(ctx, request, reply);
      if (session === undefined) return reply;
      const { id } = session.subscription;
      const closed = await ctx.subscriptions.closeOtherSessions(id, session.holder, ctx.now());
      if (closed === undefined) return forgetAndLeave(ctx, request, reply);
      await keepSignedIn(ctx, reply, session);
      request.log.info({ subscription: id, closedSessions: closed }, 'personal sessions of other browsers closed');
      return back(reply, 'signed-out-others', '#sign-out');
    });

    scope.post(PERSONAL_ACTIONS.revokeUrl, async (request, reply) => {
      const session = await signedIn(ctx, request, reply);
      if (session === undefined) return reply;
      const form = formOf(request.body);
      const key = typeof form.url === 'string' ? form.url : '';
      if (form.confirm !== 'yes') return back(reply, 'confirm-revoke', '#feed-urls');
      const revoked = await revokeFeedUrl(ctx, session.subscription, key, request.log);
      if (revoked === undefined) return back(reply, 'url-gone', '#feed-urls');
      // Signed in before sessions by the very URL revoked: that browser signs in again.
      if ('token' in session.holder && !(await ctx.subscriptions.verifyToken(session.subscription.id, session.token))) {
        clearPersonalSession(ctx, reply);
        return leave(reply, 'signed-out');
      }
      return back(reply, revoked === 'page' ? 'page-url-revoked' : 'url-revoked', '#feed-urls');
    });

    scope.post(PERSONAL_ACTIONS.delete, async (request, reply) => {
      const session = await signedIn(ctx, request, reply);
      if (session === undefined) return reply;
      if (formOf(request.body).confirm !== 'yes') return back(reply, 'confirm-delete', '#delete');
      await deleteSubscription(ctx, session.subscription, request.log);
      clearPersonalSession(ctx, reply);
      return leave(reply, 'deleted');
    });

    scope.post(PERSONAL_ACTIONS.signOut, async (request, reply) => {
      requireSameOrigin(ctx, request);
      const current = sessionCookie(request);
      if (current !== undefined) await ctx.subscriptions.closeSession(current.id, current.session);
      clearPersonalSession(ctx, reply);
      return leave(reply, 'signed-out');
    });
  });
}

/**
 * The session of a same-origin form post; undefined (the browser sent to `/`, a dead cookie cleared) when
 * the browser is not signed in, or its feed token was revoked, or its subscription deleted.
 */
async function signedIn(
  ctx: PersonalSessionDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<PersonalSession | undefined> {
  requireSameOrigin(ctx, request);
  const session = await readPersonalSession(ctx, request);
  if (session === undefined) await forgetAndLeave(ctx, request, reply);
  return session;
}

/**
 * The form's options, checked as a feed URL's are and against what the timetable has, with a refusal for
 * each bad field (then none is saved).
 */
async function validOptions(
  ctx: Pick<PersonalRouteDeps, 'snapshots'>,
  session: PersonalSession,
  form: FormFields,
): Promise<{ options: SubscriberOptions; refused: OptionRefusedError[] }> {
  const read = readSubscriberOptions(filledOptionFields(form));
  const { misfits } = await optionsMisfitsFor(ctx.snapshots, session.subscription.source, read.options);
  return { options: read.options, refused: [...read.refused, ...misfits] };
}

/**
 * Gives a browser signed in before sessions (by a feed token in its cookie, no longer accepted once the other
 * browsers are signed out) a session of its own; a browser with a session keeps it.
 */
async function keepSignedIn(ctx: PersonalRouteDeps, reply: FastifyReply, session: PersonalSession): Promise<void> {
  if (!('token' in session.holder)) return;
  const opened = await ctx.subscriptions.openSession(session.subscription.id, ctx.now());
  if (opened !== undefined) setPersonalSession(ctx, reply, session.subscription.id, opened);
}

function back(reply: FastifyReply, done: PersonalDone, fragment = ''): FastifyReply {
  return redirect(reply, `${PERSONAL_PAGE}?done=${done}${fragment}`);
}

function leave(reply: FastifyReply, done: PersonalDone): FastifyReply {
  return redirect(reply, `/?done=${done}`);
}

/** Forgets this browser's dead sign-in and sends it home, where it is told its sign-in ended elsewhere. */
async function forgetAndLeave(ctx: PageDeps, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const ended = holdsSignInCookie(request);
  clearPersonalSession(ctx, reply);
  return redirect(reply, ended ? '/?done=signed-out-elsewhere' : '/');
}

function redirect(reply: FastifyReply, location: string): FastifyReply {
  return reply.code(303).header('location', location).header('cache-control', 'no-store').send();
}
