/**
 * E-mail sign-up, confirmation and unsubscribe through the app, on a real Redis, with the confirmation mail sent by
 * its job to a real SMTP server: the answer tells nobody whether an address is subscribed, nothing subscribes
 * before the link's POST (its GET confirms nothing), the one-click POST (no cookies, any form body) unsubscribes and
 * deletes the address, the limits per address and per client answer 429 with Retry-After, and e-mail off is 503
 * (without SECRET_KEY too). Pages with a token in their URL send no referrer, and pages showing an address or a
 * subscription are not indexed.
 */
import type { Job } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { PERSONAL_COOKIE } from '../../src/http/personal-session.ts';
import { EMAIL_JOB, type EmailConfirmJobData } from '../../src/jobs/contract.ts';
import { confirmationProcessor } from '../../src/jobs/email-confirm.ts';
import { silentLogger } from '../../src/logger.ts';
import { type EmailChannel, emailChannel } from '../../src/notify/email/channel.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSmtpServer, type TestSmtpServer } from '../../testkit/smtp-server.ts';
import { testContext } from '../support/service.ts';
import { storeTimetable } from './helpers.ts';

const SOURCE = 'group:4242';
let smtp: TestSmtpServer;
let ctx: ServiceContext;
let closeContext: () => Promise<void>;
let app: FastifyInstance;
let channel: EmailChannel;

beforeAll(async () => {
  smtp = await startSmtpServer();
  const opened = await testContext({
    SMTP_URL: smtp.url,
    MAIL_FROM: 'Расписание <timetable@example.edu>',
    PUBLIC_URL: 'https://timetable.example.edu',
    MAIL_CONFIRMATIONS_PER_ADDRESS: '2/1d',
    MAIL_CONFIRMATIONS_PER_CLIENT: '5/1h',
  });
  ctx = opened.context;
  closeContext = opened.close;
  app = await buildApp(ctx, { logger: silentLogger() });
  channel = emailChannel(ctx);
  await storeTimetable(ctx, SOURCE);
});

afterAll(async () => {
  channel?.close();
  await app?.close();
  await closeContext?.();
  await smtp?.close();
});

