/** Injected failures of the fake MAX Bot API, answered as MAX words its errors (`{code, message}`). */

/**
 * What a fault answers: `429` too many requests (with `Retry-After` unless `retryAfter` is 0), `500` and `503`
 * server errors, `403` a refused dialog (this request only: `userStops` refuses for good), `400` a request MAX
 * does not take (`proto.payload`, as for a press's `callback_id` it no longer knows), `reset` drops the
 * connection without an answer, `stall` holds the request without an answer until `release()` (then it is served
 * normally, unless its client has gone meanwhile).
 */
export type MaxFaultKind = '400' | '429' | '403' | '500' | '503' | 'reset' | 'stall';

/** One injection rule; rules are tried in the order they were added. */
export interface MaxFault {
  /** The path without its slash (`messages`, `updates`, `me`, `answers`, `subscriptions`). */
  path: string;
  kind: MaxFaultKind;
  /** How many requests fail before the rule is spent; default 1 (`Infinity` for every one). */
  times?: number;
  /** Seconds in a 429's `Retry-After`; default 1; 0 sends none. */
  retryAfter?: number;
  /** Only requests to this dialog (`chat_id`); default any. */
  chatId?: string;
}

/** An error answer of MAX. */
export interface MaxErrorReply {
  status: number;
  code: string;
  message: string;
  retryAfter?: number;
}

/**
 * The 429's body. No public sample of it was found (dev.max.ru lists the status only): the code is assumed, in
 * the words of MAX's other codes, and so is the `Retry-After` header; the client must do without either.
 */
export function tooManyRequests(retryAfter: number | undefined): MaxErrorReply {
  return {
    status: 429,
    code: 'too.many.requests',
    message: 'Too many requests',
    ...(retryAfter === undefined || retryAfter === 0 ? {} : { retryAfter }),
  };
}

/** The error answer of a fault kind (`reset` and `stall` have none). */
export function faultReply(rule: MaxFault): MaxErrorReply | undefined {
  switch (rule.kind) {
    case 'reset':
    case 'stall':
      return undefined;
    case '429':
      return tooManyRequests(rule.retryAfter ?? 1);
    case '400':
      return { status: 400, code: 'proto.payload', message: 'Invalid callback_id' };
    case '403':
      return { status: 403, code: 'chat.denied', message: 'Key: error.dialog.suspended, args: [0,].' };
    case '500':
      return { status: 500, code: 'internal.error', message: 'Internal server error' };
    case '503':
      return { status: 503, code: 'service.unavailable', message: 'Service unavailable' };
  }
}

/** The injected rules. */
export class MaxFaults {
  private rules: { rule: MaxFault; left: number }[] = [];

  add(rule: MaxFault): void {
    const times = rule.times ?? 1;
    if (!(times > 0)) throw new RangeError('fault times must be positive');
    this.rules.push({ rule, left: times });
  }

  clear(): void {
    this.rules = [];
  }

  /** The rule a request of `path` (to `chatId`) meets, spending one of its `times`; undefined if none. */
  decide(path: string, chatId: string | undefined): MaxFault | undefined {
    for (const entry of this.rules) {
      if (entry.left <= 0 || entry.rule.path !== path) continue;
      if (entry.rule.chatId !== undefined && entry.rule.chatId !== chatId) continue;
      entry.left -= 1;
      return entry.rule;
    }
    return undefined;
  }
}
