/**
 * E-mail as a channel of the channel core (notify/channel.ts): the subscribers of a source are its confirmed
 * mailboxes (store/mailboxes.ts), each with its options and its digest choice; an address is a mailbox's id, and
 * the address itself is opened only to send. One recipient per mail, so that the relay's answer is this mailbox's.
 * No pace: a mailbox takes any number of mails, and `MAIL_RATE_LIMIT` paces the queue as a whole.
 *
 * A mail's `Message-ID` is derived from its delivery (and the change set it tells), on `MAIL_FROM`'s domain: a
 * retry sends the same id, so a mail the relay took twice shows once in most mailboxes.
 */
import { createHash } from 'node:crypto';
import type { Config } from '../../config.ts';
import { mailDomain } from '../../lib/mail-address.ts';
import type { Mailboxes } from '../../store/mailboxes.ts';
import type { ChannelAdapter, ChannelMessage, ChannelOutcome } from '../channel.ts';
import { changeMail } from './message.ts';
import { createMailTransport, type MailTransport, type OutgoingMail } from './transport.ts';

/** The path of the unsubscribe page and its one-click POST (http/email-routes.ts). */
export const UNSUBSCRIBE_PATH = '/email/unsubscribe';
/** The path of the confirmation page and its POST. */
export const CONFIRM_PATH = '/email/confirm';

/** What the e-mail channel reads and sends with. */
export interface EmailChannelDeps {
  readonly config: Pick<Config, 'smtpUrl' | 'mailFrom' | 'publicUrl'>;
  readonly mailboxes: Pick<
    Mailboxes,
    'ofSource' | 'hasAny' | 'follows' | 'unsubscribe' | 'addressOf' | 'unsubscribeToken'
  >;
  /** Real time: a mail's `Date`. */
  readonly wallClock: () => number;
}

/** The e-mail channel: the core's adapter, plus any mail (a confirmation) through the same relay. */
export interface EmailChannel extends ChannelAdapter {
  /** Sends one mail through the relay (opened on first use); never throws for what the relay answered. */
  sendMail(mail: OutgoingMail, signal?: AbortSignal): Promise<ChannelOutcome>;
  /** A `Message-ID` on `MAIL_FROM`'s domain for a mail named `name` (the same name, the same id). */
  messageId(name: string): string;
  /** Closes the relay's connections (a worker's shutdown). */
  close(): void;
}

/** Whether e-mail is on: a relay and a sender are set. */
export function emailOn(config: Pick<Config, 'smtpUrl' | 'mailFrom'>): boolean {
  return config.smtpUrl !== undefined && config.mailFrom !== undefined;
}

/** The absolute URL of a mail's link to one of our pages taking a token. */
export function tokenUrl(publicUrl: string, path: string, token: string): string {
  return `${publicUrl}${path}?token=${encodeURIComponent(token)}`;
}

/** Whether a channel of the list is the e-mail channel (its queue's processor sends confirmations through it). */
export function isEmailChannel(adapter: ChannelAdapter): adapter is EmailChannel {
  return adapter.name === 'email' && 'sendMail' in adapter;
}

/** Builds the channel; its relay (`SMTP_URL`) is opened by the first mail: a process that sends none opens none. */
export function emailChannel(deps: EmailChannelDeps): EmailChannel {
  const { config, mailboxes } = deps;
  let relay: MailTransport | undefined;
  const domain = mailDomain(config.mailFrom ?? 'timetable@localhost');
  const relayOf = (): MailTransport => {
    if (config.smtpUrl === undefined || config.mailFrom === undefined) throw new Error('SMTP_URL or MAIL_FROM unset');
    relay ??= createMailTransport({ smtpUrl: config.smtpUrl, mailFrom: config.mailFrom });
    return relay;
  };
  const messageId = (name: string) =>
    `<${createHash('sha256').update(name).digest('base64url').slice(0, 32)}@${domain}>`;
  const sendMail = (mail: OutgoingMail, signal?: AbortSignal) => relayOf().send(mail, signal);
  return {
    name: 'email',
    on: emailOn(config),
    paceMs: 0,
    ofSource: async (source) =>
      (await mailboxes.ofSource(source)).map(({ mailboxId, options, digest }) => ({
        address: mailboxId,
        options,
        ...(digest ? { digest } : {}),
      })),
    hasAny: (source) => mailboxes.hasAny(source),
    follows: (address, source) => mailboxes.follows(address, source),
    unsubscribe: (address) => mailboxes.unsubscribe(address),
    send: async (message, signal) => {
      const to = await mailboxes.addressOf(message.address);
      if (to === undefined) return { kind: 'gone', reason: 'the mailbox was deleted' };
      const token = await mailboxes.unsubscribeToken(message.address, message.source);
      if (token === undefined)
        return { kind: 'failed', permanent: true, reason: 'the mailbox no longer follows the source' };
      return sendMail(changeMailOf(message, to, token), signal);
    },
    sendMail,
    messageId,
    close: () => {
      relay?.close();
      relay = undefined;
    },
  };

  function changeMailOf(message: ChannelMessage, to: string, token: string): OutgoingMail {
    const unsubscribeUrl = tokenUrl(config.publicUrl, UNSUBSCRIBE_PATH, token);
    const content = changeMail({
      told: message.told,
      pageUrl: message.pageUrl,
      unsubscribeUrl,
      subgroup: message.subgroup,
    });
    return {
      to,
      ...content,
      // A delivery of held sets keeps one id for every night: the change set told tells the mails apart.
      messageId: messageId(`${message.deliveryId}|${message.told.stamp}`),
      date: new Date(deps.wallClock()),
      unsubscribeUrl,
    };
  }
}
