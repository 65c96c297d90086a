/**
 * How stored records appear in answers. One rule for every view: times are ISO 8601 text, and a field that
 * has no value is `null`, never missing; secrets are never part of a view.
 */
import type { FreshnessView } from '../jobs/freshness-view.ts';
import { unlistedCounts } from '../store/change-bounds.ts';
import type { SourceState } from '../store/registry.ts';
import type { Subscription } from '../store/subscription-store.ts';
import type { ChangeRecord } from '../timetable/publication.ts';

/** Epoch milliseconds as ISO text; `null` when absent. */
export function iso(ms: number | undefined | null): string | null {
  return ms === undefined || ms === null ? null : new Date(ms).toISOString();
}

/**
 * A source's row of the admin table, with its next background refresh and why, and what parks it (both `null`
 * when the freshness planner has no plan for it: `REFRESH_POLICY=fixed`, or not active).
 */
export function sourceView(state: SourceState, freshness?: FreshnessView): Record<string, unknown> {
  const next = freshness?.nextRefresh;
  return {
    source: state.source,
    status: state.status,
    active: state.active,
    activeSince: iso(state.activeSince),
    lastRequested: iso(state.lastRequested),
    lastAttempt: iso(state.lastAttempt),
    lastSuccess: iso(state.lastSuccess),
    lastChange: iso(state.lastChange),
    lastError: state.lastError ?? null,
    lastErrorKind: state.lastErrorKind ?? null,
    lastErrorAt: iso(state.lastErrorAt),
    consecutiveFailures: state.consecutiveFailures,
    staleSince: iso(state.staleSince),
    occurrences: state.occurrences ?? null,
    problems: state.problems ?? null,
    pendingHash: state.pendingHash ?? null,
    pendingSince: iso(state.pendingSince),
    nextRefresh: next === undefined ? null : { at: iso(next.at), why: next.why },
    parkedBy: freshness?.parkedBy ?? null,
  };
}

/**
 * A change record of a source's log, with how many occurrences of each kind it counts but does not list: a
 * record's lists hold at most 50 of each kind and are shortened to fit its bytes ("and N more").
 */
export function changeView(change: ChangeRecord): Record<string, unknown> {
  return { ...change, at: iso(change.at), unlisted: unlistedCounts(change) };
}

/** A personal subscription joined with its source's refresh state. */
export function subscriptionView(subscription: Subscription, state: SourceState | undefined): Record<string, unknown> {
  return {
    id: subscription.id,
    source: subscription.source,
    name: subscription.name,
    status: subscription.status,
    statusReason: subscription.statusReason ?? null,
    createdAt: iso(subscription.createdAt),
    updatedAt: iso(subscription.updatedAt),
    feedStatus: state?.status ?? null,
    lastSuccess: iso(state?.lastSuccess),
    lastError: state?.lastError ?? null,
    staleSince: iso(state?.staleSince),
  };
}