/** Every key of this test's prefix with what it holds, as text. */
async function dump(): Promise<string> {
  const parts: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await ctx.redis.scan(cursor, 'MATCH', `${ctx.config.redisPrefix}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of batch) {
      const type = await ctx.redis.type(key);
      const value =
        type === 'hash'
          ? await ctx.redis.hgetall(key)
          : type === 'string'
            ? await ctx.redis.get(key)
            : type === 'set'
              ? await ctx.redis.smembers(key)
              : type === 'list'
                ? await ctx.redis.lrange(key, 0, -1)
                : type === 'zset'
                  ? await ctx.redis.zrange(key, '0', '-1')
                  : type;
      parts.push(`${key} ${JSON.stringify(value)}`);
    }
  } while (cursor !== '0');
  return parts.join('\n');
}

let client = 0;
/** A client address of its own per call, unless the test names one. */
function nextClient(): string {
  client += 1;
  return `203.0.113.${client}`;
}

async function ask(email: string, extra: Record<string, unknown> = {}, remoteAddress = nextClient()) {
  return app.inject({
    method: 'POST',
    url: '/api/email-subscriptions',
    remoteAddress,
    payload: { source: SOURCE, email, ...extra },
  });
}

/** The confirmation jobs waiting, newest last. */
async function confirmJobs(): Promise<Job<EmailConfirmJobData>[]> {
  const jobs = (await ctx.queues.email.getJobs(['waiting', 'prioritized'])) as Job<EmailConfirmJobData>[];
  return jobs.filter((job) => job.name === EMAIL_JOB.confirm).sort((a, b) => a.timestamp - b.timestamp);
}

/** Runs the confirmation job of the last sign-up, and answers the link of the mail it sent to `email`. */
async function mailedLink(email: string): Promise<string> {
  const job = (await confirmJobs()).at(-1);
  if (job === undefined) throw new Error('no confirmation job');
  expect(await confirmationProcessor(ctx, channel)(job)).toEqual({ outcome: 'sent' });
  await job.remove();
  const mail = smtp.mailsTo(email).at(-1);
  if (mail === undefined) throw new Error('no confirmation mail');
  const link = /https:\/\/timetable\.example\.edu(\/email\/confirm\?token=[A-Za-z0-9_.%-]+)/.exec(mail.text)?.[1];
  if (link === undefined) throw new Error(`no link in ${mail.text}`);
  return link;
}

describe('signing up', () => {
  it('answers 202 alike for a new, a waiting and a confirmed address, keeping the address sealed', async () => {
    const email = 'Student.One@Example.edu';
    const first = await ask(email, { options: { subgroup: 1, excludeKinds: ['лекция'] }, digest: true });
    expect(first.statusCode).toBe(202);
    expect(first.json()).toEqual({ status: 'confirmation-sent' });
    const [job] = await confirmJobs();
    // The job names the sign-up only.
    expect(Object.keys(job?.data ?? {})).toEqual(['pendingId']);
    const stored = await dump();
    expect(stored.toLowerCase()).not.toContain('student.one@example.edu');
    expect(stored.toLowerCase()).not.toContain('student.one');

    const link = await mailedLink('student.one@example.edu');
    const mail = smtp.mailsTo('student.one@example.edu').at(-1);
    expect(mail?.subject).toBe('Подтвердите подписку на изменения расписания «ИВТ-21»');
    expect(mail?.text).toContain('(подгруппа 1; без: лекция; одно письмо в день, в 19:00)');
    expect(mail?.text).toContain('Если это были не вы — ничего не делайте');

    // Opening the link (what a mail scanner does) shows a button and confirms nothing.
    const page = await app.inject({ url: link });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Подтвердить подписку');
    expect(page.body).toContain('подгруппа 1 · без: лекция · одно письмо в день, в 19:00');
    expect(page.body).toMatch(/<form method="post" action="\/email\/confirm\?token&#61;/);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.body).toContain('<meta name="robots" content="noindex">');
    expect(await ctx.mailboxes.hasAny(SOURCE)).toBe(false);
    // Another site's page cannot post it.
    const foreign = await app.inject({ method: 'POST', url: link, headers: { origin: 'https://evil.example' } });
    expect(foreign.statusCode).toBe(403);
    expect(await ctx.mailboxes.hasAny(SOURCE)).toBe(false);
    // Its POST does, as a browser sends it from a page without a referrer (`Origin: null`).
    const confirmed = await app.inject({ method: 'POST', url: link, headers: { origin: 'null' } });
    expect(confirmed.statusCode).toBe(200);
    expect(confirmed.body).toContain('Подписка подтверждена');
    expect(confirmed.headers['referrer-policy']).toBe('no-referrer');
    expect(confirmed.body).toContain('href="/timetables/groups/4242"');
    const [subscriber] = await ctx.mailboxes.ofSource(SOURCE);
    expect(subscriber).toMatchObject({ options: { subgroup: 1, excludeKinds: ['лекция'] }, digest: true });
    // A second POST of the same link says it is used.
    const again = await app.inject({ method: 'POST', url: link });
    expect(again.statusCode).toBe(410);
    expect(again.body).toContain('Ссылка устарела');

    // Asking again for a confirmed address answers the same.
    const confirmedAsk = await ask(email);
    expect(confirmedAsk.statusCode).toBe(202);
    expect(confirmedAsk.json()).toEqual(first.json());
  });

  it('refuses a bad address, bad options, an unknown timetable and a personal one of another browser', async () => {
    const bad = await ask('not an address');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'INVALID_BODY' });
    expect(bad.json().error).toMatch(/^email: /);
    const options = await ask('a@example.edu', { options: { subgroup: 0 } });
    expect(options.statusCode).toBe(400);
    expect(options.json().error).toContain('options.subgroup');
    const unknown = await app.inject({
      method: 'POST',
      url: '/api/email-subscriptions',
      payload: { source: 'group:999999', email: 'a@example.edu' },
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('TIMETABLE_NOT_LOADED');
    const invalid = await ask('a@example.edu', { source: 'nonsense' });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json()).toMatchObject({ code: 'INVALID_BODY' });
    expect(invalid.json().error).toBe(
      'source: a timetable is group:<group id>, employee:<employee id> or personal:<subscription id>',
    );
    const russian = await app.inject({
      method: 'POST',
      url: '/api/email-subscriptions',
      remoteAddress: nextClient(),
      headers: { 'accept-language': 'ru' },
      payload: { source: 'nonsense', email: 'a@example.edu' },
    });
    expect(JSON.stringify(russian.json())).toContain(
      'group:<номер группы>, employee:<номер преподавателя> или personal:',
    );

    const { subscription, token } = await ctx.subscriptions.create({
      credential: 'student-3:secret',
      name: 'Петрова П. П.',
      upstreamUserId: 9003,
      now: Date.now(),
    });
    const anonymous = await ask('me@example.edu', { source: subscription.source });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().code).toBe('SIGN_IN_REQUIRED');
    const signedIn = await app.inject({
      method: 'POST',
      url: '/api/email-subscriptions',
      headers: { cookie: `${PERSONAL_COOKIE}=${subscription.id}.${token}` },
      payload: { source: subscription.source, email: 'me@example.edu' },
    });
    expect(signedIn.statusCode).toBe(202);
  });

  it('limits confirmation mails per address, whoever asks, and per client (429, Retry-After)', async () => {
    const email = 'flooded@example.edu';
    expect((await ask(email)).statusCode).toBe(202);
    expect((await ask(email.toUpperCase())).statusCode).toBe(202);
    const third = await ask(email);
    expect(third.statusCode).toBe(429);
    expect(third.json().code).toBe('RATE_LIMITED');
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);

    const from = '198.51.100.7';
    for (let n = 0; n < 5; n += 1) expect((await ask(`client${n}@example.edu`, {}, from)).statusCode).toBe(202);
    const sixth = await ask('client5@example.edu', {}, from);
    expect(sixth.statusCode).toBe(429);
    expect(Number(sixth.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('answers the form with «Проверьте почту», or the form again with the error and what was typed', async () => {
    const form = (fields: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url: '/email/subscribe',
        remoteAddress: nextClient(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ source: SOURCE, subgroup: '', exclude: '', lang: 'ru', ...fields }).toString(),
      });
    const sent = await form({ email: ' Form.User@Example.edu ', digest: '1', subgroup: '2' });
    expect(sent.statusCode).toBe(200);
    expect(sent.body).toContain('Проверьте почту');
    expect(sent.body).toContain('form.user@example.edu');
    expect(sent.body).toContain('<meta name="robots" content="noindex">');
    const wrong = await form({ email: 'form.user@', digest: '1', exclude: 'лекция' });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.body).toContain('<meta name="robots" content="noindex">');
    expect(wrong.body).toContain('Это не похоже на адрес почты');
    expect(wrong.body).toContain('value="form.user@"');
    expect(wrong.body).toMatch(/name="digest" value="1" checked/);
    expect(wrong.body).toContain('name="exclude" value="лекция"');
    const english = await form({ email: '', lang: 'en' });
    expect(english.statusCode).toBe(400);
    expect(english.body).toContain('Type your e-mail address.');
  });
});

describe('unsubscribing', () => {
  async function subscribed(email: string): Promise<string> {
    expect((await ask(email)).statusCode).toBe(202);
    const link = await mailedLink(email);
    expect((await app.inject({ method: 'POST', url: link })).statusCode).toBe(200);
    const found = (await ctx.mailboxes.ofSource(SOURCE)).map((each) => each.mailboxId);
    for (const id of found) if ((await ctx.mailboxes.addressOf(id)) === email) return id;
    throw new Error('not subscribed');
  }

  it('shows a button on GET, and takes the one-click POST without cookies, deleting the address', async () => {
    const mailboxId = await subscribed('leaver@example.edu');
    const token = (await ctx.mailboxes.unsubscribeToken(mailboxId, SOURCE)) ?? '';
    const url = `/email/unsubscribe?token=${encodeURIComponent(token)}`;
    const page = await app.inject({ url });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Отписаться');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(await ctx.mailboxes.follows(mailboxId, SOURCE)).toBe(true);

    const oneClick = await app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'List-Unsubscribe=One-Click',
    });
    expect(oneClick.statusCode).toBe(200);
    expect(oneClick.body).toContain('Вы отписались');
    expect(oneClick.headers['referrer-policy']).toBe('no-referrer');
    expect(await ctx.mailboxes.follows(mailboxId, SOURCE)).toBe(false);
    expect(await ctx.mailboxes.addressOf(mailboxId)).toBeUndefined();
    expect(await ctx.redis.exists(ctx.keys.mailbox(mailboxId))).toBe(0);
    // Again: nothing left to do, and said so.
    const again = await app.inject({ method: 'POST', url, payload: 'List-Unsubscribe=One-Click' });
    expect(again.statusCode).toBe(200);
    expect(again.body).toContain('Этой подписки уже нет');
  });

  it('takes a multipart one-click POST too, and refuses a broken link', async () => {
    const mailboxId = await subscribed('multipart@example.edu');
    const token = (await ctx.mailboxes.unsubscribeToken(mailboxId, SOURCE)) ?? '';
    const boundary = 'x-boundary';
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--${boundary}--\r\n`;
    const response = await app.inject({
      method: 'POST',
      url: `/email/unsubscribe?token=${token}`,
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: body,
    });
    expect(response.statusCode).toBe(200);
    expect(await ctx.mailboxes.follows(mailboxId, SOURCE)).toBe(false);
    const broken = await app.inject({ method: 'POST', url: `/email/unsubscribe?token=${token.slice(0, 30)}` });
    expect(broken.statusCode).toBe(400);
    expect(broken.body).toContain('Ссылка неполная');
  });
});

describe('without SMTP_URL and MAIL_FROM, or without SECRET_KEY', () => {
  it.each([
    ['no relay', {}],
    ['no key', { SMTP_URL: 'smtp://127.0.0.1:2525', MAIL_FROM: 'timetable@example.edu', SECRET_KEY: undefined }],
  ])('answers 503 EMAIL_NOT_CONFIGURED, and a page saying so to the form (%s)', async (_case, env) => {
    const opened = await testContext(env);
    const plain = await buildApp(opened.context, { logger: silentLogger() });
    try {
      const response = await plain.inject({
        method: 'POST',
        url: '/api/email-subscriptions',
        payload: { source: SOURCE, email: 'a@example.edu' },
      });
      expect(response.statusCode).toBe(503);
      expect(response.json().code).toBe('EMAIL_NOT_CONFIGURED');
      const form = await plain.inject({
        method: 'POST',
        url: '/email/subscribe',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `source=${SOURCE}&email=a%40example.edu`,
      });
      expect(form.statusCode).toBe(503);
      expect(form.body).toContain('Почта не настроена');
    } finally {
      await plain.close();
      await opened.close();
    }
  });
});
