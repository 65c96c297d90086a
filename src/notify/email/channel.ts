/**
 * E-mail as a channel of the channel core (notify/channel.ts): the subscribers of a source are its confirmed
 * mailboxes (store/mailboxes.ts), each with its options and its digest choice; an address is a mailbox's id, and
 * the address itself is opened only to send. One recipient per mail, so that the relay's answer is this mailbox's.
 * No pace: a mailbox takes any number of mails, and `MAIL_RATE_LIMIT` paces the queue as a whole.
 *
 * A mail's `Message-ID` is derived from its delivery (and the change set it tells), on `MAIL_FROM`'s domain: a
 * retry sends the same id, so a mail the relay took twice shows once in most mailboxes.
 *
 * A relay that refuses every recipient as unknown (one that takes itself for the recipients' domain, an account
 * cut down to its own domain) would unsubscribe everybody and delete their addresses: a run of more than
 * {@link MAIL_WAVE_REFUSALS} mailboxes refused in a row is taken for the relay's trouble instead
 * (notify/refusal-runs.ts), and disables the channel with nothing deleted.
 */
import { createHash } from 'node:crypto';
import type { Config } from '../../config.ts';
import { mailDomain } from '../../lib/mail-address.ts';
import type { RedisClient } from '../../lib/redis-target.ts';
import type { Logger } from '../../logger.ts';
import type { RedisKeys } from '../../store/keys.ts';
import type { Mailboxes } from '../../store/mailboxes.ts';
import { type ChannelAdapter, type ChannelMessage, type ChannelOutcome, DELIVERY_PREFIX } from '../channel.ts';
import { RefusalRuns } from '../refusal-runs.ts';
import { changeMail } from './message.ts';
import { createMailTransport, type MailTransport, type OutgoingMail, tlsRequirement } from './transport.ts';

/** The path of the unsubscribe page and its one-click POST (http/email-routes.ts). */
export const UNSUBSCRIBE_PATH = '/email/unsubscribe';
/** The path of the confirmation page and its POST. */
export const CONFIRM_PATH = '/email/confirm';
/** Mailboxes refused in a row the channel takes for the people's own; beyond them, the relay's trouble. */
export const MAIL_WAVE_REFUSALS = 5;

/** What the e-mail channel reads and sends with. */
export interface EmailChannelDeps {
  readonly config: Pick<Config, 'smtpUrl' | 'mailFrom' | 'publicUrl' | 'secretKey'>;
  readonly mailboxes: Pick<
    Mailboxes,
    'ofSource' | 'hasAny' | 'follows' | 'unsubscribe' | 'addressOf' | 'unsubscribeToken' | 'forgetSource'
  >;
  /** Where the run of refused mailboxes is counted, over every worker. */
  readonly redis: RedisClient;
  readonly keys: Pick<RedisKeys, 'channelRefusals'>;
  /** Real time: a mail's `Date`. */
  readonly wallClock: () => number;
  /** Warns once when `SMTP_URL` lets a login go without TLS. */
  readonly logger: Pick<Logger, 'warn'>;
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

/**
 * Whether e-mail is on: a relay, a sender, and `SECRET_KEY` (addresses are stored only sealed with it): without
 * one of them the pages offer no form and no worker sends mail.
 */
export function emailOn(config: Pick<Config, 'smtpUrl' | 'mailFrom' | 'secretKey'>): boolean {
  return config.smtpUrl !== undefined && config.mailFrom !== undefined && config.secretKey !== undefined;
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
  let warned = false;
  const domain = mailDomain(config.mailFrom ?? 'timetable@localhost');
  const waves = new RefusalRuns(deps.redis, deps.keys.channelRefusals(DELIVERY_PREFIX.email), {
    limit: MAIL_WAVE_REFUSALS,
    wave: (run, last) =>
      `the relay refused ${run} mailboxes in a row (the last: ${last}): it may be refusing every recipient ` +
      '(SMTP_URL, its account or its domains); nobody is unsubscribed until the relay takes a mail again',
  });
  const relayOf = (): MailTransport => {
    if (config.smtpUrl === undefined || config.mailFrom === undefined) throw new Error('SMTP_URL or MAIL_FROM unset');
    if (!warned && tlsRequirement(config.smtpUrl).refused)
      deps.logger.warn(
        'SMTP_URL turns requireTLS off for a relay on another host: the SMTP login goes in the clear when ' +
          'STARTTLS is not offered or is stripped on the way',
      );
    warned = true;
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
    forgetSource: (source) => mailboxes.forgetSource(source),
    send: async (message, signal) => {
      const to = await mailboxes.addressOf(message.address);
      const token = to === undefined ? undefined : await mailboxes.unsubscribeToken(message.address, message.source);
      // The mailbox left the source (or everything) after the core checked that it follows it: a race, not a
      // refusal. The core asks again whether it follows and, finding it gone, settles the delivery quietly.
      if (to === undefined || token === undefined)
        return { kind: 'failed', permanent: false, reason: 'the mailbox left the source while its mail was made' };
      return waves.judge(await sendMail(changeMailOf(message, to, token), signal));
    },
    probe: async (signal) => {
      // A relay refusing every recipient may well take our login: only a mail it takes shows that it is mended.
      if (await waves.inWave())
        return { kind: 'failed', permanent: false, reason: 'the relay refused a run of mailboxes: a mail must go' };
      return relayOf().verify(signal);
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
