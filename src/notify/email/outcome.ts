/**
 * What a failed send means, from nodemailer's error (pure): the class of the SMTP reply (`permanent`: a 5xx other
 * than 503), the command it answered, or no reply at all (the network). Reasons name the code and the command,
 * never the server's text: a refusal quotes the recipient's address, which is never logged.
 *
 * - A permanent refusal at `RCPT TO` is the address's: the mailbox does not exist or refuses us for good. It is
 *   unsubscribed from everything and its address deleted (`gone`).
 * - A 4xx at `RCPT TO` (greylisting, a full mailbox, the recipient's domain busy) concerns that mailbox alone: the
 *   mail is retried with the job's backoff (`failed`), and the other mails go on. Pausing the whole queue for one
 *   recipient's greylisting would hold everybody's mail for it.
 * - A 421, or a 4xx before any recipient (at `MAIL FROM`, the greeting, AUTH), is the relay slowing us down: every
 *   mail goes through it, so the queue waits (`rate-limited`), which uses no attempt.
 * - The relay refusing our login (`EAUTH`) or our sender (a 5xx at `MAIL FROM`), or a configuration nodemailer
 *   cannot use, is ours to mend: the channel is disabled with the reason and nothing is dropped (`misconfigured`).
 * - Another permanent refusal (a 5xx after `DATA`: the content, a spam filter) drops this mail only.
 * - No reply (connection refused, a timeout, TLS failing, the send aborted) is retried with backoff; a mail that
 *   nodemailer itself refuses to send (a malformed envelope, over the relay's size) is dropped.
 */
import type { ChannelOutcome } from '../channel.ts';

/** How long the queue waits when the relay itself slows us down and says not for how long. */
export const RELAY_BUSY_MS = 60_000;

/** The fields of nodemailer's errors read here (errors.d.ts `NodemailerError`). */
interface SmtpFailure {
  code?: unknown;
  command?: unknown;
  responseCode?: unknown;
  permanent?: unknown;
}

/** Codes of nodemailer that say our settings are wrong, not that the relay or the network failed. */
const OURS = new Set(['EAUTH', 'ENOAUTH', 'EOAUTH2', 'ECONFIG', 'EREQUIRETLS']);

/** The outcome of a send that threw `error`. */
export function mailOutcome(error: unknown): Exclude<ChannelOutcome, { kind: 'sent' }> {
  const failure = (typeof error === 'object' && error !== null ? error : {}) as SmtpFailure;
  const code = typeof failure.code === 'string' ? failure.code : 'unknown';
  const command = typeof failure.command === 'string' ? failure.command.toUpperCase() : undefined;
  const status = typeof failure.responseCode === 'number' ? failure.responseCode : undefined;
  const reason = [code, status, command === undefined ? undefined : `at ${command}`]
    .filter((part) => part !== undefined)
    .join(' ');
  if (OURS.has(code)) return { kind: 'misconfigured', reason: `the relay refused our settings: ${reason}` };
  // Refused by nodemailer before the relay was asked (an envelope it cannot send, a mail over the size the relay
  // announced): the same mail would be refused again.
  if (status === undefined) return { kind: 'failed', permanent: code === 'EENVELOPE' || code === 'EMESSAGE', reason };
  const permanent = failure.permanent === true;
  const recipient = command?.startsWith('RCPT') === true;
  if (recipient && permanent) return { kind: 'gone', reason: `the mailbox was refused for good: ${reason}` };
  if (recipient) return { kind: 'failed', permanent: false, reason };
  if (command?.startsWith('MAIL') === true && permanent)
    return { kind: 'misconfigured', reason: `the relay refused our sender (MAIL_FROM): ${reason}` };
  const afterRecipients = command?.startsWith('DATA') === true || command === 'MESSAGE';
  if (status === 421 || (status >= 400 && status < 500 && !afterRecipients))
    return { kind: 'rate-limited', retryAfterMs: RELAY_BUSY_MS };
  return { kind: 'failed', permanent, reason };
}
