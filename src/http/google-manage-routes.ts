/**
 * Google Calendar as the push-target routes see it (push-route-kind.ts): its targets under `/google/targets`
 * (manage token in the `tts-manage` cookie), its JSON view, its manage page, and disconnecting with or without
 * deleting the calendar. What only Google has stays here: the consent callback's problem pages. The one mapping
 * from a stored Google target to the pages' view model is {@link googleTargetModel}.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ConsentCallbackError, GoogleNotConfiguredError } from '../google/errors.ts';
import type { GoogleTarget, GoogleTargetStore } from '../google/google-targets.ts';
import { disconnectGoogleTarget } from '../subscriptions/google-disconnect.ts';
import {
  type GoogleProblem,
  googleDisconnected,
  googleManagePage,
  googleProblemPage,
} from '../web/google-manage-page.ts';
import type { Lang } from '../web/i18n.ts';
import { type PushTargetModel, pushDisconnectedPage } from '../web/push-manage-page.ts';
import { formOf } from './form-body.ts';
import {
  deleteCalendarOption,
  GOOGLE_LEFT_BEHIND,
  type GoogleTargetViewDeps,
  googleViewSources,
} from './google-target-view.ts';
import { type GoogleOwnerDeps, googleTargetRecords } from './owner-auth.ts';
import type { PageDeps } from './pages.ts';
import { connectUrl } from './push-options-form.ts';
import type { PushRouteKind } from './push-route-kind.ts';
import { type PushTargetRouteDeps, sendProblemPage } from './push-target-routes.ts';
import { leftBehind, pushTargetModel, pushTargetViews } from './push-target-view.ts';

/** The cookie that holds a target's manage token, on that target's path only. */
export const MANAGE_COOKIE = 'tts-manage';

/** What the Google kind reads and disconnects with. */
export type GoogleKindDeps = PushTargetRouteDeps &
  GoogleTargetViewDeps &
  GoogleOwnerDeps &
  Parameters<typeof disconnectGoogleTarget>[0] & {
    readonly google: {
      readonly targets: Pick<GoogleTargetStore, 'get' | 'verifyManageToken' | 'page' | 'updateOptions'>;
    };
  };

/** The page's view of a stored Google target (its page does not show the last error). */
export function googleTargetModel(target: GoogleTarget): PushTargetModel {
  return pushTargetModel(target, { needsCredential: 'needs-consent', lastError: false });
}

/** Google Calendar, for the shared push-target routes. */
export function googleRouteKind(ctx: GoogleKindDeps): PushRouteKind<GoogleTarget, { deleteCalendar: boolean }> {
  return {
    name: 'google',
    base: '/google/targets',
    adminBase: '/google-targets',
    cookie: MANAGE_COOKIE,
    records: googleTargetRecords(ctx),
    page: (offset, limit) => ctx.google.targets.page(offset, limit),
    ...pushTargetViews(googleViewSources(ctx)),
    managePage: (view, target) => googleManagePage({ ...view, target: googleTargetModel(target) }),
    optionsTargets: ctx.google.targets,
    // A new consent keeps what the calendar followed: the options it has, or none (then it keeps its own).
    connectUrl: (source, options) => connectUrl('google', source, options),
    problemPage: googleProblemPage,
    disconnectQuery: (query) => ({ deleteCalendar: deleteCalendarOption(query) }),
    disconnectForm: (body) => ({ deleteCalendar: formOf(body).deleteCalendar === 'yes' }),
    disconnect: async (id, options) => {
      const result = await disconnectGoogleTarget(ctx, id, options);
      if (result === undefined) return undefined;
      const outcome = result.calendarError !== undefined ? 'failed' : result.calendarDeleted ? 'deleted' : 'kept';
      return {
        failure: leftBehind(GOOGLE_LEFT_BEHIND, result.calendarId, result.calendarError),
        page: (view, target) =>
          pushDisconnectedPage({ ...view, calendarName: target.calendarName, outcome }, googleDisconnected),
      };
    },
  };
}

/** Answers a problem page of the Google pages. */
export function sendProblem(
  ctx: PageDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  problem: GoogleProblem,
  status: number,
  detail?: string,
): FastifyReply {
  const render = (view: { lang: Lang; url: string }) =>
    googleProblemPage({ ...view, problem, ...(detail ? { detail } : {}) });
  return sendProblemPage(ctx, request, reply, render, status);
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
