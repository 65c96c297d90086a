/**
 * CalDAV as the push-target routes see it (push-route-kind.ts): its targets under `/caldav/targets` (manage
 * token in the `tts-caldav-manage` cookie), its JSON view, its manage page with the server, the login and a
 * form for a new app password, and disconnecting. The one mapping from a stored CalDAV target to the pages'
 * view model is {@link caldavTargetModel}.
 */

import { type CalDavTarget, type CalDavTargetStore, caldavDetails } from '../caldav/caldav-targets.ts';
import { TARGET_ID } from '../store/push-target-store.ts';
import { disconnectCaldavTarget } from '../subscriptions/caldav-disconnect.ts';
import {
  caldavDisconnected,
  caldavManagePage,
  caldavProblemPage,
  type PasswordOutcome,
} from '../web/caldav-manage-page.ts';
import { type PushTargetModel, pushDisconnectedPage } from '../web/push-manage-page.ts';
import {
  CALDAV_LEFT_BEHIND,
  type CalDavTargetViewDeps,
  caldavTargetNotFound,
  caldavViewSources,
} from './caldav-target-view.ts';
import { connectUrl } from './push-options-form.ts';
import type { PushRouteKind } from './push-route-kind.ts';
import type { PushTargetRouteDeps } from './push-target-routes.ts';
import { leftBehind, pushTargetModel, pushTargetViews } from './push-target-view.ts';

/** The cookie that holds a CalDAV target's manage token, on that target's path only. */
export const CALDAV_MANAGE_COOKIE = 'tts-caldav-manage';

/** What the CalDAV kind reads and disconnects with. */
export type CalDavKindDeps = PushTargetRouteDeps &
  CalDavTargetViewDeps &
  Parameters<typeof disconnectCaldavTarget>[0] & {
    readonly caldav: {
      readonly targets: Pick<CalDavTargetStore, 'get' | 'verifyManageToken' | 'page' | 'updateOptions'>;
    };
  };

/** The page's view of a stored CalDAV target, with its last error while it is stopped. */
export function caldavTargetModel(target: CalDavTarget): PushTargetModel {
  return pushTargetModel(target, { needsCredential: 'needs-password', lastError: true });
}

/** CalDAV, for the shared push-target routes; its page's extra is the password form's outcome. */
export function caldavRouteKind(ctx: CalDavKindDeps): PushRouteKind<CalDavTarget, object, PasswordOutcome> {
  return {
    name: 'caldav',
    base: '/caldav/targets',
    adminBase: '/caldav-targets',
    cookie: CALDAV_MANAGE_COOKIE,
    records: {
      format: TARGET_ID,
      malformed: {
        en: 'malformed CalDAV target id (22 characters: letters, digits, _ and -)',
        ru: 'неверный id подключения CalDAV (22 символа: латинские буквы, цифры, _ и -)',
      },
      noToken: {
        en: 'this needs Authorization: Bearer <manage token of the CalDAV target>',
        ru: 'нужен Authorization: Bearer <токен управления этим подключением CalDAV>',
      },
      wrongToken: { en: 'wrong token for this CalDAV target', ru: 'неверный токен для этого подключения CalDAV' },
      notFound: caldavTargetNotFound,
      verify: (id, token) => ctx.caldav.targets.verifyManageToken(id, token),
      get: (id) => ctx.caldav.targets.get(id),
    },
    page: (offset, limit) => ctx.caldav.targets.page(offset, limit),
    ...pushTargetViews(caldavViewSources(ctx)),
    managePage: (view, target, password) =>
      caldavManagePage({
        ...view,
        target: caldavTargetModel(target),
        host: new URL(target.calendarId).host,
        username: caldavDetails(target).username,
        password,
      }),
    optionsTargets: ctx.caldav.targets,
    // Connecting again keeps what the calendar followed: the options it has, or none (then it keeps its own).
    connectUrl: (source, options) => connectUrl('caldav', source, options),
    problemPage: caldavProblemPage,
    // Disconnecting always removes what the service wrote: there is nothing to choose.
    disconnectQuery: () => ({}),
    disconnectForm: () => ({}),
    disconnect: async (id) => {
      const result = await disconnectCaldavTarget(ctx, id);
      if (result === undefined) return undefined;
      return {
        failure: leftBehind(CALDAV_LEFT_BEHIND, result.calendarUrl, result.error),
        page: (view, target) => {
          const outcome = result.error !== undefined ? 'failed' : target.calendarOwned ? 'deleted' : 'kept';
          return pushDisconnectedPage({ ...view, calendarName: target.calendarName, outcome }, caldavDisconnected);
        },
      };
    },
  };
}
