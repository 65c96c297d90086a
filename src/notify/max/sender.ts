/**
 * Sends one message to one MAX dialog and says what MAX's answer means, in the channel core's words
 * (notify/channel.ts): sent; the dialog is gone (`403 chat.denied`: the person stopped the bot or the dialog is
 * suspended; `404 chat.not.found`: no such dialog any more); rate-limited for the 429's wait; MAX refuses *us*
 * (`401 verify.token`: the token was revoked; a 404 or 405 that is not a dialog's: `MAX_API_ROOT` is not the API);
 * failed for good (any other 4xx: our request is wrong, sending it again cannot help); failed for now (5xx, no
 * answer). Never throws for what MAX answered, and the token is never in a reason.
 */
import type { ChannelOutcome } from '../channel.ts';
import { MAX_TEXT_LENGTH, type MaxButton, type MaxClient } from './client.ts';
import { MaxApiError, MaxNetworkError } from './errors.ts';

/** The refusals that mean a dialog is gone for good. */
const GONE = new Set(['403 chat.denied', '404 chat.not.found']);

/** What a failed call means for the channel core. */
export function outcomeOfError(error: unknown): ChannelOutcome {
  if (error instanceof MaxApiError) {
    const reason = `${error.status} ${error.code}: ${error.message.replace(/^MAX answered \d+ [^:]*: /, '')}`;
    if (error.status === 429) return { kind: 'rate-limited', retryAfterMs: error.retryAfterMs ?? 1_000 };
    if (GONE.has(`${error.status} ${error.code}`)) return { kind: 'gone', reason };
    if (error.status === 401)
      return { kind: 'misconfigured', reason: `MAX refuses the bot token (MAX_BOT_TOKEN): ${reason}` };
    if (error.status === 404 || error.status === 405)
      return { kind: 'misconfigured', reason: `MAX_API_ROOT does not answer as the MAX Bot API: ${reason}` };
    if (error.status >= 400 && error.status < 500) return { kind: 'failed', permanent: true, reason };
    return { kind: 'failed', permanent: false, reason };
  }
  if (error instanceof MaxNetworkError) return { kind: 'failed', permanent: false, reason: error.message };
  if (error instanceof RangeError) return { kind: 'failed', permanent: true, reason: error.message };
  throw error;
}

/** Sends messages as one bot. */
export class MaxSender {
  private readonly client: Pick<MaxClient, 'send'>;

  constructor(client: Pick<MaxClient, 'send'>) {
    this.client = client;
  }

  /** Sends `html` (MAX's HTML, already escaped, at most 4000 characters) to the dialog `chatId`. */
  async send(chatId: string, html: string, signal?: AbortSignal): Promise<ChannelOutcome> {
    try {
      const { mid } = await this.client.send(chatId, { text: html, format: 'html' }, signal);
      return { kind: 'sent', messageId: mid };
    } catch (error) {
      return outcomeOfError(error);
    }
  }

  /**
   * Sends plain `text` (names may hold `<` or `&`, shown as they are) with callback `buttons` under it; a text
   * over MAX's 4000 characters (the bot cuts its replies to fit, so this is a safety net) goes as several
   * messages split at line ends, the buttons under the last.
   */
  async sendPlain(
    chatId: string,
    text: string,
    buttons?: MaxButton[][],
    signal?: AbortSignal,
  ): Promise<ChannelOutcome> {
    const parts = splitText(text, MAX_TEXT_LENGTH);
    let outcome: ChannelOutcome = { kind: 'failed', permanent: true, reason: 'nothing to send' };
    for (const [index, part] of parts.entries()) {
      try {
        const last = index === parts.length - 1;
        const { mid } = await this.client.send(
          chatId,
          { text: part, ...(last && buttons !== undefined ? { buttons } : {}) },
          signal,
        );
        outcome = { kind: 'sent', messageId: mid };
      } catch (error) {
        return outcomeOfError(error);
      }
    }
    return outcome;
  }
}

/** `text` in pieces of at most `limit` characters, cut at a line's end where there is one. */
export function splitText(text: string, limit: number): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const end = rest.lastIndexOf('\n', limit);
    const at = end > 0 ? end : limit;
    parts.push(rest.slice(0, at));
    rest = rest.slice(end > 0 ? at + 1 : at);
  }
  if (rest !== '' || parts.length === 0) parts.push(rest);
  return parts;
}
