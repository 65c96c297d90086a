/** Injected failures of the fake Bot API, answered as Telegram words them. */

/**
 * What a fault answers: `429` Too Many Requests with `parameters.retry_after`; `403` the bot was blocked (this
 * request only: {@link FakeTelegram.blockChat} blocks for good); `400` a refused request; `409` a conflict;
 * `500` an internal error; `reset` drops the connection without an answer; `stall` holds the request without an
 * answer until `release()` (then it is served normally, unless its client has gone meanwhile).
 */
export type TelegramFaultKind = '429' | '403' | '400' | '409' | '500' | 'reset' | 'stall';

/** One injection rule; rules are tried in the order they were added. */
export interface TelegramFault {
  /** The Bot API method (`sendMessage`, `getUpdates`, …), case-insensitive. */
  method: string;
  kind: TelegramFaultKind;
  /** How many requests fail before the rule is spent; default 1 (`Infinity` for every one). */
  times?: number;
  /** Seconds in a 429's `retry_after` (and `Retry-After`); default 1. */
  retryAfter?: number;
  /** Only requests to this chat (`chat_id`); default any. */
  chatId?: number;
  /** The `description` instead of the default one of the kind. */
  description?: string;
}

/** A Bot API error answer. */
export interface TelegramErrorReply {
  status: number;
  description: string;
  retryAfter?: number;
}

const DEFAULTS: Readonly<Record<'400' | '403' | '409' | '500', string>> = {
  '400': 'Bad Request: injected fault',
  '403': 'Forbidden: bot was blocked by the user',
  '409': 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
  '500': 'Internal Server Error',
};

/** The error answer of a fault kind (`reset` and `stall` have none). */
export function faultReply(rule: TelegramFault): TelegramErrorReply | undefined {
  if (rule.kind === 'reset' || rule.kind === 'stall') return undefined;
  if (rule.kind === '429') {
    const retryAfter = rule.retryAfter ?? 1;
    return { status: 429, description: rule.description ?? `Too Many Requests: retry after ${retryAfter}`, retryAfter };
  }
  return { status: Number(rule.kind), description: rule.description ?? DEFAULTS[rule.kind] };
}

/** The injected rules. */
export class TelegramFaults {
  private rules: { rule: TelegramFault; left: number }[] = [];

  add(rule: TelegramFault): void {
    const times = rule.times ?? 1;
    if (!(times > 0)) throw new RangeError('fault times must be positive');
    this.rules.push({ rule: { ...rule, method: rule.method.toLowerCase() }, left: times });
  }

  clear(): void {
    this.rules = [];
  }

  /** The rule a request of `method` (to `chatId`) meets, spending one of its `times`; undefined if none. */
  decide(method: string, chatId: number | undefined): TelegramFault | undefined {
    const lower = method.toLowerCase();
    for (const entry of this.rules) {
      if (entry.left <= 0 || entry.rule.method !== lower) continue;
      if (entry.rule.chatId !== undefined && entry.rule.chatId !== chatId) continue;
      entry.left -= 1;
      return entry.rule;
    }
    return undefined;
  }
}
