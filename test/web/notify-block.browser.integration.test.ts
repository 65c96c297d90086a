/**
 * «Уведомления об изменениях» in a real browser, on a deployment with all three channels (the MAX and Telegram
 * bots' names known, e-mail set up): on a 360 px phone the block is closed under the calendar menu and opens on
 * a tap, listing MAX, Telegram and the e-mail form in that order without sideways scrolling; choosing options
 * rewrites both messengers' links and the form's hidden fields in place; and axe-core finds no violation of any
 * impact in the block, in light and dark colours, on a phone and on a computer.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { UserFromGetMe } from 'grammy/types';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { createTelegramBot } from '../../src/notify/telegram/bot.ts';
import { botContextDeps } from '../../src/runtime/telegram.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { DESKTOP } from '../../testkit/screens.ts';
import { launchBrowser, sidewaysOverflow, WebStack, watchPageErrors } from '../support/browser.ts';
import { namedMaxBot } from '../support/named-max-bot.ts';

const axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const ANDROID_360: BrowserContextOptions = {
  viewport: { width: 360, height: 780 },
  userAgent:
    'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36',
  isMobile: true,
  hasTouch: true,
  locale: 'ru-RU',
};

let stack: WebStack;
let browser: Browser;
/** A group whose page offers subgroups and kinds to hide. */
let groupId: number;

