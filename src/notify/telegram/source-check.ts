/**
 * Whether `/start` of a public timetable may subscribe a chat, asked before anything is stored: a chat's link
 * costs the university a call only as a first feed request does, and an id the university does not know is
 * never subscribed to.
 *
 * A timetable fetched before (its feed stored, or refreshed periodically) is known at no cost, and so is an id
 * the university already said it does not know. Anything else is a first request: it is admitted under the
 * first-request limits (FIRST_REQUESTS_PER_CLIENT with the chat as the client, and FIRST_REQUESTS_TOTAL shared
 * with the feed routes; an id nobody vouches for may not take the last half of the total), fetched on demand,
 * and waited for a few seconds. A fetch that outlasts the wait is not subscribed to either: the chat is asked to
 * send the link again, which then finds the timetable fetched at no cost. A fetch queued already is waited for
 * too, at the cost of one of the chat's own first requests (not of the total: nothing more is asked).
 *
 * The wait holds only its own chat: the bot answers each chat in a lane of its own (chat-lanes.ts), so another
 * chat's commands are answered meanwhile.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RateLimitedError } from '../../lib/errors.ts';
import type { FeedStore } from '../../store/feed-store.ts';
import type { GroupDirectory } from '../../store/group-directory.ts';
import type { KnownEmployees } from '../../store/known-employees.ts';
import type { SourceRegistry } from '../../store/registry.ts';
import { type SourceKey, sourceOf } from '../../timetable/source.ts';

/** What the check found. */
export type SourceCheck =
  | { kind: 'known' }
  | { kind: 'not-found' }
  /** Over the chat's or everybody's first-request limit: nothing was asked. */
  | { kind: 'limited'; retryAfterMs: number }
  /** Asked, but the university has not answered within the wait. */
  | { kind: 'not-ready' };

/** Checks a public source for a chat. */
export type CheckSource = (source: SourceKey, chatId: string) => Promise<SourceCheck>;

/** What the check reads and asks. */
export interface SourceCheckDeps {
  readonly registry: Pick<SourceRegistry, 'missingReason' | 'isActive'>;
  readonly feeds: Pick<FeedStore, 'exists'>;
  readonly directory: Pick<GroupDirectory, 'has'>;
  readonly knownEmployees: Pick<KnownEmployees, 'has'>;
  /**
   * Counts one first request of `client` (`tg:<chat id>`) against the first-request limits, or throws
   * RateLimitedError; `likelyReal` as the feed routes pass it.
   */
  admit(client: string, likelyReal: boolean): Promise<void>;
  /** Counts a wait for a fetch queued already against `client`'s own first-request allowance, or throws so. */
  admitWait(client: string): Promise<void>;
  /** Whether a refresh of the source is queued already (it then costs nothing more). */
  refreshPending(source: SourceKey): Promise<boolean>;
  /** Queues a refresh on demand of the source. */
  fetch(source: SourceKey): Promise<void>;
}

/** How long `/start` waits for a first fetch by default: the feed routes' wait. */
export const CHECK_WAIT_MS = 10_000;
const FIRST_POLL_MS = 50;
const MAX_POLL_MS = 250;

/**
 * The client key of a chat in the first-request limits: `tg:` (a MAX dialog's `mx:`) can begin no address, so it
 * is nobody else's.
 */
export function chatClient(chatId: string, messenger: 'tg' | 'mx' = 'tg'): string {
  return `${messenger}:${chatId}`;
}

/** A {@link CheckSource} over `deps`; `waitMs` bounds the wait for a first fetch; `messenger` names the chats'. */
export function sourceChecker(
  deps: SourceCheckDeps,
  waitMs = CHECK_WAIT_MS,
  messenger: 'tg' | 'mx' = 'tg',
): CheckSource {
  const clientOf = (chatId: string) => chatClient(chatId, messenger);
  return async (source, chatId) => {
    if ((await deps.registry.missingReason(source)) !== undefined) return { kind: 'not-found' };
    if ((await deps.feeds.exists(source)) || (await deps.registry.isActive(source))) return { kind: 'known' };
    const pending = await deps.refreshPending(source);
    try {
      // A fetch queued already costs the university nothing more, but the wait for it is still the chat's: it
      // counts against the chat's own allowance, so that one chat cannot keep many waits going.
      if (pending) await deps.admitWait(clientOf(chatId));
      else await deps.admit(clientOf(chatId), await likelyReal(deps, source));
    } catch (error) {
      if (error instanceof RateLimitedError) return { kind: 'limited', retryAfterMs: error.retryAfterMs };
      throw error;
    }
    if (!pending) await deps.fetch(source);
    return waitForAnswer(deps, source, waitMs);
  };
}

/** Whether the university has vouched for the id (the group directory, a teacher it named). */
async function likelyReal(deps: SourceCheckDeps, source: SourceKey): Promise<boolean> {
  const { kind, id } = sourceOf(source);
  if (kind === 'group') return deps.directory.has(Number(id));
  if (kind === 'employee') return deps.knownEmployees.has(Number(id));
  return true;
}

/** Polls until the feed is stored or the university said it does not know the id, at most `waitMs`. */
async function waitForAnswer(deps: SourceCheckDeps, source: SourceKey, waitMs: number): Promise<SourceCheck> {
  const deadline = performance.now() + waitMs;
  let delay = FIRST_POLL_MS;
  for (;;) {
    if ((await deps.registry.missingReason(source)) !== undefined) return { kind: 'not-found' };
    if (await deps.feeds.exists(source)) return { kind: 'known' };
    const left = deadline - performance.now();
    if (left <= 0) return { kind: 'not-ready' };
    await sleep(Math.min(delay, left));
    delay = Math.min(delay * 2, MAX_POLL_MS);
  }
}
