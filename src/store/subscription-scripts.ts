/**
 * The Lua scripts that keep a subscription, its owner index and its feed tokens consistent
 * (`subscription-*.lua` beside this module, loaded here by name): each runs as one atomic step, so two sign-ups
 * of one person racing each other, or a sign-up racing a delete, can never leave two subscriptions for one
 * owner, a token of a deleted subscription, or more live tokens than allowed.
 * Every key a script touches is passed in KEYS (legal on Redis Cluster with a hash-tagged prefix). Scripts
 * that act on a list of tokens read beforehand are guarded by the subscription's `tokenSeq`, which every
 * token issued raises: when it moved meanwhile they change nothing and answer {@link STALE}, and the caller
 * reads again.
 *
 * Scripts that stop feed tokens from working (a revocation, a rotation, a deletion) announce it themselves on
 * the feed-updates channel, inside the same atomic step: the last two ARGV are the channel and the message
 * (`store/feed-updates.ts`). A change is then never made without its announcement, nor announced without
 * being made; PUBLISH from a script is allowed on Redis Cluster too.
 */
import { loadScript } from '../lib/lua-script.ts';

/** Answered by a guarded script when the subscription changed since the caller read it. */
export const STALE = -2;

/** Answered when the subscription no longer exists. */
export const GONE = -1;

/** Creates a subscription unless its owner already has one (subscription-create.lua). */
export const CREATE_UNLESS_OWNED = loadScript(import.meta.dirname, 'subscription-create');

/** Issues one more feed token to an existing subscription (subscription-issue-token.lua). */
export const ISSUE_TOKEN = loadScript(import.meta.dirname, 'subscription-issue-token');

/** Revokes a subscription's least recently used tokens beyond the most (subscription-trim-tokens.lua). */
export const TRIM_TOKENS = loadScript(import.meta.dirname, 'subscription-trim-tokens');

/** Records that a live token was used (subscription-touch-token.lua). */
export const TOUCH_TOKEN = loadScript(import.meta.dirname, 'subscription-touch-token');

/** Revokes one token of a subscription and announces it (subscription-revoke-token.lua). */
export const REVOKE_TOKEN = loadScript(import.meta.dirname, 'subscription-revoke-token');

/** Deletes a subscription with its tokens and owner index (subscription-delete.lua). */
export const DELETE_SUBSCRIPTION = loadScript(import.meta.dirname, 'subscription-delete');

/** Replaces every feed token of a subscription with one new one (subscription-rotate-tokens.lua). */
export const ROTATE_TOKENS = loadScript(import.meta.dirname, 'subscription-rotate-tokens');

/** Gives a subscription its page's own feed URL when it has none (subscription-page-token.lua). */
export const PAGE_TOKEN = loadScript(import.meta.dirname, 'subscription-page-token');

/** Drops an owner index that leads to a subscription that is gone (subscription-drop-owner.lua). */
export const DROP_OWNER = loadScript(import.meta.dirname, 'subscription-drop-owner');
