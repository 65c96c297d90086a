/**
 * «Уведомления об изменениях» on a timetable's page over HTTP (fastify inject, stores written directly): the
 * block offers exactly the channels the deployment has, MAX first, then Telegram, then the e-mail form; each
 * messenger's link and the form's hidden fields carry the page's options, and so does the preview endpoint's
 * answer that the script rewrites them from. A deployment without any channel shows no block, and one with a relay
 * and a sender but no `SECRET_KEY` (nowhere to seal an address) shows no e-mail form.
 */
import type { FastifyInstance } from 'fastify';
import type { UserFromGetMe } from 'grammy/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppOptions, buildApp } from '../../src/http/app.ts';
import { PERSONAL_COOKIE } from '../../src/http/personal-session.ts';
import { silentLogger } from '../../src/logger.ts';
import { createTelegramBot, type TelegramBot } from '../../src/notify/telegram/bot.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { botContextDeps } from '../../src/runtime/telegram.ts';
import { storeTimetable } from '../http/helpers.ts';
import { namedMaxBot } from '../support/named-max-bot.ts';
import { testContext } from '../support/service.ts';

const MAIL_ENV = { SMTP_URL: 'smtp://relay:secret@127.0.0.1:2525', MAIL_FROM: 'Расписание <timetable@example.edu>' };
const MAX_BOT = namedMaxBot('id7700000001_bot');

let plain: { context: ServiceContext; close: () => Promise<void> };
let mailing: { context: ServiceContext; close: () => Promise<void> };
const apps: FastifyInstance[] = [];

/** A Telegram bot that knows its name without asking (no Bot API behind it). */
function telegramOf(context: ServiceContext): TelegramBot {
  const botInfo = { id: 42, is_bot: true, first_name: 'Расписание', username: 'timetable_test_bot' } as UserFromGetMe;
  return createTelegramBot(
    { telegramBotToken: '42:test-token', telegramApiRoot: 'http://127.0.0.1:9' },
    { ...botContextDeps(context), logger: silentLogger() },
    { botInfo },
  );
}

async function appOf(context: ServiceContext, options: Omit<AppOptions, 'logger'> = {}): Promise<FastifyInstance> {
  const app = await buildApp(context, { logger: silentLogger(), ...options });
  apps.push(app);
  return app;
}

beforeAll(async () => {
  plain = await testContext();
  mailing = await testContext(MAIL_ENV);
  await storeTimetable(plain.context, 'group:4242');
  await storeTimetable(mailing.context, 'group:4242');
});

afterAll(async () => {
  for (const app of apps) await app.close();
  await plain?.close();
  await mailing?.close();
});

