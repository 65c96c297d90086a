/**
 * The SMTP relay mails go through: nodemailer's pooled SMTP transport at `SMTP_URL` (`smtp://` upgrades with
 * STARTTLS when the relay offers it, `smtps://` is TLS from the start; `user:pass@` logs in), hidden behind
 * {@link MailTransport} so that the rest of the code never sees nodemailer's types.
 *
 * nodemailer's waits are minutes long by default (2 min to connect, 10 min of a silent socket): a relay that hangs
 * would hold a worker's slot that long. They are 15 s to connect and to be greeted and 60 s of silence here, and a
 * whole send is given up after {@link SEND_TIMEOUT_MS} (then retried). Query parameters of `SMTP_URL` still
 * override them (`?requireTLS=true`, `?tls.rejectUnauthorized=false` for a relay on loopback with its own cert).
 * A mail whose connection dies mid-send is requeued by the pool, so a rare repeat is possible; the outbox
 * (one delivery record per mail) keeps it to that.
 */
import { createTransport } from 'nodemailer';
import type { ChannelOutcome } from '../channel.ts';
import { mailOutcome } from './outcome.ts';

/** The longest one send may take, the pool's queue included. */
export const SEND_TIMEOUT_MS = 45_000;

/** One mail to one recipient. */
export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** Our own `Message-ID`, with its angle brackets: the same on every attempt of one mail. */
  messageId: string;
  date: Date;
  /** The one-click unsubscribe URL (`List-Unsubscribe`, RFC 8058), for mails sent to subscribers. */
  unsubscribeUrl?: string | undefined;
}

/** What sends mails. */
export interface MailTransport {
  /** Sends one mail; never throws for what the relay answered. */
  send(mail: OutgoingMail, signal?: AbortSignal): Promise<ChannelOutcome>;
  /** Closes the pool's connections. */
  close(): void;
}

/** Settings of the transport. */
export interface MailTransportSettings {
  smtpUrl: string;
  mailFrom: string;
}

/** The pooled SMTP transport of `SMTP_URL`, sending from `MAIL_FROM`. */
export function createMailTransport(settings: MailTransportSettings): MailTransport {
  const transport = createTransport({
    url: settings.smtpUrl,
    pool: true,
    maxConnections: 2,
    connectionTimeout: 15_000,
    greetingTimeout: 15_000,
    socketTimeout: 60_000,
    // Mails are built from our own text: nothing may make nodemailer read a file or fetch a URL.
    disableFileAccess: true,
    disableUrlAccess: true,
    // Its logger would print envelopes (addresses); ours logs outcomes only.
    logger: false,
  });
  return {
    send: async (mail, signal) => {
      const deadline = AbortSignal.timeout(SEND_TIMEOUT_MS);
      try {
        await transport.sendMail({
          from: settings.mailFrom,
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
          html: mail.html,
          messageId: mail.messageId,
          date: mail.date,
          ...(mail.unsubscribeUrl === undefined
            ? {}
            : {
                list: { unsubscribe: { url: mail.unsubscribeUrl } },
                // In `headers`, not `list`: `list` would make a URL of the value (research on nodemailer's output).
                headers: { 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
              }),
          signal: signal === undefined ? deadline : AbortSignal.any([signal, deadline]),
        });
        return { kind: 'sent', messageId: mail.messageId };
      } catch (error) {
        return mailOutcome(error);
      }
    },
    close: () => transport.close(),
  };
}
