/**
 * A real SMTP server for tests and benchmarks: the `smtp-server` package over TCP on loopback, on a port of its own, speaking
 * the whole protocol to nodemailer. STARTTLS with its own certificate (testkit/smtp-tls, valid for a century,
 * for tests only), then AUTH PLAIN or LOGIN with one user, which it can be told to refuse; or, `plain`, no
 * STARTTLS at all and AUTH in the clear (a relay that does not offer TLS, or a network that strips the offer).
 * Each recipient's `RCPT TO` can be given scripted answers (451 once, 550 for good), or every recipient refused
 * (`554 5.7.1 Relay access denied`); every mail accepted is recorded with its headers and its text and HTML
 * parts, decoded here by a small MIME reader (no mail parser is installed).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { SMTPServer } from 'smtp-server';

const TLS_DIR = resolve(import.meta.dirname, 'smtp-tls');

/** The user the server takes. */
export const SMTP_USER = 'timetable';
export const SMTP_PASSWORD = 'relay-password-for-tests';

/** One mail the server accepted. */
export interface ReceivedMail {
  /** The envelope's sender and recipients. */
  from: string;
  to: string[];
  /** The headers, names lower-cased, folded lines joined, encoded words decoded. */
  headers: Map<string, string[]>;
  /** The first value of a header. */
  header(name: string): string | undefined;
  subject: string;
  text: string;
  html: string;
  raw: string;
  /** Whether it came over TLS, and the user that logged in. */
  secure: boolean;
  user: string | undefined;
  /** Epoch ms the server took the mail (benchmarks time the drain by it). */
  at: number;
}

/** What one `RCPT TO` of a recipient was answered. */
export interface RecipientAttempt {
  to: string;
  code: number;
}

/** One login the server took or refused, and whether it came over TLS. */
export interface LoginAttempt {
  user: string;
  secure: boolean;
}

/** A running test server. */
export interface TestSmtpServer {
  port: number;
  /** `SMTP_URL` of the server: STARTTLS, the test user, the test certificate taken. */
  url: string;
  /** The same with a wrong password. */
  urlWithPassword(password: string): string;
  mails: ReceivedMail[];
  /** The mails sent to one recipient. */
  mailsTo(address: string): ReceivedMail[];
  /** Every `RCPT TO` with its answer, in order. */
  attempts: RecipientAttempt[];
  /** Every AUTH, in order. */
  logins: LoginAttempt[];
  /** Answers the next `RCPT TO`s of `address` with these codes, one each (then accepts again). */
  script(address: string, ...codes: number[]): void;
  /** Answers every `RCPT TO` of `address` with `code` until told otherwise (`undefined`). */
  refuse(address: string, code: number | undefined): void;
  /** Answers every `RCPT TO` of any address with `code` until told otherwise (`undefined`). */
  refuseEveryone(code: number | undefined): void;
  /** Refuses every login (535) while set. */
  refuseLogins(refused: boolean): void;
  close(): Promise<void>;
}

const WORDS: Record<number, string> = {
  421: '4.3.2 Service shutting down',
  450: '4.2.1 Mailbox busy',
  451: '4.7.1 Greylisted, please try again later',
  452: '4.2.2 Mailbox full',
  550: '5.1.1 No such user here',
  553: '5.1.3 Mailbox name not allowed',
  554: '5.7.1 Relay access denied',
};

/** How the server is set up. */
export interface SmtpServerOptions {
  /** No STARTTLS (not offered, and refused when asked), AUTH in the clear. */
  plain?: boolean;
}

