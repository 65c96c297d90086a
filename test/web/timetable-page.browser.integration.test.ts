/**
 * A group's and a teacher's page in a real browser: the first visit fetches the timetable, the options rewrite
 * the feed URL, the webcal and Google links, the QR code and the preview in place, the copy button copies the
 * feed URL, nothing breaks the CSP, and the page fits a 360 px screen.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, waitUntil } from '../../testkit/poll.ts';
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

/** A page that records console errors (a CSP violation is one), with the clipboard allowed. */
async function openPage(width = 390): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width, height: 800 }, locale: 'ru-RU' });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.url });
  const page = await context.newPage();
  const errors: string[] = [];
  watchPageErrors(page, errors);
  return { context, page, errors };
}

async function simulatorGroup(): Promise<{ id: number; name: string }> {
  const { groups } = (await (await fetch(`${stack.simulator.url}/_sim/groups`)).json()) as {
    groups: { id: number; name: string; entryCount: number }[];
  };
  const group = groups.find((candidate) => candidate.entryCount > 5);
  if (group === undefined) throw new Error('the simulator has no group with classes');
  return group;
}

const feedUrl = (page: Page) => page.inputValue('#feed-url');
const href = (page: Page, link: string) => page.getAttribute(`[data-link="${link}"]`, 'href');
const qr = (page: Page) => page.innerHTML('[data-qr]');

