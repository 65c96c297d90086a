/**
 * Google Calendar as the push-target routes see it (push-route-kind.ts): its targets under `/google/targets`
 * (manage token in the `tts-manage` cookie), its JSON view, its manage page, and disconnecting with or without
 * deleting the calendar. What only Google has stays here: the consent callback's problem pages. The one mapping
 * from a stored Google target to the pages' view model is {@link googleTargetModel}.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ConsentCallbackError, GoogleNotConfiguredError } from '../google/errors.ts';
import { pendingChanges } from '../google/google-pending.ts';
import type { GoogleTarget, GoogleTargetStore } from '../google/google-targets.ts';
import { pendingPush } from '../jobs/job-status.ts';
import { disconnectTarget } from '../subscriptions/google-disconnect.ts';
import {
  type GoogleProblem,
  googleDisconnectedPage,
  googleManagePage,
  googleProblemPage,
} from '../web/google-manage-page.ts';
import type { Lang } from '../web/i18n.ts';
import type { PushTargetModel } from '../web/push-manage-page.ts';
import { formOf } from './form-body.ts';
import { deleteCalendarOption, googleDisconnection, type TargetViewDeps, targetView } from './google-target-view.ts';
import { googleTargetRecords, type TargetOwnerDeps } from './owner-auth.ts';
import type { PageDeps } from './pages.ts';
import type { PushRouteKind } from './push-route-kind.ts';
import { type PushTargetRouteDeps, sendProblemPage } from './push-target-routes.ts';

/** The cookie that holds a target's manage token, on that target's path only. */
export const MANAGE_COOKIE = 'tts-manage';

/** What the Google kind reads and disconnects with. */
export type GoogleKindDeps = PushTargetRouteDeps &
  TargetViewDeps &
  TargetOwnerDeps &
  Parameters<typeof pendingChanges>[0] &
  Parameters<typeof pendingPush>[0] &
  Parameters<typeof disconnectTarget>[0] & {
    readonly google: { readonly targets: Pick<GoogleTargetStore, 'get' | 'verifyManageToken' | 'page'> };
  };

/** The page's view of a stored Google target. */
export function googleTargetModel(target: GoogleTarget): PushTargetModel {
  return {
    id: target.id,
    calendarName: target.calendarName,
    calendarOwned: target.calendarOwned,
    status: target.status,
    state: target.status === 'needs-consent' ? 'needs-credential' : target.status,
    statusReason: target.statusReason,
    pausedUntil: target.pausedUntil,
    lastPush: target.lastPush,
  };
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
    view: (target, detail) => targetView(ctx, target, detail),
    pending: async (target) => {
      const [changes, queued] = await Promise.all([
        pendingChanges(ctx, target.id, target.source),
        pendingPush(ctx, target.id),
      ]);
      return { changes, queued: queued !== null };
    },
    managePage: (view, target) => googleManagePage({ ...view, target: googleTargetModel(target) }),
    connectUrl: (source) => `/google/connect?source=${encodeURIComponent(source)}`,
    problemPage: googleProblemPage,
    disconnectQuery: (query) => ({ deleteCalendar: deleteCalendarOption(query) }),
    disconnectForm: (body) => ({ deleteCalendar: formOf(body).deleteCalendar === 'yes' }),
    disconnect: async (id, options) => {
      const result = await disconnectTarget(ctx, id, options);
      if (result === undefined) return undefined;
      return {
        failure: googleDisconnection(result),
        page: (view, target) =>
          googleDisconnectedPage({
            ...view,
            calendarName: target.calendarName,
            calendarDeleted: result.calendarDeleted,
            deleteFailed: result.calendarError !== undefined,
          }),
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