/** Starts a server on a free loopback port. */
export async function startSmtpServer(options: SmtpServerOptions = {}): Promise<TestSmtpServer> {
  const mails: ReceivedMail[] = [];
  const attempts: RecipientAttempt[] = [];
  const logins: LoginAttempt[] = [];
  const scripted = new Map<string, number[]>();
  const refused = new Map<string, number>();
  let everyone: number | undefined;
  let loginsRefused = false;
  const server = new SMTPServer({
    key: readFileSync(resolve(TLS_DIR, 'key.pem')),
    cert: readFileSync(resolve(TLS_DIR, 'cert.pem')),
    authMethods: ['PLAIN', 'LOGIN'],
    ...(options.plain ? { hideSTARTTLS: true, disabledCommands: ['STARTTLS'], allowInsecureAuth: true } : {}),
    logger: false,
    closeTimeout: 200,
    onAuth: (auth, session, callback) => {
      logins.push({ user: auth.username ?? '', secure: session.secure === true });
      if (loginsRefused || auth.username !== SMTP_USER || auth.password !== SMTP_PASSWORD)
        return callback(answer(535, '5.7.8 Authentication credentials invalid'));
      callback(null, { user: auth.username });
    },
    onRcptTo: (address, _session, callback) => {
      const to = address.address.toLowerCase();
      const next = scripted.get(to)?.shift() ?? refused.get(to) ?? everyone;
      attempts.push({ to, code: next ?? 250 });
      callback(next === undefined ? null : answer(next, WORDS[next] ?? 'Refused'));
    },
    onData: (stream, session, callback) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const envelope = session.envelope;
        const from = envelope.mailFrom === false ? '' : envelope.mailFrom.address;
        mails.push(
          parseMail(
            raw,
            from,
            envelope.rcptTo.map((each) => each.address.toLowerCase()),
            session,
          ),
        );
        callback(null);
      });
    },
  });
  server.on('error', () => undefined);
  const port = await new Promise<number>((done, fail) => {
    const listening = server.listen(0, '127.0.0.1', () => {
      const address = listening.address();
      if (address === null || typeof address === 'string') fail(new Error('no port'));
      else done(address.port);
    });
  });
  const urlWithPassword = (password: string) =>
    `smtp://${SMTP_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}?tls.rejectUnauthorized=false`;
  return {
    port,
    url: urlWithPassword(SMTP_PASSWORD),
    urlWithPassword,
    mails,
    mailsTo: (address) => mails.filter((mail) => mail.to.includes(address.toLowerCase())),
    attempts,
    logins,
    script: (address, ...codes) => scripted.set(address.toLowerCase(), codes),
    refuse: (address, code) => {
      if (code === undefined) refused.delete(address.toLowerCase());
      else refused.set(address.toLowerCase(), code);
    },
    refuseEveryone: (code) => {
      everyone = code;
    },
    refuseLogins: (on) => {
      loginsRefused = on;
    },
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

/** An SMTP error answer with this code. */
function answer(code: number, words: string): Error {
  return Object.assign(new Error(words), { responseCode: code });
}

/** Reads a mail as nodemailer writes it: headers, then a text part and an HTML part (or one body). */
export function parseMail(
  raw: string,
  from: string,
  to: string[],
  session: { secure?: boolean; user?: unknown } = {},
): ReceivedMail {
  const { headers, body } = splitHeaders(raw);
  const parts: { type: string; body: string }[] = [];
  collectParts(headers, body, parts);
  const first = (name: string) => headers.get(name.toLowerCase())?.[0];
  return {
    from,
    to,
    headers,
    header: first,
    subject: first('subject') ?? '',
    text: parts.find((part) => part.type === 'text/plain')?.body ?? '',
    html: parts.find((part) => part.type === 'text/html')?.body ?? '',
    raw,
    secure: session.secure === true,
    user: typeof session.user === 'string' ? session.user : undefined,
    at: Date.now(),
  };
}

function splitHeaders(raw: string): { headers: Map<string, string[]>; body: string } {
  const end = raw.indexOf('\r\n\r\n');
  const head = end < 0 ? raw : raw.slice(0, end);
  const body = end < 0 ? '' : raw.slice(end + 4);
  const headers = new Map<string, string[]>();
  for (const line of head.replace(/\r\n[ \t]+/g, ' ').split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = decodeWords(line.slice(colon + 1).trim());
    headers.set(name, [...(headers.get(name) ?? []), value]);
  }
  return { headers, body };
}

/** Adds the leaf parts of an entity (a multipart's parts, recursively), each decoded. */
function collectParts(headers: Map<string, string[]>, body: string, into: { type: string; body: string }[]): void {
  const type = headers.get('content-type')?.[0] ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (type.toLowerCase().startsWith('multipart/') && boundary !== undefined) {
    const sections = body.split(`--${boundary}`).slice(1);
    for (const section of sections) {
      if (section.startsWith('--')) break;
      const part = splitHeaders(section.replace(/^\r\n/, ''));
      collectParts(part.headers, part.body, into);
    }
    return;
  }
  const encoding = (headers.get('content-transfer-encoding')?.[0] ?? '7bit').toLowerCase();
  const bytes =
    encoding === 'base64'
      ? Buffer.from(body.replace(/\s+/g, ''), 'base64')
      : encoding === 'quoted-printable'
        ? quotedPrintable(body)
        : Buffer.from(body, 'utf8');
  into.push({
    type: type.split(';')[0]?.trim().toLowerCase() ?? '',
    body: bytes.toString('utf8').replace(/\r\n/g, '\n').trimEnd(),
  });
}

function quotedPrintable(text: string): Buffer {
  const joined = text.replace(/=\r\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < joined.length; i += 1) {
    const char = joined[i] as string;
    if (char === '=' && /^[0-9A-F]{2}$/i.test(joined.slice(i + 1, i + 3))) {
      bytes.push(Number.parseInt(joined.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(...Buffer.from(char, 'utf8'));
  }
  return Buffer.from(bytes);
}

/** Decodes RFC 2047 encoded words (`=?UTF-8?B?…?=`, `=?UTF-8?Q?…?=`); the space between two of them goes. */
function decodeWords(value: string): string {
  return value
    .replace(/(\?=)\s+(=\?)/g, '$1$2')
    .replace(/=\?([^?]+)\?([BbQq])\?([^?]*)\?=/g, (_all, _charset: string, kind: string, text: string) =>
      kind.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64').toString('utf8')
        : quotedPrintable(text.replace(/_/g, ' ')).toString('utf8'),
    );
}
