/** The change and confirmation mails: the bot's lines by day, the subject naming the first change, escaping. */
import { describe, expect, it } from 'vitest';
import { changeMail, changeSubject, confirmationMail, MAX_MAIL_LINES } from '../../src/notify/email/message.ts';
import { mailOutcome } from '../../src/notify/email/outcome.ts';
import type { ChangeSet, NotifyItem, NotifySide } from '../../src/timetable/notify-change.ts';

const PAGE = 'https://timetable.example.edu/timetables/groups/4242';
const UNSUBSCRIBE = 'https://timetable.example.edu/email/unsubscribe?token=abc.def';

function side(overrides: Partial<NotifySide> = {}): NotifySide {
  return {
    date: '2024-12-02',
    begin: '10:10',
    end: '11:40',
    startUtc: Date.UTC(2024, 11, 2, 7, 10),
    summary: 'Оптика (практика)',
    location: 'Главный корпус, 1008',
    teacher: 'Иванов Иван Иванович',
    ...overrides,
  };
}

function moved(uid: string, before: NotifySide, after: NotifySide): NotifyItem {
  return { kind: 'moved', uid, before, after, startsAt: before.startUtc, lessonKind: 'практика', note: '' };
}

function set(items: NotifyItem[], omitted = 0, name = 'ИВТ-21'): ChangeSet {
  return { source: 'group:4242', name, stamp: 1, items, omitted };
}

const CONFIRMATION = {
  name: 'ИВТ-21',
  confirmUrl: 'https://timetable.example.edu/email/confirm?token=x.y',
  options: { subgroup: 1, excludeKinds: ['лекция'] },
  digest: true,
  digestTime: '19:00',
};

describe('changeMail', () => {
  it('names the timetable and the first change in the subject, and lays the body out by day', () => {
    const later = side({ date: '2024-12-03', begin: '12:00', summary: 'Физика (лекция)' });
    const told = set([
      moved('b', later, { ...later, location: 'Главный корпус, 200' }),
      moved('a', side(), side({ location: 'Главный корпус, 305' })),
    ]);
    const mail = changeMail({ told, pageUrl: PAGE, unsubscribeUrl: UNSUBSCRIBE });
    expect(mail.subject).toBe('ИВТ-21: Пн 2 дек., 10:10 Оптика (практика): ауд. 1008 → 305 (и ещё 1)');
    expect(mail.text).toBe(
      [
        'ИВТ-21: изменения в расписании',
        'Пн 2 дек.\n10:10 Оптика (практика): ауд. 1008 → 305',
        'Вт 3 дек.\n12:00 Физика (лекция): ауд. 1008 → 200',
        `Расписание: ${PAGE}`,
        `Вы получаете это письмо, потому что подписались на изменения расписания «ИВТ-21».\nОтписаться: ${UNSUBSCRIBE}`,
      ].join('\n\n'),
    );
    expect(mail.html).toContain('<b>Пн 2 дек.</b><br>\n10:10 Оптика (практика): ауд. 1008 → 305</p>');
    expect(mail.html).toContain(`<a href="${PAGE}">Расписание</a>`);
    expect(mail.html).toContain(
      '<a href="https://timetable.example.edu/email/unsubscribe?token=abc.def">Отписаться</a>',
    );
  });

  it('escapes the HTML, cuts a long subject, and counts what it leaves out', () => {
    const items = Array.from({ length: MAX_MAIL_LINES + 5 }, (_, n) =>
      moved(
        `u${String(n).padStart(3, '0')}`,
        side({ summary: `<b>Предмет</b> & ${'очень длинное название '.repeat(5)}` }),
        side({ location: 'Главный корпус, 9' }),
      ),
    );
    const mail = changeMail({ told: set(items, 2), pageUrl: `${PAGE}?a=1&b=2`, unsubscribeUrl: UNSUBSCRIBE });
    expect(mail.subject.length).toBeLessThanOrEqual(140);
    expect(mail.subject).toMatch(/… \(и ещё 106\)$/);
    expect(mail.html).not.toContain('<b>Предмет</b>');
    expect(mail.html).toContain('&lt;b&gt;Предмет&lt;/b&gt; &amp;');
    expect(mail.html).toContain('href="https://timetable.example.edu/timetables/groups/4242?a=1&amp;b=2"');
    expect(mail.text).toContain('…и ещё 7 изменений');
    expect(mail.text.split('\n').filter((line) => line.startsWith('10:10'))).toHaveLength(MAX_MAIL_LINES);
  });

  it('never cuts a subject or a name between the halves of a surrogate pair', () => {
    // Emoji (two UTF-16 units each) everywhere a cut may fall.
    const summary = '📚'.repeat(200);
    const name = `ИВТ-2${'🎓'.repeat(100)}`;
    const told = set([moved('a', side({ summary }), side({ summary, location: 'Главный корпус, 305' }))], 0, name);
    for (const text of [changeSubject(told), changeMail({ told, pageUrl: PAGE, unsubscribeUrl: UNSUBSCRIBE }).text])
      expect(text.isWellFormed()).toBe(true);
    expect([...changeSubject(told)].length).toBeLessThanOrEqual(140);
    expect(changeSubject(told)).toMatch(/📚…$/);
    const odd = confirmationMail({ ...CONFIRMATION, name: `Иванов${'🎓'.repeat(100)}` });
    expect(odd.subject.isWellFormed()).toBe(true);
    expect(odd.text.isWellFormed()).toBe(true);
  });

  it('leaves out the subgroup mark for a subscriber of one subgroup', () => {
    const one = { ...moved('a', side(), side({ location: 'Главный корпус, 305' })), note: '1 подгруппа' };
    expect(changeSubject(set([one]))).toContain('Оптика (практика, 1 подгруппа)');
    expect(changeSubject(set([one]), 1)).toContain('Оптика (практика):');
  });
});

