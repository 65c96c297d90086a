/**
 * The mail transport against a real SMTP server on loopback (testkit/smtp-server.ts): STARTTLS and AUTH,
 * the headers a change mail carries (List-Unsubscribe with its one-click POST, our Message-ID, Date), text and
 * HTML, and what the relay's answers come to: 451 retried, 550 at RCPT gone, a refused login misconfigured. The
 * channel's probe asks the relay without sending. A login to a relay on another host requires TLS unless
 * `SMTP_URL` says `?requireTLS=false`, which is warned about once.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Logger } from '../../src/logger.ts';
import { emailChannel } from '../../src/notify/email/channel.ts';
import { changeMail } from '../../src/notify/email/message.ts';
import {
  createMailTransport,
  type MailTransport,
  type OutgoingMail,
  tlsRequirement,
} from '../../src/notify/email/transport.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { Mailboxes } from '../../src/store/mailboxes.ts';
import { SMTP_PASSWORD, SMTP_USER, startSmtpServer, type TestSmtpServer } from '../../testkit/smtp-server.ts';
import { deletePrefix, TEST_SECRET_KEY, uniquePrefix } from '../support/service.ts';

const FROM = 'Расписание <timetable@example.edu>';
let server: TestSmtpServer;
let transport: MailTransport;

beforeAll(async () => {
  server = await startSmtpServer();
  transport = createMailTransport({ smtpUrl: server.url, mailFrom: FROM });
});

afterAll(async () => {
  transport?.close();
  await server?.close();
});

function mail(to: string, overrides: Partial<OutgoingMail> = {}): OutgoingMail {
  const told = {
    source: 'group:4242',
    name: 'ИВТ-21',
    stamp: 1,
    omitted: 0,
    items: [
      {
        kind: 'moved' as const,
        uid: 'u1',
        before: {
          date: '2024-12-02',
          begin: '10:10',
          end: '11:40',
          startUtc: 1,
          summary: 'Оптика',
          location: 'Корпус 1, 1008',
          teacher: '',
        },
        after: {
          date: '2024-12-02',
          begin: '10:10',
          end: '11:40',
          startUtc: 1,
          summary: 'Оптика',
          location: 'Корпус 1, 305',
          teacher: '',
        },
        startsAt: 1,
        lessonKind: 'практика',
        note: '',
      },
    ],
  };
  const unsubscribeUrl = 'https://timetable.example.edu/email/unsubscribe?token=abc.def';
  const content = changeMail({ told, pageUrl: 'https://timetable.example.edu/timetables/groups/4242', unsubscribeUrl });
  return {
    to,
    ...content,
    messageId: '<em-1234@example.edu>',
    date: new Date(Date.UTC(2024, 11, 1, 9, 0)),
    unsubscribeUrl,
    ...overrides,
  };
}

describe('the mail transport', () => {
  it('sends over STARTTLS after AUTH, with the one-click unsubscribe headers, our Message-ID and Date', async () => {
    const outcome = await transport.send(mail('reader@example.edu'));
    expect(outcome).toEqual({ kind: 'sent', messageId: '<em-1234@example.edu>' });
    const [received] = server.mailsTo('reader@example.edu');
    if (received === undefined) throw new Error('nothing received');
    expect(received.secure).toBe(true);
    expect(received.user).toBe(SMTP_USER);
    expect(received.from).toBe('timetable@example.edu');
    expect(received.header('list-unsubscribe')).toBe('<https://timetable.example.edu/email/unsubscribe?token=abc.def>');
    expect(received.header('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    expect(received.header('message-id')).toBe('<em-1234@example.edu>');
    expect(new Date(received.header('date') ?? '').getTime()).toBe(Date.UTC(2024, 11, 1, 9, 0));
    expect(received.subject).toBe('ИВТ-21: Пн 2 дек., 10:10 Оптика: ауд. 1008 → 305');
    expect(received.header('from')).toBe('Расписание <timetable@example.edu>');
    expect(received.text).toContain('10:10 Оптика: ауд. 1008 → 305');
    expect(received.html).toContain('<a href="https://timetable.example.edu/email/unsubscribe?token=abc.def">');
  });

  it('reports a 451 as a failure to retry, and sends the same mail (same Message-ID) when asked again', async () => {
    server.script('grey@example.edu', 451);
    const first = await transport.send(mail('grey@example.edu', { messageId: '<em-grey@example.edu>' }));
    expect(first).toEqual({ kind: 'failed', permanent: false, reason: 'EENVELOPE 451 4.7.1 at RCPT TO' });
    expect(server.mailsTo('grey@example.edu')).toHaveLength(0);
    const second = await transport.send(mail('grey@example.edu', { messageId: '<em-grey@example.edu>' }));
    expect(second.kind).toBe('sent');
    const received = server.mailsTo('grey@example.edu');
    expect(received).toHaveLength(1);
    expect(received[0]?.header('message-id')).toBe('<em-grey@example.edu>');
  });

  it('reports a mailbox refused for good at RCPT TO as gone', async () => {
    server.refuse('nobody@example.edu', 550);
    expect(await transport.send(mail('nobody@example.edu'))).toEqual({
      kind: 'gone',
      reason: 'the mailbox was refused for good: EENVELOPE 550 5.1.1 at RCPT TO',
    });
  });

  it('reports a relay refusing to relay for us (554 5.7.1 at RCPT TO) as misconfigured, not gone', async () => {
    server.refuse('anyone@example.edu', 554);
    expect(await transport.send(mail('anyone@example.edu'))).toEqual({
      kind: 'misconfigured',
      reason: 'the relay refused to take mail from us: EENVELOPE 554 5.7.1 at RCPT TO',
    });
  });

  it('reports a refused login as misconfigured, without the password', async () => {
    const wrong = createMailTransport({ smtpUrl: server.urlWithPassword('not-the-password'), mailFrom: FROM });
    try {
      const outcome = await wrong.send(mail('reader@example.edu'));
      expect(outcome.kind).toBe('misconfigured');
      expect(JSON.stringify(outcome)).not.toContain('not-the-password');
    } finally {
      wrong.close();
    }
  });

  it('reports a relay that cannot be reached as a failure to retry', async () => {
    const nowhere = createMailTransport({ smtpUrl: 'smtp://127.0.0.1:1', mailFrom: FROM });
    try {
      expect(await nowhere.send(mail('reader@example.edu'))).toMatchObject({ kind: 'failed', permanent: false });
    } finally {
      nowhere.close();
    }
  });
});

describe('the probe', () => {
  it('logs in without sending anything: sent, misconfigured for a wrong password, failed for no relay', async () => {
    const before = { mails: server.mails.length, recipients: server.attempts.length, logins: server.logins.length };
    expect(await transport.verify()).toEqual({ kind: 'sent', messageId: '' });
    const wrong = createMailTransport({ smtpUrl: server.urlWithPassword('not-the-password'), mailFrom: FROM });
    const nowhere = createMailTransport({ smtpUrl: 'smtp://127.0.0.1:1', mailFrom: FROM });
    try {
      const refused = await wrong.verify();
      expect(refused.kind).toBe('misconfigured');
      expect(JSON.stringify(refused)).not.toContain('not-the-password');
      expect(await nowhere.verify()).toMatchObject({ kind: 'failed', permanent: false });
    } finally {
      wrong.close();
      nowhere.close();
    }
    expect(server.logins.slice(before.logins).map((login) => login.secure)).toEqual([true, true]);
    expect(server.mails.length).toBe(before.mails);
    expect(server.attempts.length).toBe(before.recipients);
  });

  it("is the e-mail channel's probe", async () => {
    const prefix = uniquePrefix('email-probe');
    const redis = new Redis(inject('redisUrl'));
    const keys = redisKeys(prefix);
    const config = { smtpUrl: server.url, mailFrom: FROM, publicUrl: 'https://timetable.example.edu' };
    const channel = emailChannel({
      config: { ...config, secretKey: Buffer.from(TEST_SECRET_KEY, 'hex') },
      mailboxes: new Mailboxes(redis, keys, undefined),
      redis,
      keys,
      wallClock: Date.now,
      logger: { warn: () => undefined },
    });
    try {
      expect(await channel.probe?.()).toEqual({ kind: 'sent', messageId: '' });
      server.refuseLogins(true);
      expect(await channel.probe?.()).toMatchObject({ kind: 'misconfigured' });
    } finally {
      server.refuseLogins(false);
      channel.close();
      redis.disconnect();
      await deletePrefix(inject('redisUrl'), prefix);
    }
  });
});

describe('TLS before the login', () => {
  it('is required for smtp:// with a login to another host, unless the URL says otherwise', () => {
    expect(tlsRequirement('smtp://u:p@smtp.example.edu:587')).toEqual({ needed: true, refused: false });
    expect(tlsRequirement('smtp://u:p@smtp.example.edu:587?requireTLS=false')).toEqual({ needed: true, refused: true });
    expect(tlsRequirement('smtp://u:p@203.0.113.7:587?requireTLS=true')).toEqual({ needed: true, refused: false });
    // TLS from the start, no login, or a relay on this host: nothing to require.
    for (const url of [
      'smtps://u:p@smtp.example.edu:465',
      'smtp://smtp.example.edu:25',
      'smtp://u:p@127.0.0.1:25',
      'smtp://u:p@127.8.9.10:25?requireTLS=false',
      'smtp://u:p@[::1]:25',
      'smtp://u:p@[::ffff:127.0.0.1]:25',
      'smtp://u:p@localhost:25',
    ])
      expect(tlsRequirement(url)).toEqual({ needed: false, refused: false });
  });

  it('keeps the password off a relay that offers no STARTTLS, and warns once when told to send it anyway', async () => {
    const plain = await startSmtpServer({ plain: true });
    // 0.0.0.0 reaches the loopback server on Linux, yet is not a loopback address: the rule applies.
    const url = `smtp://${SMTP_USER}:${SMTP_PASSWORD}@0.0.0.0:${plain.port}`;
    const required = createMailTransport({ smtpUrl: url, mailFrom: FROM });
    const warnings: unknown[][] = [];
    const logger = { warn: (...args: unknown[]) => warnings.push(args) } as unknown as Pick<Logger, 'warn'>;
    const redis = new Redis(inject('redisUrl'));
    const prefix = uniquePrefix('email-tls');
    const keys = redisKeys(prefix);
    const allowed = emailChannel({
      config: {
        smtpUrl: `${url}?requireTLS=false`,
        mailFrom: FROM,
        publicUrl: 'https://timetable.example.edu',
        secretKey: Buffer.from(TEST_SECRET_KEY, 'hex'),
      },
      mailboxes: new Mailboxes(redis, keys, undefined),
      redis,
      keys,
      wallClock: Date.now,
      logger,
    });
    try {
      expect(await required.send(mail('reader@example.edu'))).toMatchObject({
        kind: 'misconfigured',
        reason: expect.stringContaining('at STARTTLS'),
      });
      expect(plain.logins).toEqual([]);
      expect(plain.mails).toEqual([]);
      // The loopback address itself is exempt: a relay on this host.
      const local = createMailTransport({
        smtpUrl: plain.url.replace('?tls.rejectUnauthorized=false', ''),
        mailFrom: FROM,
      });
      expect((await local.send(mail('reader@example.edu'))).kind).toBe('sent');
      local.close();
      // Told to: it logs in without TLS, with one warning that names no password.
      expect((await allowed.sendMail(mail('second@example.edu'))).kind).toBe('sent');
      expect((await allowed.sendMail(mail('third@example.edu'))).kind).toBe('sent');
      expect(plain.logins.map((login) => login.secure)).toEqual([false, false]);
      expect(warnings).toHaveLength(1);
      expect(JSON.stringify(warnings)).toContain('requireTLS');
      expect(JSON.stringify(warnings)).not.toContain(SMTP_PASSWORD);
    } finally {
      required.close();
      allowed.close();
      redis.disconnect();
      await deletePrefix(inject('redisUrl'), prefix);
      await plain.close();
    }
  });
});
