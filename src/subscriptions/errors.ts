/** Typed failures of the subscription use cases: signing up, replacing a credential, connecting Google. */

import { RateLimitedError } from '../lib/errors.ts';

/** The university rejected the credential a person offered. */
export class CredentialRejectedError extends Error {
  override name = 'CredentialRejectedError';

  constructor(options?: ErrorOptions) {
    super('the university rejected this credential', options);
  }
}

/** The university could not be asked whose a credential is (it failed, or did not answer); `cause` says how. */
export class CredentialCheckError extends Error {
  override name = 'CredentialCheckError';

  constructor(cause: Error) {
    super(`could not verify the credential: ${cause.message}`, { cause });
  }
}

/** Why a replacement credential was refused; logged for operators, never told the caller apart. */
export type RefusalReason = 'rejected' | 'other-user' | 'unverifiable';

/**
 * A credential that may not replace a subscription's: the university rejected it (`rejected`), it belongs to
 * another university user (`other-user`), or the university does not say whose it is and it is not the
 * subscription's own (`unverifiable`, some deployments send no user id). One message for all three: a holder
 * of a feed token must not learn from a replacement whether someone else's credential is valid.
 */
export class CredentialRefusedError extends Error {
  override name = 'CredentialRefusedError';
  readonly reason: RefusalReason;

  constructor(reason: RefusalReason, options?: ErrorOptions) {
    super(
      "this credential cannot replace the subscription's: the university rejected it, or it does not belong " +
        "to the subscription's university user",
      options,
    );
    this.reason = reason;
  }
}

/** The personal source of a Google connection has no subscription (any more). */
export class UnknownSourceError extends Error {
  override name = 'UnknownSourceError';
}

/** A calendar of the account, as a person picks one. */
export interface CalendarChoice {
  url: string;
  displayName: string;
}

/**
 * The CalDAV server makes no calendar for us (MKCALENDAR refused, as some providers do): the person picks one
 * of the account's own event calendars (`calendars`, maybe empty) and connects again with its URL.
 */
export class CalDavNoCalendarError extends Error {
  override name = 'CalDavNoCalendarError';
  readonly calendars: readonly CalendarChoice[];

  constructor(calendars: readonly CalendarChoice[], options?: ErrorOptions) {
    super('the server does not let us make a calendar: pick one of the account', options);
    this.calendars = calendars;
  }
}

/** Why a CalDAV URL is refused before any request: not a URL, not https, a login inside it. */
export type CalDavUrlProblem = 'not-url' | 'not-https' | 'credentials';

/** A server or calendar URL that is not asked at all (`field` names the form or body field). */
export class CalDavUrlError extends Error {
  override name = 'CalDavUrlError';
  readonly field: string;
  readonly problem: CalDavUrlProblem;

  constructor(field: string, problem: CalDavUrlProblem) {
    super(
      `${field}: ${problem === 'not-url' ? 'not a URL' : problem === 'not-https' ? 'must be an https:// URL' : 'must not hold a login or password'}`,
    );
    this.field = field;
    this.problem = problem;
  }
}

/**
 * One address has been sent as many confirmation mails as `MAIL_CONFIRMATIONS_PER_ADDRESS` allows, whoever asked:
 * a form must not become a way to flood someone's mailbox.
 */
export class ConfirmationsLimitError extends RateLimitedError {
  override name = 'ConfirmationsLimitError';

  constructor(retryAfterMs: number) {
    super(retryAfterMs, 'this address was sent as many confirmation mails as it may get for now');
  }
}