describe('confirmationMail', () => {
  it('says what it subscribes to, gives the link, and what to do if it was not you', () => {
    const mail = confirmationMail(CONFIRMATION);
    expect(mail.subject).toBe('Подтвердите подписку на изменения расписания «ИВТ-21»');
    expect(mail.text).toContain('«ИВТ-21» (подгруппа 1; без: лекция; одно письмо в день, в 19:00)');
    expect(mail.text).toContain('https://timetable.example.edu/email/confirm?token=x.y');
    expect(mail.text).toContain('Если это были не вы — ничего не делайте');
    expect(mail.html).toContain('<a href="https://timetable.example.edu/email/confirm?token=x.y">');
  });
});

describe('mailOutcome', () => {
  const smtp = (fields: Record<string, unknown>) => Object.assign(new Error('refused <ivan@example.edu>'), fields);

  /** What the relay answering `response` to `command` comes to (nodemailer's fields, as it sets them). */
  const answered = (command: string, response: string) => {
    const status = Number(response.slice(0, 3));
    const code = command === 'RCPT TO' || command === 'MAIL FROM' ? 'EENVELOPE' : 'EPROTOCOL';
    return mailOutcome(smtp({ code, response, responseCode: status, permanent: status >= 500, command }));
  };

  it('unsubscribes only a permanent refusal of the recipient', () => {
    expect(mailOutcome(smtp({ code: 'EENVELOPE', responseCode: 550, permanent: true, command: 'RCPT TO' }))).toEqual({
      kind: 'gone',
      reason: 'the mailbox was refused for good: EENVELOPE 550 at RCPT TO',
    });
    expect(answered('RCPT TO', '550 5.1.1 <ivan@example.edu>: Recipient address rejected: User unknown')).toEqual({
      kind: 'gone',
      reason: 'the mailbox was refused for good: EENVELOPE 550 5.1.1 at RCPT TO',
    });
    for (const response of ['551 5.1.6 moved', '553 5.1.3 bad address', '554 5.1.1 no such user', '550 5.2.1 disabled'])
      expect(answered('RCPT TO', response).kind).toBe('gone');
    // Any 550/551/553 that does not say 5.7, with no enhanced code at all or another one.
    for (const response of ['550 Unrouteable address', '553 sorry, that domain is not ours', '550 5.0.0 unknown'])
      expect(answered('RCPT TO', response).kind).toBe('gone');
  });

  it('takes a 5.7 at RCPT, or a 5xx before any mail, for the relay refusing us', () => {
    for (const response of [
      '554 5.7.1 <ivan@example.edu>: Relay access denied',
      '550 5.7.1 Sender not authorised',
      '550 5.7.606 Access denied, banned sending IP',
      '553 5.7.1 policy',
    ])
      expect(answered('RCPT TO', response)).toMatchObject({ kind: 'misconfigured' });
    expect(answered('RCPT TO', '554 5.7.1 <ivan@example.edu>: Relay access denied')).toEqual({
      kind: 'misconfigured',
      reason: 'the relay refused to take mail from us: EENVELOPE 554 5.7.1 at RCPT TO',
    });
    for (const command of ['CONN', 'EHLO', 'HELO', 'STARTTLS', 'AUTH PLAIN'])
      expect(answered(command, '554 5.7.1 no SMTP service for you')).toMatchObject({ kind: 'misconfigured' });
    // A 421 at the greeting is the relay busy, not refusing.
    expect(answered('CONN', '421 4.3.2 too many connections').kind).toBe('rate-limited');
  });

  it('drops the mail only for another permanent refusal of the recipient, and retries a 4xx', () => {
    for (const response of ['552 5.2.2 mailbox full', '554 5.4.4 unable to route', '554 no reason given'])
      expect(answered('RCPT TO', response)).toMatchObject({ kind: 'failed', permanent: true });
    expect(answered('RCPT TO', '451 4.7.1 greylisted')).toMatchObject({ kind: 'failed', permanent: false });
    expect(mailOutcome(smtp({ code: 'EENVELOPE', responseCode: 451, permanent: false, command: 'RCPT TO' }))).toEqual({
      kind: 'failed',
      permanent: false,
      reason: 'EENVELOPE 451 at RCPT TO',
    });
  });

  it('disables the channel for our login or sender, waits for a busy relay, retries the network', () => {
    expect(mailOutcome(smtp({ code: 'EAUTH', responseCode: 535, permanent: true, command: 'AUTH PLAIN' })).kind).toBe(
      'misconfigured',
    );
    expect(
      mailOutcome(smtp({ code: 'EENVELOPE', responseCode: 553, permanent: true, command: 'MAIL FROM' })).kind,
    ).toBe('misconfigured');
    expect(mailOutcome(smtp({ code: 'EENVELOPE', responseCode: 451, permanent: false, command: 'MAIL FROM' }))).toEqual(
      {
        kind: 'rate-limited',
        retryAfterMs: 60_000,
      },
    );
    expect(mailOutcome(smtp({ code: 'EMESSAGE', responseCode: 554, permanent: true, command: 'DATA' }))).toMatchObject({
      kind: 'failed',
      permanent: true,
    });
    expect(mailOutcome(smtp({ code: 'ESOCKET', command: 'CONN' }))).toMatchObject({ kind: 'failed', permanent: false });
    // No reason ever carries the server's words, which quote the address.
    for (const code of [550, 451, 535])
      expect(
        JSON.stringify(mailOutcome(smtp({ code: 'EENVELOPE', responseCode: code, command: 'RCPT TO' }))),
      ).not.toContain('ivan');
  });
});