beforeAll(async () => {
  stack = await WebStack.start({
    env: { SMTP_URL: 'smtp://relay:secret@127.0.0.1:2525', MAIL_FROM: 'Расписание <timetable@example.edu>' },
    app: (ctx) => ({
      telegram: createTelegramBot(
        { telegramBotToken: '42:test-token', telegramApiRoot: 'http://127.0.0.1:9' },
        { ...botContextDeps(ctx), logger: silentLogger() },
        {
          botInfo: { id: 42, is_bot: true, first_name: 'Расписание', username: 'timetable_test_bot' } as UserFromGetMe,
        },
      ),
      max: namedMaxBot('id7700000001_bot'),
    }),
  });
  browser = await launchBrowser();
  groupId = await groupWithSubgroups();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

/** The first simulator group whose page (fetched on the first visit) offers a subgroup and a kind to hide. */
async function groupWithSubgroups(): Promise<number> {
  const { groups } = (await (await fetch(`${stack.simulator.url}/_sim/groups`)).json()) as {
    groups: { id: number; entryCount: number }[];
  };
  for (const group of groups.filter((candidate) => candidate.entryCount > 5)) {
    const body = await (await fetch(`${stack.url}/timetables/groups/${group.id}`)).text();
    if (body.includes('id="opt-subgroup"') && body.includes('name="exclude"')) return group.id;
  }
  throw new Error('no simulator group with subgroups and kinds');
}

async function open(options: BrowserContextOptions): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const errors: string[] = [];
  watchPageErrors(page, errors);
  const response = await page.goto(`${stack.url}/timetables/groups/${groupId}`);
  expect(response?.status()).toBe(200);
  return { page, errors };
}

const href = (page: Page, link: string) => page.getAttribute(`[data-link="${link}"]`, 'href');
const field = (page: Page, name: string) => page.inputValue(`form.email-subscribe input[name="${name}"]`);

/** axe-core's violations of any impact inside the block (evaluated through DevTools, outside the page's CSP). */
async function violations(page: Page): Promise<string[]> {
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(axeSource);
  return (await page.evaluate(`axe
    .run('section.notify', { resultTypes: ['violations'] })
    .then((result) => result.violations.map((violation) =>
      violation.impact + ' ' + violation.id + ': ' + violation.help + ' (' +
        violation.nodes.map((node) => node.target.join(' ')).join('; ') + ')'))`)) as string[];
}

describe('the notifications block in a browser', () => {
  it('opens on a 360 px phone with MAX, Telegram and the e-mail form, and follows the options chosen', async () => {
    const { page, errors } = await open(ANDROID_360);
    const summary = page.locator('#notify-action');
    expect(await summary.textContent()).toBe('Уведомления об изменениях');
    // Closed on a phone: the classes follow the two actions closely.
    expect(await page.isVisible('a[data-link="max"]')).toBe(false);
    await summary.click();
    const order = await page
      .locator('section.notify [data-channel]')
      .evaluateAll((elements) => elements.map((element) => element.getAttribute('data-channel')));
    expect(order).toEqual(['max', 'telegram', 'email']);
    for (const selector of ['a[data-link="max"]', 'a[data-link="telegram"]', '#notify-email', '#notify-digest'])
      expect(await page.isVisible(selector), selector).toBe(true);
    expect(await sidewaysOverflow(page)).toBeLessThanOrEqual(0);
    // Every control of the block is inside the screen's width, and big enough to tap.
    for (const selector of ['a[data-link="max"]', '#notify-email', 'form.email-subscribe button[type="submit"]']) {
      const box = await page.locator(selector).boundingBox();
      expect(box, selector).not.toBeNull();
      expect((box?.x ?? 0) + (box?.width ?? 0), selector).toBeLessThanOrEqual(360);
      expect(box?.height ?? 0, selector).toBeGreaterThanOrEqual(44);
    }
    const source = `group%3A${groupId}`;
    expect(await href(page, 'max')).toBe(`/max/start?source=${source}`);
    expect(await field(page, 'subgroup')).toBe('');

    const subgroup = await page.locator('#opt-subgroup option').nth(1).getAttribute('value');
    if (subgroup === null) throw new Error('no subgroup to choose');
    await page.selectOption('#opt-subgroup', subgroup);
    await waitUntil(async () => (await field(page, 'subgroup')) === subgroup, "the form's subgroup to follow");
    expect(await href(page, 'max')).toBe(`/max/start?source=${source}&subgroup=${subgroup}`);
    expect(await href(page, 'telegram')).toBe(`/telegram/start?source=${source}&subgroup=${subgroup}`);

    const kind = (await page.locator('form[data-options] input[name="exclude"]').first().getAttribute('value')) ?? '';
    await page.locator('form[data-options] input[name="exclude"]').first().check();
    await waitUntil(async () => (await field(page, 'exclude')) === kind, "the form's hidden kinds to follow");
    const query = new URLSearchParams({ source: `group:${groupId}`, subgroup, exclude: kind }).toString();
    expect(await href(page, 'max')).toBe(`/max/start?${query}`);
    expect(await href(page, 'telegram')).toBe(`/telegram/start?${query}`);
    expect(await field(page, 'source')).toBe(`group:${groupId}`);
    expect(await field(page, 'lang')).toBe('ru');

    await page.locator('form[data-options] input[name="exclude"]').first().uncheck();
    await page.selectOption('#opt-subgroup', '');
    await waitUntil(async () => (await field(page, 'subgroup')) === '', "the form's subgroup cleared");
    await waitUntil(async () => (await field(page, 'exclude')) === '', "the form's hidden kinds cleared");
    expect(await href(page, 'max')).toBe(`/max/start?source=${source}`);
    expect(errors).toEqual([]);
    await page.context().close();
  });

  for (const [name, options] of [
    ['a 360 px phone', ANDROID_360],
    ['a 360 px phone in dark mode', { ...ANDROID_360, colorScheme: 'dark' }],
    ['a computer', DESKTOP.context],
    ['a computer in dark mode', { ...DESKTOP.context, colorScheme: 'dark' }],
  ] as const) {
    it(`passes axe-core with no violation on ${name}`, async () => {
      const { page, errors } = await open(options);
      if (!(await page.isVisible('#notify-email'))) await page.click('#notify-action');
      expect(await page.isVisible('#notify-email')).toBe(true);
      expect(await violations(page)).toEqual([]);
      expect(errors).toEqual([]);
      await page.context().close();
    });
  }
});
