/**
 * What the shared push-target routes (push-target-routes.ts, push-admin-routes.ts) need of one calendar kind:
 * where its pages live, how its targets are found and their manage tokens checked, its JSON view, its page, and
 * how it disconnects. Each kind builds one (google-manage-routes.ts, caldav-manage-routes.ts) from its store;
 * the mapping from its stored target to the pages' view model is the kind's, so that the routes and pages do
 * not depend on how targets are stored.
 */

import type { PushTargetStore } from '../store/push-target-store.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import type { Html } from '../web/html.ts';
import type { Lang } from '../web/i18n.ts';
import type { PushCounts, PushManageView, PushProblem } from '../web/push-manage-page.ts';
import type { HttpError } from './errors.ts';
import type { OwnedRecords } from './owner-auth.ts';

/** The fields of a stored target that the shared routes read, whatever the kind. */
export interface RoutedTarget {
  id: string;
  source: string;
  calendarName: string;
  /** The feed options the calendar follows; absent: the whole timetable (connected before push followed them). */
  options?: SubscriberOptions | undefined;
}

/** What a disconnection of a `T` did, for both its answers. */
export interface Disconnection<T> {
  /** Set when not everything could be removed: the API answers this error (a 502) with `fields` beside it. */
  failure?: { error: HttpError; fields: Record<string, unknown> } | undefined;
  /** The page a browser gets after Disconnect of `target` (as it was before). */
  page(view: { lang: Lang; url: string }, target: T): Html;
}

/** One calendar kind, as the push-target routes see it; `O` are its disconnect options, `E` its page's extras. */
export interface PushRouteKind<T extends RoutedTarget, O extends object = object, E = never> {
  /** The kind in log lines (`google`, `caldav`). */
  name: string;
  /** The public path of its targets (`/google/targets`); a target's manage page is `<base>/<id>`. */
  base: string;
  /** The admin API's path of its targets, under `/admin` (`/google-targets`). */
  adminBase: string;
  /** The cookie holding a target's manage token, scoped to that target's pages. */
  cookie: string;
  /** Finding a target and checking its manage token, with the words of each refusal. */
  records: OwnedRecords<T>;
  /** Where the manage page's options form changes the options a target follows. */
  optionsTargets: Pick<PushTargetStore, 'get' | 'updateOptions'>;
  /** A page of targets, for the admin's list. */
  page(offset: number, limit: number): Promise<{ total: number; targets: T[] }>;
  /** The JSON view of a target (with its pending changes when asked: they cost a timetable's expansion). */
  view(target: T, detail?: { pendingChanges?: boolean }): Promise<Record<string, unknown>>;
  /** The changes not pushed yet (null before the first publication) and whether a push is queued. */
  pending(target: T): Promise<{ changes: PushCounts | null; queued: boolean }>;
  /** The manage page of a target from the shared view (the mapping from the stored target is the kind's). */
  managePage(view: Omit<PushManageView, 'target'>, target: T, extras?: E): Html;
  /** Where "connect again" starts for a source, following `options` as the target did. */
  connectUrl(source: string, options?: SubscriberOptions): string;
  /** The problem page of a problem every kind shares. */
  problemPage(view: { lang: Lang; url: string; problem: PushProblem }): Html;
  /** The disconnect options of an API request's query (a 400 for a malformed one). */
  disconnectQuery(query: unknown): O;
  /** The disconnect options of the manage page's form. */
  disconnectForm(body: unknown): O;
  /** Disconnects the target; undefined when it is gone already. */
  disconnect(id: string, options: O): Promise<Disconnection<T> | undefined>;
}
