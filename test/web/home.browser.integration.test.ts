/**
 * `/` in a real browser: Russian by default, English on request, no CSP violation, usable at 360 px; an example
 * group that exists here, where a student finds their token; an unknown page address is the 404 page.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, sidewaysOverflow, WebStack, watchPageErrors } from '../support/browser.ts';
import { TEST_ADMIN_TOKEN } from '../support/service.ts';

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

  it('gives as its example a group of this deployment, or a neutral hint while it knows none', async () => {
    const { page, errors } = await openPage();
    const box = page.getByLabel('Группа или преподаватель');
    await page.goto(`${stack.url}/`);
    expect(await box.getAttribute('placeholder')).toBe('Номер группы или фамилия преподавателя');
    await stack.ctx.directory.record(4242, '77-777');
    await page.goto(`${stack.url}/`);
    expect(await box.getAttribute('placeholder')).toBe('Например, 77-777 или Иванов');
    await page.goto(`${stack.url}/?q=${encodeURIComponent('11-111')}`);
    expect(await page.locator('#search-results').textContent()).toContain(
      'Группа «11-111» не найдена. Проверьте номер: например, 77-777.',
    );
    expect(errors).toEqual([]);
  });

  it('says where a student finds the token, and that the feed holds their own subgroup', async () => {
    const { page } = await openPage();
    await page.goto(`${stack.url}/`);
    const personal = (await page.locator('section[aria-labelledby="personal-title"]').textContent()) ?? '';
    expect(personal).toContain('информационная система университета');
    expect(personal).toContain('в личном кабинете');
    expect(personal).toContain('занятия вашей подгруппы');
    expect(personal).not.toContain('всеми подгруппами');
    const described = (await page.getByLabel('Токен университета').getAttribute('aria-describedby')) ?? '';
    expect(described.split(' ')).toContain('credential-where');
  });

  it('opens a refused sign-in at its error on a 390×844 phone, the field focused', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: 'ru-RU' });
    const page = await context.newPage();
    const errors: string[] = [];
    watchPageErrors(page, errors);
    await page.goto(`${stack.url}/`);
    await page.getByLabel('Токен университета').fill('not-a-credential');
    await Promise.all([page.waitForURL(/#sign-in$/), page.getByRole('button', { name: 'Войти' }).click()]);
    const error = page.locator('#credential-error');
    await error.waitFor();
    const box = await error.boundingBox();
    expect(box).not.toBeNull();
    expect(box?.y ?? -1).toBeGreaterThanOrEqual(0);
    expect((box?.y ?? 0) + (box?.height ?? 0)).toBeLessThanOrEqual(844);
    // Focused by the page's script once loaded (browsers skip autofocus on a page opened at an anchor).
    await expect
      .poll(() => page.getByLabel('Токен университета').evaluate((field) => field.matches(':focus')))
      .toBe(true);
    // The refusal's own status is the one console line (a 422 page), nothing else.
    expect(errors.filter((error) => !error.includes('status of 422'))).toEqual([]);
    await context.close();
  });

  it('answers an unknown address under /timetables/ with the 404 page in the page language', async () => {
    const { page, errors } = await openPage();
    const response = await page.goto(`${stack.url}/timetables/nonsense`);
    expect(response?.status()).toBe(404);
    expect(response?.headers()['content-type']).toMatch(/^text\/html/);
    expect(await page.getAttribute('html', 'lang')).toBe('ru');
    expect(await page.textContent('h1')).toBe('Страница не найдена');
    expect(await page.getByLabel('Группа или преподаватель').count()).toBe(1);
    const english = await page.goto(`${stack.url}/timetables/groups/1/nonsense?lang=en`);
    expect(english?.status()).toBe(404);
    expect(await page.textContent('h1')).toBe('Page not found');
    // The API's addresses keep their JSON 404.
    for (const path of ['/api/nonsense', '/feeds/nonsense', '/admin/nonsense']) {
      const json = await fetch(`${stack.url}${path}`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
      expect(json.status, path).toBe(404);
      expect(json.headers.get('content-type'), path).toMatch(/^application\/json/);
      expect(((await json.json()) as { code: string }).code, path).toBe('ROUTE_NOT_FOUND');
    }
    expect(errors.filter((error) => !/Failed to load resource/.test(error))).toEqual([]);
  });
});
