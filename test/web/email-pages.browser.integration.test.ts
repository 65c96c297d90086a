/**
 * The e-mail sign-up pages walked in a real browser, in Russian, on a 360 px phone and once on a 1280 px computer,
 * with a real SMTP server: the timetable page's form gives «Проверьте почту»; the confirmation mail's link shows
 * one button and confirms nothing until it is pressed, then «Подписка подтверждена» links back to the timetable;
 * a bad address comes back with the error beside it and what was typed kept; the unsubscribe link shows one
 * button, then «Вы отписались». On every page: no sideways scrolling, no console error, no Latin words but the
 * address typed, and axe-core finds no violation of any impact.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenUrl, UNSUBSCRIBE_PATH } from '../../src/notify/email/channel.ts';
import { eventually } from '../../testkit/poll.ts';
import { DESKTOP } from '../../testkit/screens.ts';
import { startSmtpServer, type TestSmtpServer } from '../../testkit/smtp-server.ts';
import { launchBrowser, sidewaysOverflow, WebStack, watchPageErrors } from '../support/browser.ts';

const axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const ANDROID_360: BrowserContextOptions = {
  viewport: { width: 360, height: 780 },
  userAgent:
    'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36',
  isMobile: true,
  hasTouch: true,
  locale: 'ru-RU',
};

let smtp: TestSmtpServer;
let stack: WebStack;
let browser: Browser;
/** Groups with classes: each walk signs up to one of its own, so that what one confirms is not seen by another. */
let groups: number[];

beforeAll(async () => {
  smtp = await startSmtpServer();
  stack = await WebStack.start({ env: { SMTP_URL: smtp.url, MAIL_FROM: 'Расписание <timetable@example.edu>' } });
  browser = await launchBrowser();
  const listed = (await (await fetch(`${stack.simulator.url}/_sim/groups`)).json()) as {
    groups: { id: number; entryCount: number }[];
  };
  groups = listed.groups.filter((group) => group.entryCount > 0).map((group) => group.id);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
  await smtp?.close();
});

/** A new browser on `options`, its console errors (but a 400's, which the form answers with) collected. */
async function person(options: BrowserContextOptions): Promise<{ page: Page; errors: string[] }> {
  const page = await (await browser.newContext(options)).newPage();
  const errors: string[] = [];
  watchPageErrors(page, errors, /the server responded with a status of 400/);
  return { page, errors };
}

/** A group's timetable page with «Уведомления об изменениях» open, the address typed into its form. */
async function typeAddress(page: Page, groupId: number, address: string): Promise<void> {
  expect((await page.goto(`${stack.url}/timetables/groups/${groupId}`))?.status()).toBe(200);
  if (!(await page.isVisible('#notify-email'))) await page.click('#notify-action');
  await page.fill('#notify-email', address);
}

/** Presses a button that posts a form, and answers the status of the page it leads to (once it has loaded). */
async function press(page: Page, selector: string): Promise<number | undefined> {
  const [response] = await Promise.all([
    page.waitForResponse((each) => each.request().isNavigationRequest() && each.request().method() === 'POST'),
    page.waitForEvent('load'),
    page.click(selector),
  ]);
  return response.status();
}

/** What a person would see wrong on the page, one line each: sideways scrolling, Latin words, axe violations. */
async function problems(page: Page, address = ''): Promise<string[]> {
  const found: string[] = [];
  const overflow = await sidewaysOverflow(page);
  if (overflow > 0) found.push(`scrolls sideways by ${overflow} px`);
  if ((await page.getAttribute('html', 'lang')) !== 'ru') found.push('the page is not in Russian');
  const text = ((await page.textContent('main')) ?? '').split(address).join(' ');
  for (const word of text.match(/[A-Za-z]{2,}/g) ?? []) found.push(`a Latin word: ${word}`);
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(axeSource);
  const violations = (await page.evaluate(`axe
    .run(document, { resultTypes: ['violations'] })
    .then((result) => result.violations.map((violation) =>
      violation.impact + ' ' + violation.id + ': ' + violation.help + ' (' +
        violation.nodes.map((node) => node.target.join(' ')).join('; ') + ')'))`)) as string[];
  return [...found, ...violations.map((violation) => `axe ${violation}`)];
}

const h1 = (page: Page) => page.textContent('h1');

/** The link of the one confirmation mail `address` got, once it has come. */
async function confirmationLink(address: string): Promise<string> {
  const mail = await eventually(async () => smtp.mailsTo(address)[0], `the confirmation mail to ${address}`, 20_000);
  expect(smtp.mailsTo(address)).toHaveLength(1);
  const link = /(https?:\/\/\S+\/email\/confirm\?token=\S+)/.exec(mail.text)?.[1];
  if (link === undefined) throw new Error(`no confirmation link in ${mail.text}`);
  expect(new URL(link).origin).toBe(stack.url);
  return link;
}

