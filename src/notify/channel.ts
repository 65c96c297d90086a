/**
 * A channel that tells people of changes: a messenger (Telegram, MAX) or e-mail. The channel core (the outbox,
 * the fan-out, the send job that makes each delivery happen once across kill -9, quiet hours, the subgroup and
 * kind filters, pacing, metrics and the disabled-with-reason state) is the same for all of them; a channel is an
 * adapter that knows its subscribers and how to send one message. A further messenger is one more adapter.
 */
import type { ChangeSet, NotifyOptions } from '../timetable/notify-change.ts';
import type { SourceKey } from '../timetable/source.ts';

/** The channels that tell a person (webhooks tell machines, and have their own job). */
export type ChannelName = 'telegram' | 'max' | 'email';

/** Each channel's prefix in delivery ids (`tg:<chat>:<source>:<stamp>`); Telegram's predates the others. */
export const DELIVERY_PREFIX = { telegram: 'tg', max: 'mx', email: 'em' } as const satisfies Record<
  ChannelName,
  string
>;

/** One subscriber of a source on a channel. */
export interface ChannelSubscriber {
  /** The channel's address: a Telegram chat id, a MAX dialog's `chat_id`, a mailbox's id (never the address). */
  address: string;
  /** What it is told of: its subgroup and hidden kinds (a personal timetable's are read from its subscription). */
  options: NotifyOptions;
  /** A daily digest instead of a message per change (e-mail): held until the digest time, like quiet hours. */
  digest?: boolean;
}

/** How one send ended, as the core acts on it. */
export type ChannelOutcome =
  /** Accepted; `messageId` is the channel's id of the message (logged, never shown). */
  | { kind: 'sent'; messageId: string }
  /** The address is gone for good (blocked the bot, no dialog, mailbox refused for good): unsubscribed. */
  | { kind: 'gone'; reason: string }
  /** The channel asks to wait (`Retry-After`, 429, a 4xx greylisting): retried without using an attempt. */
  | { kind: 'rate-limited'; retryAfterMs: number }
  /**
   * The channel refuses *us* (a revoked token, SMTP AUTH refused, the sender refused): the channel is disabled
   * with this reason, admins see it, and nothing is dropped: sends resume when it is mended.
   */
  | { kind: 'misconfigured'; reason: string }
  /** Failed: `permanent` drops this message (retrying cannot help), otherwise retried with backoff. */
  | { kind: 'failed'; permanent: boolean; reason: string };

/** One message to send: one delivery's net change for one address. */
export interface ChannelMessage {
  address: string;
  /** The delivery's id: stable across retries (an e-mail's `Message-ID` derives from it). */
  deliveryId: string;
  source: SourceKey;
  /** What to tell: classes still to come, never empty. */
  told: ChangeSet;
  /** The timetable page the message links to. */
  pageUrl: string;
  /** The subgroup the subscriber follows: its lines need no subgroup mark. */
  subgroup?: number;
}

/** A channel as the core uses it. */
export interface ChannelAdapter {
  readonly name: ChannelName;
  /** Whether the channel is configured in this deployment (a token, an SMTP relay). */
  readonly on: boolean;
  /** The least time between two messages to one address (Telegram 1 s, MAX 0.5 s; 0: no pace). */
  readonly paceMs: number;
  /** The subscribers of a source (confirmed ones only, for e-mail). */
  ofSource(source: SourceKey): Promise<ChannelSubscriber[]>;
  /** Whether a source has any subscriber on this channel. */
  hasAny(source: SourceKey): Promise<boolean>;
  /** Whether `address` still follows `source` (checked just before sending). */
  follows(address: string, source: SourceKey): Promise<boolean>;
  /** Unsubscribes `address` from everything (it is gone); resolves to the sources it followed. */
  unsubscribe(address: string): Promise<SourceKey[]>;
  /**
   * Forgets a source that is no more (a deleted personal timetable): every subscriber leaves it, and one left
   * with nothing is forgotten too (a mailbox with its address). Resolves to how many subscribers left it.
   * Absent: the channel keeps no subscribers of its own.
   */
  forgetSource?(source: SourceKey): Promise<number>;
  /** Sends one message; never throws for what the channel answered (only for bugs). */
  send(message: ChannelMessage, signal?: AbortSignal): Promise<ChannelOutcome>;
  /**
   * Asks the other side whether it takes our credentials now (Telegram `getMe`, MAX `GET /me`, an SMTP login),
   * without telling anybody anything: a channel disabled for its credentials is turned on again as soon as they
   * are mended, even when no message waits. `misconfigured` when they are still refused; `failed` when the other
   * side could not be asked (it stays as it was). Absent: only a successful send turns it on again.
   */
  probe?(signal?: AbortSignal): Promise<ChannelOutcome>;
}