describe('a timetable page in a browser', () => {
  it('shows a group, rewrites every link and the QR code as options change, and copies the feed URL', async () => {
    const group = await simulatorGroup();
    const { context, page, errors } = await openPage();
    await page.goto(`${stack.url}/timetables/groups/${group.id}`);
    expect(await page.textContent('h1')).toBe(group.name);
    const parities = await page.locator('.week .parity').allTextContents();
    expect(parities).toHaveLength(2);
    expect(new Set(parities)).toEqual(new Set(['нечётная неделя', 'чётная неделя']));

    const plain = `${stack.url}/feeds/groups/${group.id}.ics`;
    expect(await feedUrl(page)).toBe(plain);
    expect(await href(page, 'webcal')).toBe(plain.replace(/^http:/, 'webcal:'));
    const qrBefore = await qr(page);
    expect(qrBefore).toMatch(/^<svg/);

    await page.selectOption('#opt-alarm', '15');
    await waitUntil(async () => (await feedUrl(page)).includes('alarm=15'), 'the feed URL to take the reminder');
    const withAlarm = await feedUrl(page);
    expect(withAlarm).toBe(`${plain}?alarm=15`);
    expect(await href(page, 'webcal')).toBe(withAlarm.replace(/^http:/, 'webcal:'));
    expect(await href(page, 'google')).toBe(
      `https://calendar.google.com/calendar/r?cid=${encodeURIComponent(withAlarm.replace(/^http:/, 'webcal:'))}`,
    );
    expect(await qr(page)).not.toBe(qrBefore);
    expect(await page.textContent('dd[data-preview="alarm"]')).toBe('за 15 минут до начала');
    expect(new URL(page.url()).search).toBe('?alarm=15');

    const kind = await page.locator('input[name="exclude"]').first().getAttribute('value');
    expect(kind).not.toBeNull();
    await page.locator('input[name="exclude"]').first().check();
    await waitUntil(async () => (await feedUrl(page)).includes('exclude='), 'the feed URL to hide a kind');
    expect(new URL(await feedUrl(page)).searchParams.get('exclude')).toBe(kind);

    await page.fill('#opt-title', '{subject} {nope}');
    await eventually(
      async () => ((await page.isVisible('[data-field-error="title"]')) ? true : undefined),
      'the unknown placeholder refused',
    );
    // The page is Russian, and so is the refusal its script shows beside the field (the preview answers in the
    // page's language); the field is marked invalid and keeps what was typed.
    expect(await page.textContent('[data-field-error="title"]')).toMatch(
      /^Неизвестная подстановка \{nope\}\. Можно использовать: \{предмет\} \{вид\}/,
    );
    expect(await page.getAttribute('#opt-title', 'aria-invalid')).toBe('true');
    expect(await page.inputValue('#opt-title')).toBe('{subject} {nope}');
    expect(await page.textContent('[data-options-error]')).toBe('Настройки не применены: исправьте отмеченное поле.');
    await page.fill('#opt-title', '{kind}: {subject}');
    await waitUntil(async () => (await feedUrl(page)).includes('title='), 'the feed URL to take the title');
    expect(await page.isVisible('[data-options-error]')).toBe(false);
    expect(await page.isVisible('[data-field-error="title"]')).toBe(false);
    expect(await page.getAttribute('#opt-title', 'aria-invalid')).toBeNull();
    const title = (await page.textContent('dd[data-preview="title"]')) ?? '';
    expect(title).toMatch(/^\S.*: \S/);

    await page.click('button[data-copy="#feed-url"]');
    await waitUntil(
      async () => (await page.evaluate('navigator.clipboard.readText()')) === (await feedUrl(page)),
      'the feed URL copied',
    );
    expect(await page.textContent('button[data-copy]')).toBe('Скопировано');
    // The refused placeholder's 400 is the one error Chromium logs (for any failed request); nothing else.
    expect(errors).toEqual([expect.stringContaining('status of 400')]);
    await context.close();
  });

  it('says a bad option in Russian beside its field, keeps every value, and takes Russian placeholders', async () => {
    const group = await simulatorGroup();
    const { context, page, errors } = await openPage(390);
    await page.goto(`${stack.url}/timetables/groups/${group.id}`);
    const subgroups = await page
      .locator('#opt-subgroup option:not([value=""])')
      .evaluateAll((options) => options.map((option) => option.getAttribute('value') ?? ''));
    const subgroup = subgroups[0];
    const query = `title=${encodeURIComponent('{predmet}')}&alarm=30${subgroup === undefined ? '' : `&subgroup=${subgroup}`}`;
    const refused = await page.goto(`${stack.url}/timetables/groups/${group.id}?${query}`);
    expect(refused?.status()).toBe(400);
    expect(await page.isVisible('[data-field-error="title"]')).toBe(true);
    expect(await page.textContent('[data-field-error="title"]')).toBe(
      'Неизвестная подстановка {predmet}. Можно использовать: {предмет} {вид} {аудитория} {корпус} {преподаватель} {группы} {примечание}.',
    );
    // Beside the title field: in its field box, described by it.
    expect(await page.locator('.field:has(#opt-title) [data-field-error="title"]').count()).toBe(1);
    expect(await page.getAttribute('#opt-title', 'aria-describedby')).toContain('opt-title-error');
    expect(await page.getAttribute('#opt-title', 'aria-invalid')).toBe('true');
    expect(await page.inputValue('#opt-title')).toBe('{predmet}');
    expect(await page.inputValue('#opt-alarm')).toBe('30');
    if (subgroup !== undefined) expect(await page.inputValue('#opt-subgroup')).toBe(subgroup);
    expect(await page.isVisible('[data-field-error="alarm"]')).toBe(false);
    expect(await page.textContent('body')).not.toContain('query parameter');
    expect(await sidewaysOverflow(page)).toBeLessThanOrEqual(0);

    // The Russian placeholder is taken, and the event reads as with the English one.
    await page.fill('#opt-title', '{вид}: {предмет}');
    await waitUntil(async () => (await feedUrl(page)).includes('title='), 'the feed URL to take the title');
    expect(await page.isVisible('[data-field-error="title"]')).toBe(false);
    expect(new URL(await feedUrl(page)).searchParams.get('title')).toBe('{kind}: {subject}');
    const russianTitle = await page.textContent('dd[data-preview="title"]');
    await page.fill('#opt-title', '{kind}: {subject}');
    await page.waitForTimeout(600);
    expect(await page.textContent('dd[data-preview="title"]')).toBe(russianTitle);
    expect(russianTitle).toMatch(/^\S.*: \S/);
    // The page's own 400 is the one error Chromium logs; nothing else.
    expect(errors).toEqual([expect.stringContaining('status of 400')]);
    await context.close();
  });

  it('shows a teacher by full name', async () => {
    const group = await simulatorGroup();
    // A teacher of the group's classes: its page fetches the group first (a stored one answers at once).
    expect((await fetch(`${stack.url}/timetables/groups/${group.id}`)).status).toBe(200);
    const snapshot = await eventually(() => stack.ctx.snapshots.snapshot(`group:${group.id}`), "the group's snapshot");
    const teacher = snapshot.entries.find((entry) => (entry.teacher.id ?? 0) > 0)?.teacher;
    if (teacher === undefined) throw new Error('no class with a teacher');
    const { context, page, errors } = await openPage(1280);
    await page.goto(`${stack.url}/timetables/employees/${teacher.id}`);
    expect(await page.textContent('h1')).toBe(
      [teacher.lastName, teacher.firstName, teacher.middleName].filter((part) => part !== '').join(' '),
    );
    expect(await feedUrl(page)).toBe(`${stack.url}/feeds/employees/${teacher.id}.ics`);
    await page.selectOption('#opt-alarm', '60');
    await waitUntil(async () => (await feedUrl(page)).endsWith('?alarm=60'), 'the feed URL to take the reminder');
    expect(errors).toEqual([]);
    await context.close();
  });

  it('fits a 360 px screen without sideways scrolling, and answers unknown ids with the search box', async () => {
    const group = await simulatorGroup();
    const { context, page, errors } = await openPage(360);
    await page.goto(`${stack.url}/timetables/groups/${group.id}`);
    expect(await sidewaysOverflow(page)).toBeLessThanOrEqual(0);
    const missing = await page.goto(`${stack.url}/timetables/groups/not-a-number`);
    expect(missing?.status()).toBe(404);
    expect(await page.isVisible('form.search input[name="q"]')).toBe(true);
    expect(errors.filter((error) => !error.includes('404'))).toEqual([]);
    await context.close();
  });
});
