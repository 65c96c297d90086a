/**
 * Google push targets in the kind-neutral target store: where they live in Redis, the words and fields that are
 * Google's (the sealed refresh token, `needs-consent`, the request budget and the Google user), and a typed
 * reading of those fields. The keys and field names are the ones Google targets were always stored under.
 */
import type { RedisKeys } from '../store/keys.ts';
import type { PushTargetLayout } from '../store/push-target-layout.ts';
import type { PushTarget } from '../store/push-target-record.ts';
import type { PushTargetStore } from '../store/push-target-store.ts';

/** A Google target's status when Google refused its refresh token: only a new consent brings it back. */
export type GoogleNeedsCredential = 'needs-consent';

/** A Google push target. */
export type GoogleTarget = PushTarget<GoogleNeedsCredential>;

/** The store of Google push targets. */
export type GoogleTargetStore = PushTargetStore<GoogleNeedsCredential>;

/** How Google targets are laid out in Redis (`google-target:<id>`, `source-targets:<source>`, …). */
export function googleTargetLayout(keys: RedisKeys): PushTargetLayout<GoogleNeedsCredential> {
  return {
    kind: 'google',
    // Google target hashes never had a `kind` field; writing one now would change what old code reads.
    kindField: false,
    keys: {
      target: keys.googleTarget,
      index: keys.googleIndex,
      all: keys.googleTargets,
      due: keys.googleTargetsDue,
      source: keys.sourceTargets,
    },
    credential: { field: 'refreshToken', context: (id) => `google-target:${id}:refresh-token` },
    needsCredential: 'needs-consent',
    calendarDetails: [],
    owner: { field: 'googleUser', key: keys.googleUserTarget },
  };
}

/** The Google fields of a target. */
export interface GoogleDetails {
  /** The request budget this target's Google requests count against (`user:<sub>` or `token:<hash16>`). */
  budgetKey: string;
  /** Google's user id (`sub`), when known. */
  googleUser?: string;
}

/** The Google fields of `target`, typed. */
export function googleDetails(target: Pick<PushTarget, 'details'>): GoogleDetails {
  const { budgetKey, googleUser } = target.details;
  return { budgetKey: budgetKey ?? '', ...(googleUser === undefined ? {} : { googleUser }) };
}

/** The detail fields of a new Google target (or of a new refresh token's, which may bring a new budget). */
export function googleDetailFields(details: {
  budgetKey: string;
  googleUser?: string | undefined;
}): Record<string, string> {
  return details.googleUser === undefined
    ? { budgetKey: details.budgetKey }
    : { budgetKey: details.budgetKey, googleUser: details.googleUser };
}
