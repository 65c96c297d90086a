/** `/` in a real browser: Russian by default, English on request, no CSP violation, usable at 360 px. */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, sidewaysOverflow, WebStack, watchPageErrors } from '../support/browser.ts';

let stack: WebStack;
let browser: Browser;

beforeAll(async () => {
  stack = await WebStack.start();
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

/** A page that fails the test on any console error (a CSP violation is one). */
async function openPage(width = 390, locale = 'ru-RU'): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width, height: 800 }, locale });
  const page = await context.newPage();
  const errors: string[] = [];
  watchPageErrors(page, errors);
  return { page, errors };
}

describe('the home page', () => {
  it('is Russian by default and switches to English, remembering the choice', async () => {
    const { page, errors } = await openPage();
    await page.goto(`${stack.url}/`);
    expect(await page.getAttribute('html', 'lang')).toBe('ru');
    expect(await page.textContent('h1')).toBe('Найти расписание');
    await page.getByRole('link', { name: 'English' }).click();
    expect(await page.textContent('h1')).toBe('Find a timetable');
    await page.goto(`${stack.url}/`);
    expect(await page.getAttribute('html', 'lang')).toBe('en');
    expect(errors).toEqual([]);
  });

  it('answers English to a browser that prefers it', async () => {
    const { page } = await openPage(1280, 'en-GB');
    await page.goto(`${stack.url}/`);
    expect(await page.getAttribute('html', 'lang')).toBe('en');
  });

  it('fits a 360 px screen without sideways scrolling', async () => {
    const { page } = await openPage(360);
    await page.goto(`${stack.url}/`);
    expect(await sidewaysOverflow(page)).toBeLessThanOrEqual(0);
  });
});