describe('the e-mail pages in a browser', () => {
  const walks: [string, BrowserContextOptions][] = [
    ['a 360 px phone', ANDROID_360],
    ['a 1280 px computer', DESKTOP.context],
  ];
  for (const [index, [name, options]] of walks.entries()) {
    it(`signs up, confirms with the button and unsubscribes on ${name}`, async () => {
      const groupId = groups[index] as number;
      const source = `group:${groupId}`;
      const address = `reader${index}@student.example.edu`;
      const { page, errors } = await person(options);

      await typeAddress(page, groupId, address);
      expect(await press(page, 'form.email-subscribe button[type="submit"]')).toBe(200);
      expect(await h1(page)).toBe('Проверьте почту');
      const sent = (await page.textContent('main')) ?? '';
      expect(sent).toContain(`Мы отправили письмо на ${address}.`);
      expect(sent).toContain('нажмите «Подтвердить подписку»');
      expect(await page.getAttribute('main a', 'href')).toBe(`/timetables/groups/${groupId}`);
      expect(await problems(page, address)).toEqual([]);

      // Opening the mail's link, as a mail scanner also does, shows one button and confirms nothing.
      expect((await page.goto(await confirmationLink(address)))?.status()).toBe(200);
      expect(await h1(page)).toBe('Подтвердите подписку');
      expect(await page.locator('button').allTextContents()).toEqual(['Подтвердить подписку']);
      expect(await stack.ctx.mailboxes.hasAny(source)).toBe(false);
      expect(await problems(page)).toEqual([]);

      expect(await press(page, 'main button')).toBe(200);
      expect(await h1(page)).toBe('Подписка подтверждена');
      expect(await page.getAttribute('main a.button', 'href')).toBe(`/timetables/groups/${groupId}`);
      const [mailbox, ...others] = await stack.ctx.mailboxes.ofSource(source);
      expect(others).toEqual([]);
      expect(await problems(page)).toEqual([]);

      // The link every mail of this subscription ends with, made as the e-mail channel makes it.
      const token = await stack.ctx.mailboxes.unsubscribeToken(mailbox?.mailboxId ?? '', source);
      if (token === undefined) throw new Error('the confirmed subscription has no unsubscribe token');
      expect((await page.goto(tokenUrl(stack.ctx.config.publicUrl, UNSUBSCRIBE_PATH, token)))?.status()).toBe(200);
      expect(await h1(page)).toBe('Отписаться от писем');
      expect(await page.locator('button').allTextContents()).toEqual(['Отписаться']);
      expect(await stack.ctx.mailboxes.hasAny(source)).toBe(true);
      expect(await problems(page)).toEqual([]);

      expect(await press(page, 'main button')).toBe(200);
      expect(await h1(page)).toBe('Вы отписались');
      expect(await page.getAttribute('main a', 'href')).toBe(`/timetables/groups/${groupId}`);
      expect(await stack.ctx.mailboxes.hasAny(source)).toBe(false);
      expect(await problems(page)).toEqual([]);
      expect(errors).toEqual([]);
      await page.context().close();
    }, 60_000);
  }

  it('keeps a bad address typed on a 360 px phone, says what is wrong in Russian, and takes it corrected', async () => {
    const groupId = groups[2] as number;
    const { page, errors } = await person(ANDROID_360);
    // The phone's own check takes an address without a dot in its domain; the service does not.
    const typed = 'ivanov@student';
    await typeAddress(page, groupId, typed);
    await page.check('#notify-digest');
    expect(await press(page, 'form.email-subscribe button[type="submit"]')).toBe(400);
    expect(await h1(page)).toBe('Уведомления на почту');
    expect(await page.textContent('#email-error')).toBe(
      'Это не похоже на адрес почты: нужен вид имя@домен, например ivanov@student.example.ru.',
    );
    expect(await page.inputValue('#email-address')).toBe(typed);
    expect(await page.getAttribute('#email-address', 'aria-invalid')).toBe('true');
    expect(await page.isChecked('#email-digest')).toBe(true);
    expect(await page.evaluate('document.activeElement?.id')).toBe('email-address');
    expect(await problems(page, 'ivanov@student.example.ru')).toEqual([]);
    expect(smtp.mailsTo(typed)).toEqual([]);

    await page.fill('#email-address', `${typed}.example.edu`);
    expect(await press(page, 'form.email-subscribe button[type="submit"]')).toBe(200);
    expect(await h1(page)).toBe('Проверьте почту');
    expect(await problems(page, `${typed}.example.edu`)).toEqual([]);
    await confirmationLink(`${typed}.example.edu`);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});
