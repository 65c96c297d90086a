/**
 * A group's, a teacher's and the personal page in a real browser: the first visit fetches the timetable, the
 * options rewrite the feed URL, the webcal and Google links, the QR code and the preview in place, the copy
 * button copies the feed URL, nothing breaks the CSP, and the page fits a 360 px screen. On a phone (an iPhone's
 * and an Android phone's User-Agent at 390×844) «Добавить в календарь» is on the first screen and opens that
 * phone's steps first, without a QR code; on a computer (1280×900) it is on the first screen with the QR code.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUp } from '../../src/subscriptions/personal.ts';
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

const AGENTS = {
  iphone:
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  android:
    'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36',
  windows:
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.2592.68',
};

/** A page that records console errors (a CSP violation is one), with the clipboard allowed. */
async function openPage(
  width = 390,
  screen: { height?: number; userAgent?: string } = {},
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({
    viewport: { width, height: screen.height ?? 800 },
    locale: 'ru-RU',
    ...(screen.userAgent === undefined ? {} : { userAgent: screen.userAgent }),
  });
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

/** A teacher of the group's classes (the group's page is fetched first, so that its snapshot is there). */
async function simulatorTeacher(group: { id: number }) {
  expect((await fetch(`${stack.url}/timetables/groups/${group.id}`)).status).toBe(200);
  const snapshot = await eventually(() => stack.ctx.snapshots.snapshot(`group:${group.id}`), "the group's snapshot");
  const teacher = snapshot.entries.find((entry) => (entry.teacher.id ?? 0) > 0)?.teacher;
  if (teacher === undefined) throw new Error('no class with a teacher');
  return teacher;
}

let signedIn: Promise<{ name: string; value: string; url: string }> | undefined;

/** A signed-in student's cookie (one student for the file), once the personal timetable is fetched. */
function personalCookie(): Promise<{ name: string; value: string; url: string }> {
  signedIn ??= signIn();
  return signedIn;
}

async function signIn(): Promise<{ name: string; value: string; url: string }> {
  const { users } = (await (await fetch(`${stack.simulator.url}/_sim/users`)).json()) as { users: { token: string }[] };
  const credential = users[1]?.token;
  if (credential === undefined) throw new Error('the simulator has no user');
  const { subscription, token } = await signUp(stack.ctx, credential);
  await eventually(async () => {
    const { snapshot, published } = await stack.ctx.snapshots.load(subscription.source);
    return snapshot && published ? true : undefined;
  }, 'the personal timetable fetched');
  return { name: 'tts-personal', value: `${subscription.id}.${token}`, url: stack.url };
}

/** The bottom edge of the calendar action, in CSS pixels from the top of the page (scrolled to the top). */
async function actionBottom(page: Page): Promise<number> {
  const box = await page.locator('[data-calendar-action]').boundingBox();
  if (box === null) throw new Error(`no visible calendar action on ${page.url()}`);
  return box.y + box.height;
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

    // A reminder changes no class in the list: no note about it.
    const listNote = page.locator('[data-weeks-pending]');
    await page.selectOption('#opt-alarm', '15');
    await waitUntil(async () => (await feedUrl(page)).includes('alarm=15'), 'the feed URL to take the reminder');
    expect(await listNote.isHidden()).toBe(true);
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
    // The links follow at once, the list of classes only after «Применить»: a note says so, beside the list,
    // while what is chosen differs from what it lists.
    expect(await listNote.isVisible()).toBe(true);
    expect(await listNote.textContent()).toBe('Список занятий обновится после «Применить».');
    expect(await page.locator('section.weeks [data-weeks-pending]').count()).toBe(1);
    await page.locator('input[name="exclude"]').first().uncheck();
    await waitUntil(async () => listNote.isHidden(), 'the note to go once the list shows what is chosen');
    await page.locator('input[name="exclude"]').first().check();
    await waitUntil(async () => listNote.isVisible(), 'the note back');

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

  it('opens at the refused title after a full-page submit on a phone, with the title focused', async () => {
    const group = await simulatorGroup();
    const { context, page, errors } = await openPage(390, { height: 844, userAgent: AGENTS.iphone });
    await page.goto(`${stack.url}/timetables/groups/${group.id}`);
    await page.fill('#opt-title', '{предмет');
    // Enter submits the form itself (GET), as a phone's «Go» key does: the page answering it is a new one.
    await Promise.all([page.waitForURL(/title=/), page.press('#opt-title', 'Enter')]);
    await page.waitForLoadState('load');
    const error = '[data-field-error="title"]';
    expect(await page.textContent(error)).toBe(
      'Подстановка «{предмет» не закрыта: допишите «}», чтобы получилось {предмет}.',
    );
    expect(await page.inputValue('#opt-title')).toBe('{предмет');
    expect(await page.evaluate('document.activeElement?.id')).toBe('opt-title');
    // The reason and the field are on the first screen, without scrolling by hand.
    const box = await page.locator(error).evaluate((element) => element.getBoundingClientRect().toJSON());
    const field = await page.locator('#opt-title').evaluate((element) => element.getBoundingClientRect().toJSON());
    expect(field.top).toBeGreaterThanOrEqual(0);
    expect(box.bottom).toBeLessThanOrEqual(844);
    expect(await page.evaluate('window.scrollY')).toBeGreaterThan(0);
    expect(errors.every((text) => text.includes('status of 400'))).toBe(true);
    await context.close();
  });

  it('shows a teacher by full name', async () => {
    // A teacher of the group's classes: its page fetches the group first (a stored one answers at once).
    const teacher = await simulatorTeacher(await simulatorGroup());
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

  it('puts «Добавить в календарь» on a phone’s first screen, opening its own steps first, without a QR code', async () => {
    const group = await simulatorGroup();
    const teacher = await simulatorTeacher(group);
    const cookie = await personalCookie();
    const phones = [
      { userAgent: AGENTS.iphone, first: 'apple', steps: 'Открыть в Календаре' },
      { userAgent: AGENTS.android, first: 'android', steps: 'не умеет добавлять календарь по адресу' },
    ];
    for (const phone of phones) {
      const { context, page, errors } = await openPage(390, { height: 844, userAgent: phone.userAgent });
      await context.addCookies([cookie]);
      for (const path of [
        `/timetables/groups/${group.id}`,
        `/timetables/employees/${teacher.id}`,
        '/timetables/personal',
      ]) {
        const where = `${phone.first} ${path}`;
        await page.goto(`${stack.url}${path}`);
        expect(await page.locator('[data-calendar-action]').count(), where).toBe(1);
        expect(await page.textContent('[data-calendar-action]'), where).toBe('Добавить в календарь');
        expect(await actionBottom(page), where).toBeLessThanOrEqual(844);
        // Closed at first: the classes follow it on the first screens.
        expect(await page.isVisible('#feed-url'), where).toBe(false);
        await page.click('[data-calendar-action]');
        expect(await page.isVisible('#feed-url'), where).toBe(true);
        const firstWay = page.locator('details[data-calendar]').first();
        expect(await firstWay.getAttribute('data-calendar'), where).toBe(phone.first);
        expect(await firstWay.locator('.way-body').isVisible(), where).toBe(true);
        expect(await firstWay.textContent(), where).toContain(phone.steps);
        // Another calendar's steps are one tap away.
        const yandex = page.locator('details[data-calendar="yandex"]');
        expect(await yandex.locator('.way-body').isVisible(), where).toBe(false);
        await yandex.locator('summary').click();
        expect(await yandex.textContent(), where).toContain('calendar.yandex.ru');
        expect(await page.locator('[data-qr]').count(), where).toBe(0);
        expect(await page.textContent('body'), where).not.toContain('Наведите камеру');
        expect(await sidewaysOverflow(page), where).toBeLessThanOrEqual(0);
      }
      // Without a QR code on the page, changing an option still rewrites the links, and nothing fails.
      await page.goto(`${stack.url}/timetables/groups/${group.id}`);
      await page.selectOption('#opt-alarm', '15');
      await waitUntil(async () => (await feedUrl(page)).endsWith('?alarm=15'), 'the feed URL to take the reminder');
      expect(await page.getAttribute('[data-link="google"]', 'href')).toContain(encodeURIComponent('?alarm=15'));
      expect(errors).toEqual([]);
      await context.close();
    }
  });

  it('shows the action and the QR code on a computer’s first screen', async () => {
    const group = await simulatorGroup();
    const teacher = await simulatorTeacher(group);
    const { context, page, errors } = await openPage(1280, { height: 900, userAgent: AGENTS.windows });
    await context.addCookies([await personalCookie()]);
    for (const path of [
      `/timetables/groups/${group.id}`,
      `/timetables/employees/${teacher.id}`,
      '/timetables/personal',
    ]) {
      await page.goto(`${stack.url}${path}`);
      expect(await actionBottom(page), path).toBeLessThanOrEqual(900);
      expect(await page.isVisible('[data-qr] svg'), path).toBe(true);
      expect(await page.isVisible('#feed-url'), path).toBe(true);
      expect(await page.getAttribute('details[data-calendar]:first-of-type', 'data-calendar'), path).toBe('google');
      expect(await page.textContent('figure.qr figcaption'), path).toBe(
        'Наведите камеру телефона, чтобы открыть адрес календаря.',
      );
    }
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
