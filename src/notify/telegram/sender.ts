/**
 * Sends one HTML message to one chat through the Bot API (grammY's `Api`, pointed at `TELEGRAM_API_ROOT`) and
 * says what the answer means for the caller: sent, the chat is gone (blocked the bot, deleted, never existed),
 * rate-limited for `retry_after`, or failed (a refusal of the request itself is permanent; a server error or the
 * network is not). Never throws for an API answer, and never puts the token (it is in the request URL) in a reason.
 */
import { Api, GrammyError, HttpError } from 'grammy';
import { proxyClientOptions } from './proxy-fetch.ts';

/** What one send came to. */
export type SendOutcome =
  | { kind: 'sent'; messageId: number }
  | { kind: 'blocked'; reason: string }
  | { kind: 'rate-limited'; retryAfterMs: number }
  /** `unauthorized`: Telegram refuses the bot itself (a revoked or wrong token), not this message. */
  | { kind: 'failed'; permanent: boolean; reason: string; unauthorized?: true };

/** How long one sendMessage may take before it counts as a network failure (retried). */
export const SEND_TIMEOUT_SECONDS = 15;

/** The part of grammY's Api a sender uses (tests may give a recording one). */
export type SendApi = Pick<Api, 'sendMessage' | 'getMe'>;

type GrammySignal = Parameters<SendApi['sendMessage']>[3];

/** 400 descriptions that mean the chat cannot be written to (it is treated as a chat that blocked the bot). */
const GONE_400 = /chat not found|user not found|peer_id_invalid|chat_id is empty|group chat was deactivated/i;

/** What a Bot API error answer means. */
export function outcomeOfError(error: unknown, token: string): SendOutcome {
  if (error instanceof GrammyError) {
    const code = error.error_code;
    const reason = redact(`${code} ${error.description}`, token);
    if (code === 429) {
      const seconds = error.parameters.retry_after;
      return { kind: 'rate-limited', retryAfterMs: Math.max(1, seconds ?? 1) * 1000 };
    }
    if (code === 403 || (code === 400 && GONE_400.test(error.description))) return { kind: 'blocked', reason };
    // 401: the token is revoked or wrong; 404: no bot answers at that path (a mistyped token or API root).
    if (code === 401 || code === 404) return { kind: 'failed', permanent: false, reason, unauthorized: true };
    // 400: our request is wrong (unparsable HTML, too long): sending it again cannot help.
    if (code === 400) return { kind: 'failed', permanent: true, reason };
    return { kind: 'failed', permanent: false, reason };
  }
  if (error instanceof HttpError) return { kind: 'failed', permanent: false, reason: redact(error.message, token) };
  const message = error instanceof Error ? error.message : String(error);
  return { kind: 'failed', permanent: false, reason: redact(message, token) };
}

function redact(text: string, token: string): string {
  return token === '' ? text : text.split(token).join('<token>');
}

/** Sends messages as one bot. */
export class TelegramSender implements ReplySender {
  private readonly api: SendApi;
  private readonly token: string;

  constructor(api: SendApi, token: string) {
    this.api = api;
    this.token = token;
  }

  /** Sends `html` (Telegram HTML, already escaped) to `chatId`, without a link preview. */
  async send(chatId: string, html: string, signal?: AbortSignal): Promise<SendOutcome> {
    try {
      const message = await this.api.sendMessage(
        chatId,
        html,
        { parse_mode: 'HTML', link_preview_options: { is_disabled: true } },
        // grammY types its signal with the abort-controller shim's class; Node's is the same at run time.
        signal as GrammySignal,
      );
      return { kind: 'sent', messageId: message.message_id };
    } catch (error) {
      return outcomeOfError(error, this.token);
    }
  }

  /**
   * Asks Telegram who the bot is (`getMe`), through the same client (API root, proxy, timeout) as the messages:
   * whether it takes the token now, without writing to anybody. `ok`, or what the error means, as for a send.
   */
  async probe(signal?: AbortSignal): Promise<{ kind: 'ok' } | Exclude<SendOutcome, { kind: 'sent' }>> {
    try {
      await this.api.getMe(signal as GrammySignal);
      return { kind: 'ok' };
    } catch (error) {
      const outcome = outcomeOfError(error, this.token);
      return outcome.kind === 'sent' ? { kind: 'ok' } : outcome;
    }
  }

  /** Sends plain `text` (no parse mode: names may hold `<` or `_`) with `buttons` under it, without a preview. */
  async sendPlain(chatId: string, text: string, buttons?: Buttons, signal?: AbortSignal): Promise<SendOutcome> {
    try {
      const message = await this.api.sendMessage(
        chatId,
        text,
        {
          link_preview_options: { is_disabled: true },
          ...(buttons === undefined ? {} : { reply_markup: { inline_keyboard: buttons } }),
        },
        signal as GrammySignal,
      );
      return { kind: 'sent', messageId: message.message_id };
    } catch (error) {
      return outcomeOfError(error, this.token);
    }
  }
}

/** Callback buttons under a message, row by row. */
export type Buttons = { text: string; callback_data: string }[][];

/** A sender that can also send plain text with buttons (the bot's replies). */
export interface ReplySender {
  sendPlain(chatId: string, text: string, buttons?: Buttons, signal?: AbortSignal): Promise<SendOutcome>;
}

/**
 * A sender for the bot `token` at `apiRoot` (`https://api.telegram.org`, or a fake in tests), through `proxy`
 * when one is given (`TELEGRAM_PROXY`); `timeoutSeconds` shortens {@link SEND_TIMEOUT_SECONDS} (tests).
 */
export function createTelegramSender(options: {
  token: string;
  apiRoot: string;
  proxy?: string | undefined;
  timeoutSeconds?: number;
}): TelegramSender {
  const api = new Api(options.token, {
    apiRoot: options.apiRoot.replace(/\/+$/, ''),
    timeoutSeconds: options.timeoutSeconds ?? SEND_TIMEOUT_SECONDS,
    ...proxyClientOptions(options.proxy),
  });
  return new TelegramSender(api, options.token);
}