/** The page's body, its character references decoded (the templates escape `=` in URLs). */
async function page(app: FastifyInstance, url: string, headers: Record<string, string> = {}): Promise<string> {
  const response = await app.inject({ url, headers });
  expect(response.statusCode).toBe(200);
  return response.body.replace(/&#(\d+);/g, (_whole, code: string) => String.fromCharCode(Number(code)));
}

/** The block's channels in the order shown (`data-channel`), or undefined when there is no block. */
function channels(body: string): string[] | undefined {
  const block = /<section class="notify"[\s\S]*?<\/section>/.exec(body)?.[0];
  if (block === undefined) return undefined;
  return [...block.matchAll(/data-channel="(\w+)"/g)].map((match) => match[1] as string);
}

/** The value of the e-mail form's hidden field `name`. */
function hidden(body: string, name: string): string | undefined {
  return new RegExp(`<input type="hidden" name="${name}" value="([^"]*)"`).exec(body)?.[1];
}

describe('the notifications block', () => {
  it('is not there when the deployment has no channel', async () => {
    const body = await page(await appOf(plain.context), '/timetables/groups/4242');
    expect(channels(body)).toBeUndefined();
    expect(body).not.toContain('Уведомления');
    expect(body).not.toContain('/email/subscribe');
  });

  it('offers Telegram alone when only its bot is on', async () => {
    const app = await appOf(plain.context, { telegram: telegramOf(plain.context) });
    const body = await page(app, '/timetables/groups/4242?subgroup=2');
    expect(channels(body)).toEqual(['telegram']);
    expect(body).toContain('<summary class="button secondary" id="notify-action">Уведомления об изменениях</summary>');
    expect(body).toContain('href="/telegram/start?source=group%3A4242&subgroup=2" data-link="telegram"');
    expect(body).not.toContain('/max/start');
  });

  it('offers MAX first, then Telegram, both with the page options', async () => {
    const app = await appOf(plain.context, { telegram: telegramOf(plain.context), max: MAX_BOT });
    const body = await page(app, `/timetables/groups/4242?subgroup=1&exclude=${encodeURIComponent('лекция')}`);
    expect(channels(body)).toEqual(['max', 'telegram']);
    const query = `source=group%3A4242&subgroup=1&exclude=${encodeURIComponent('лекция')}`;
    expect(body).toContain(`href="/max/start?${query}" data-link="max"`);
    expect(body).toContain(`href="/telegram/start?${query}" data-link="telegram"`);
    expect(body).toContain('>Уведомления в MAX</a>');
  });

  it('shows no MAX link while MAX has not said the bot’s name', async () => {
    const app = await appOf(plain.context, { max: namedMaxBot(undefined) });
    expect(channels(await page(app, '/timetables/groups/4242'))).toBeUndefined();
  });

  it('offers MAX, Telegram and then the e-mail form, whose hidden fields carry the options', async () => {
    const app = await appOf(mailing.context, { telegram: telegramOf(mailing.context), max: MAX_BOT });
    const body = await page(app, `/timetables/groups/4242?subgroup=2&exclude=${encodeURIComponent('лекция')}`);
    expect(channels(body)).toEqual(['max', 'telegram', 'email']);
    expect(body).toContain(
      '<form method="post" action="/email/subscribe" class="email-subscribe" data-channel="email">',
    );
    expect(hidden(body, 'source')).toBe('group:4242');
    expect(hidden(body, 'subgroup')).toBe('2');
    expect(hidden(body, 'exclude')).toBe('лекция');
    expect(hidden(body, 'lang')).toBe('ru');
    expect(body).toMatch(
      /<input type="email" class="email-input" id="notify-email" name="email" autocomplete="email" required/,
    );
    expect(body).toContain('<label for="notify-email">Уведомления на почту</label>');
    expect(body).toContain('name="digest" value="1"> Раз в день, сводкой (в 19:00)</label>');
    expect(body).toContain('Пришлём письмо для подтверждения; без него ничего не придёт.');
  });

  it('shows no e-mail form without SECRET_KEY, even with a relay and a sender', async () => {
    const keyless = await testContext({ ...MAIL_ENV, SECRET_KEY: undefined });
    try {
      expect(keyless.context.config.secretKey).toBeUndefined();
      await storeTimetable(keyless.context, 'group:4242');
      const alone = await page(await appOf(keyless.context), '/timetables/groups/4242');
      expect(channels(alone)).toBeUndefined();
      expect(alone).not.toContain('/email/subscribe');
      const app = await appOf(keyless.context, { telegram: telegramOf(keyless.context) });
      const body = await page(app, '/timetables/groups/4242');
      expect(channels(body)).toEqual(['telegram']);
      expect(body).not.toContain('/email/subscribe');
      expect(keyless.context.notify.channels.find((channel) => channel.name === 'email')?.on).toBe(false);
    } finally {
      await keyless.close();
    }
  });

  it('offers the e-mail form alone without bots, with empty option fields when none are chosen, in English', async () => {
    const app = await appOf(mailing.context);
    const body = await page(app, '/timetables/groups/4242', { 'accept-language': 'en' });
    expect(channels(body)).toEqual(['email']);
    expect(hidden(body, 'subgroup')).toBe('');
    expect(hidden(body, 'exclude')).toBe('');
    expect(hidden(body, 'lang')).toBe('en');
    expect(body).toContain('Change notifications');
    expect(body).toContain('Once a day, as a digest (at 19:00)');
  });

  it('is open on a computer and closed on a phone, after the calendar menu', async () => {
    const app = await appOf(mailing.context, { max: MAX_BOT });
    const computer = await page(app, '/timetables/groups/4242', {
      'user-agent': 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/126.0.0.0 Safari/537.36',
    });
    expect(computer).toContain('<details class="notify-menu" data-notify-menu open>');
    const phone = await page(app, '/timetables/groups/4242', {
      'user-agent': 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/126.0.0.0 Mobile Safari/537.36',
    });
    expect(phone).toContain('<details class="notify-menu" data-notify-menu>');
    expect(phone.indexOf('data-notify-menu')).toBeGreaterThan(phone.indexOf('data-calendar-menu'));
  });

  it('answers the links and the form’s fields for other options from the preview endpoint', async () => {
    const app = await appOf(mailing.context, { telegram: telegramOf(mailing.context), max: MAX_BOT });
    const response = await app.inject({
      url: `/timetables/groups/4242/preview?subgroup=1&exclude=${encodeURIComponent('практика')}`,
    });
    expect(response.statusCode).toBe(200);
    const answer = response.json() as Record<string, unknown>;
    const query = `source=group%3A4242&subgroup=1&exclude=${encodeURIComponent('практика')}`;
    expect(answer.max).toBe(`/max/start?${query}`);
    expect(answer.telegram).toBe(`/telegram/start?${query}`);
    expect(answer.notify).toEqual({ subgroup: '1', exclude: 'практика' });
    const none = (await app.inject({ url: '/timetables/groups/4242/preview' })).json() as Record<string, unknown>;
    expect(none.notify).toEqual({ subgroup: '', exclude: '' });
    // Without e-mail the answer has no form fields to rewrite.
    const withoutMail = await appOf(plain.context, { max: MAX_BOT });
    const plainAnswer = (await withoutMail.inject({ url: '/timetables/groups/4242/preview?subgroup=1' })).json();
    expect(plainAnswer).not.toHaveProperty('notify');
    expect(plainAnswer).toHaveProperty('max', '/max/start?source=group%3A4242&subgroup=1');
  });

  it('carries a personal source without options: its subscription has its own', async () => {
    const { subscription, token } = await mailing.context.subscriptions.create({
      credential: 'student-3:secret',
      name: 'Сидорова А. А.',
      upstreamUserId: 9003,
      now: Date.now(),
    });
    const app = await appOf(mailing.context, { max: MAX_BOT });
    const body = await page(app, '/timetables/personal?subgroup=1', {
      cookie: `${PERSONAL_COOKIE}=${subscription.id}.${token}`,
    });
    expect(channels(body)).toEqual(['max', 'email']);
    expect(body).toContain(`href="/max/start?source=${encodeURIComponent(subscription.source)}" data-link="max"`);
    expect(hidden(body, 'source')).toBe(subscription.source);
    expect(hidden(body, 'subgroup')).toBe('');
    expect(hidden(body, 'exclude')).toBe('');
  });
});
