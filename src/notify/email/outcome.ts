/**
 * What a failed send means, from nodemailer's error (pure): the class of the SMTP reply (`permanent`: a 5xx other
 * than 503) and its enhanced status code (RFC 3463, `5.1.1`), the command it answered, or no reply at all (the
 * network). Reasons name the codes and the command, never the server's text: a refusal quotes the recipient's
 * address, which is never logged.
 *
 * Our relay answers every command, `RCPT TO` included, so a refusal may be of the mailbox or of *us*:
 *
 * - A permanent refusal at `RCPT TO` is the mailbox's only when it says so: an enhanced status `5.1.x` (no such
 *   mailbox, a bad address) or `5.2.1` (the mailbox disabled), or a `550`/`551`/`553` that does not say `5.7`. Such
 *   a mailbox is unsubscribed from everything and its address deleted (`gone`); a run of them is the relay's
 *   trouble all the same (channel.ts guards against it).
 * - A `5.7.x` at `RCPT TO` is the relay's policy refusing *us* (Postfix's `554 5.7.1 Relay access denied` when
 *   `SMTP_URL` lacks its login or the account was suspended, a quota): it would answer every recipient the same.
 *   Like a refused login (`EAUTH`), a refused sender (a 5xx at `MAIL FROM`), a 5xx at the greeting, `EHLO`/`HELO`,
 *   `STARTTLS` or AUTH (our address is not allowed, TLS cannot be had), or a configuration nodemailer cannot use,
 *   it is ours to mend: the channel is disabled with the reason and nothing is dropped (`misconfigured`).
 * - Another permanent refusal at `RCPT TO` (`552 5.2.2` a full mailbox, `554 5.4.x` a domain that cannot be
 *   routed) drops this mail only, and the mailbox stays.
 * - A 4xx at `RCPT TO` (greylisting, a full mailbox, the recipient's domain busy) concerns that mailbox alone: the
 *   mail is retried with the job's backoff (`failed`), and the other mails go on. Pausing the whole queue for one
 *   recipient's greylisting would hold everybody's mail for it.
 * - A 421, or a 4xx before any recipient (at `MAIL FROM`, the greeting, AUTH), is the relay slowing us down: every
 *   mail goes through it, so the queue waits (`rate-limited`), which uses no attempt.
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
  /** The relay's reply as it came (`550 5.1.1 <ivan@…>: …`): read for its codes only, never logged. */
  response?: unknown;
  permanent?: unknown;
}

/** Codes of nodemailer that say our settings are wrong, not that the relay or the network failed. */
const OURS = new Set(['EAUTH', 'ENOAUTH', 'EOAUTH2', 'ECONFIG', 'EREQUIRETLS']);

/** The commands of a session before any mail: a permanent refusal there refuses every mail of ours. */
const SESSION = /^(CONN|EHLO|HELO|LHLO|STARTTLS|AUTH\b)/;
/** Basic codes that name the mailbox (RFC 5321: unavailable, not local, name not allowed). */
const MAILBOX_CODES = new Set([550, 551, 553]);

/** The outcome of a send that threw `error`. */
export function mailOutcome(error: unknown): Exclude<ChannelOutcome, { kind: 'sent' }> {
  const failure = (typeof error === 'object' && error !== null ? error : {}) as SmtpFailure;
  const code = typeof failure.code === 'string' ? failure.code : 'unknown';
  const command = typeof failure.command === 'string' ? failure.command.toUpperCase() : undefined;
  const status = typeof failure.responseCode === 'number' ? failure.responseCode : undefined;
  const enhanced = enhancedStatus(failure.response);
  const reason = [code, status, enhanced, command === undefined ? undefined : `at ${command}`]
    .filter((part) => part !== undefined)
    .join(' ');
  if (OURS.has(code)) return { kind: 'misconfigured', reason: `the relay refused our settings: ${reason}` };
  // Refused by nodemailer before the relay was asked (an envelope it cannot send, a mail over the size the relay
  // announced): the same mail would be refused again.
  if (status === undefined) return { kind: 'failed', permanent: code === 'EENVELOPE' || code === 'EMESSAGE', reason };
  const permanent = failure.permanent === true;
  if (command?.startsWith('RCPT') === true) return recipientOutcome(status, enhanced, permanent, reason);
  if (status === 421) return { kind: 'rate-limited', retryAfterMs: RELAY_BUSY_MS };
  if (permanent && command?.startsWith('MAIL') === true)
    return { kind: 'misconfigured', reason: `the relay refused our sender (MAIL_FROM): ${reason}` };
  if (permanent && command !== undefined && SESSION.test(command))
    return { kind: 'misconfigured', reason: `the relay refused our session: ${reason}` };
  const afterRecipients = command?.startsWith('DATA') === true || command === 'MESSAGE';
  if (status >= 400 && status < 500 && !afterRecipients) return { kind: 'rate-limited', retryAfterMs: RELAY_BUSY_MS };
  return { kind: 'failed', permanent, reason };
}

/** What the relay's answer to `RCPT TO` means (see the module comment). */
function recipientOutcome(
  status: number,
  enhanced: string | undefined,
  permanent: boolean,
  reason: string,
): Exclude<ChannelOutcome, { kind: 'sent' }> {
  if (status === 421) return { kind: 'rate-limited', retryAfterMs: RELAY_BUSY_MS };
  if (!permanent) return { kind: 'failed', permanent: false, reason };
  if (enhanced?.startsWith('5.7.') === true)
    return { kind: 'misconfigured', reason: `the relay refused to take mail from us: ${reason}` };
  const mailbox = enhanced?.startsWith('5.1.') === true || enhanced === '5.2.1' || MAILBOX_CODES.has(status);
  if (mailbox) return { kind: 'gone', reason: `the mailbox was refused for good: ${reason}` };
  return { kind: 'failed', permanent: true, reason };
}

/** The enhanced status code (RFC 3463) that opens the reply's text (`550 5.1.1 …`), if any. */
function enhancedStatus(response: unknown): string | undefined {
  if (typeof response !== 'string') return undefined;
  return /^\d{3}[ -]([245]\.\d{1,3}\.\d{1,3})(?!\d)/.exec(response)?.[1];
}
