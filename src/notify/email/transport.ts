/**
 * The SMTP relay mails go through: nodemailer's pooled SMTP transport at `SMTP_URL` (`smtp://` upgrades with
 * STARTTLS when the relay offers it, `smtps://` is TLS from the start; `user:pass@` logs in), hidden behind
 * {@link MailTransport} so that the rest of the code never sees nodemailer's types.
 *
 * nodemailer's waits are minutes long by default (2 min to connect, 10 min of a silent socket): a relay that hangs
 * would hold a worker's slot that long. They are 15 s to connect and to be greeted and 60 s of silence here, and a
 * whole send is given up after {@link SEND_TIMEOUT_MS} (then retried). Query parameters of `SMTP_URL` still
 * override them (`?tls.rejectUnauthorized=false` for a relay on loopback with its own cert).
 *
 * `smtp://` upgrades only when the relay offers STARTTLS, and a network that strips the offer would get the
 * password in the clear. So a relay that takes a login and is not on this host must upgrade (`requireTLS`, see
 * {@link tlsRequirement}); `?requireTLS=false` in `SMTP_URL` still turns that off, with a warning.
 * A mail whose connection dies mid-send is requeued by the pool, so a rare repeat is possible; the outbox
 * (one delivery record per mail) keeps it to that.
 */
import { BlockList, isIP } from 'node:net';
import { createTransport } from 'nodemailer';
import { ipv6Groups, isLoopbackName } from '../../lib/internal-address.ts';
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
  /**
   * Asks the relay whether it takes our settings without sending anything (connects, greets, upgrades to TLS and
   * logs in): `sent` when it does, else what its refusal means as {@link send}'s would.
   */
  verify(signal?: AbortSignal): Promise<ChannelOutcome>;
  /** Closes the pool's connections. */
  close(): void;
}

/** Settings of the transport. */
export interface MailTransportSettings {
  smtpUrl: string;
  mailFrom: string;
}

/** Whether the relay must upgrade to TLS, and whether `SMTP_URL` turned that off. */
export interface TlsRequirement {
  /** `smtp://` with a login to a host that is not this one: the password must not go in the clear. */
  needed: boolean;
  /** `SMTP_URL` says `?requireTLS=false` although it is needed (worth a warning). */
  refused: boolean;
}

/** Whether `smtpUrl` (a valid `SMTP_URL`) must require TLS before its login (see the module comment). */
export function tlsRequirement(smtpUrl: string): TlsRequirement {
  const url = new URL(smtpUrl);
  const login = url.username !== '' || url.password !== '';
  const needed = url.protocol === 'smtp:' && login && !isLoopbackHost(url.hostname);
  const asked = url.searchParams.get('requireTLS');
  return { needed, refused: needed && (asked === 'false' || asked === '0') };
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** Whether a URL's hostname is this host: `localhost`, `127.0.0.0/8`, `::1` (or an IPv4-mapped loopback). */
function isLoopbackHost(hostname: string): boolean {
  if (isLoopbackName(hostname)) return true;
  const literal = hostname.replace(/^\[|\]$/g, '');
  if (isIP(literal) === 4) return LOOPBACK.check(literal, 'ipv4');
  const groups = isIP(literal) === 6 ? ipv6Groups(literal) : undefined;
  if (groups === undefined) return false;
  const [a, b, c, d, e, f, g = 0] = groups;
  if (a === 0 && b === 0 && c === 0 && d === 0 && e === 0 && f === 0xffff) return g >> 8 === 127;
  return LOOPBACK.check(groups.map((group) => group.toString(16)).join(':'), 'ipv6');
}

/** The pooled SMTP transport of `SMTP_URL`, sending from `MAIL_FROM`. */
export function createMailTransport(settings: MailTransportSettings): MailTransport {
  const transport = createTransport({
    url: settings.smtpUrl,
    // Options the URL's query names win over these: `?requireTLS=false` turns it off again.
    ...(tlsRequirement(settings.smtpUrl).needed ? { requireTLS: true } : {}),
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
    verify: async (signal) => {
      const deadline = AbortSignal.timeout(SEND_TIMEOUT_MS);
      const stop = signal === undefined ? deadline : AbortSignal.any([signal, deadline]);
      // nodemailer's verify takes no signal: its connection ends by its own timeouts after we stop waiting.
      let abandon: (() => void) | undefined;
      const abandoned = new Promise<never>((_resolve, reject) => {
        abandon = () => reject(Object.assign(new Error('verify aborted'), { code: 'EABORT' }));
        stop.addEventListener('abort', abandon, { once: true });
      });
      try {
        await Promise.race([transport.verify(), abandoned]);
        return { kind: 'sent', messageId: '' };
      } catch (error) {
        return mailOutcome(error);
      } finally {
        if (abandon !== undefined) stop.removeEventListener('abort', abandon);
      }
    },
    close: () => transport.close(),
  };
}
