/**
 * The mail transport against a real SMTP server on loopback (test/support/smtp-server.ts): STARTTLS and AUTH,
 * the headers a change mail carries (List-Unsubscribe with its one-click POST, our Message-ID, Date), text and
 * HTML, and what the relay's answers come to: 451 retried, 550 at RCPT gone, a refused login misconfigured.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changeMail } from '../../src/notify/email/message.ts';
import { createMailTransport, type MailTransport, type OutgoingMail } from '../../src/notify/email/transport.ts';
import { SMTP_USER, startSmtpServer, type TestSmtpServer } from '../../testkit/smtp-server.ts';

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
    expect(first).toEqual({ kind: 'failed', permanent: false, reason: 'EENVELOPE 451 at RCPT TO' });
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
      reason: 'the mailbox was refused for good: EENVELOPE 550 at RCPT TO',
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
