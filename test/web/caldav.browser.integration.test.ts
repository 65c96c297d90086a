/**
 * CalDAV push from the page, in a real browser on a 390×844 phone screen, against a real Radicale: from a
 * group's page to the connect form, a wrong app password said at once in Russian with the form kept (but not the
 * password), the right one landing on the manage page with the calendar made on the server, the state after the
 * first push, a new app password after the old one stopped working, and Disconnect deleting our calendar. No
 * page logs a console error (a CSP violation is one), and each fits the screen's width.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUp } from '../../src/subscriptions/personal.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { type Radicale, startRadicale } from '../../testkit/radicale.ts';
import { launchBrowser, sidewaysOverflow, WebStack, watchPageErrors } from '../support/browser.ts';

const USER = 'student';
const PASSWORD = 'good-app-password-1';
const NEW_PASSWORD = 'good-app-password-2';
/** The login of the options test, whose password no other test changes. */
const OPTIONS_USER = 'options-student';

let stack: WebStack;
let browser: Browser;
let radicale: Radicale;

beforeAll(async () => {
  radicale = await startRadicale({ users: { [USER]: PASSWORD, [OPTIONS_USER]: PASSWORD } });
  // Loopback Radicale takes far more than the production pace of 5 requests a second to one host.
  stack = await WebStack.start({ env: { CALDAV_RATE_LIMIT: '1000' } });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
  await radicale?.close();
});

async function openContext(): Promise<{ context: BrowserContext; errors: string[]; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: 'ru-RU' });
  context.setDefaultTimeout(10_000);
  const errors: string[] = [];
  const page = await context.newPage();
  // The refused password (422) and a refused address (400) are answered so on purpose; the browser logs the status
  // of such a page as an error.
  watchPageErrors(page, errors, /status of (422|400)/);
  return { context, errors, page };
}

async function expectFits(page: Page): Promise<void> {
  expect(await sidewaysOverflow(page), `sideways scroll on ${page.url()}`).toBeLessThanOrEqual(0);
}

/** The manage page's value of a fact (`Статус`, `Последняя отправка`, …). */
function fact(page: Page, term: string): Promise<string | null> {
  return page.locator('dl.facts dt', { hasText: term }).locator('xpath=following-sibling::dd[1]').textContent();
}

/** The element is seen without scrolling: inside the 844 px high screen as the page opened. */
async function expectInFirstScreen(page: Page, selector: string): Promise<void> {
  const box = await page.locator(selector).boundingBox();
  expect(box, `${selector} shown`).not.toBeNull();
  const top = box?.y ?? -1;
  expect(top, `${selector} below the first screen`).toBeGreaterThanOrEqual(0);
  expect(top + (box?.height ?? 0), `${selector} below the first screen`).toBeLessThanOrEqual(844);
}

async function simulatorGroup(): Promise<{ id: number; name: string }> {
  const { groups } = (await (await fetch(`${stack.simulator.url}/_sim/groups`)).json()) as {
    groups: { id: number; name: string; entryCount: number }[];
  };
  const group = groups.find((candidate) => candidate.entryCount > 5);
  if (group === undefined) throw new Error('the simulator has no group with classes');
  return group;
}

const MANAGE_PATH = /\/caldav\/targets\/([A-Za-z0-9_-]{22})$/;

describe('CalDAV push from the page', () => {
  it('connects with a wrong and then the right app password, shows the state, takes a new password, disconnects', async () => {
    const group = await simulatorGroup();
    const { context, errors, page } = await openContext();

    await page.goto(`${stack.url}/timetables/groups/${group.id}`);
    const menu = page.locator('[data-calendar-action]');
    if ((await page.locator('details.calendar-menu[open]').count()) === 0) await menu.click();
    // The Yandex and Apple steps offer push to that provider; below them, one link for every other server.
    expect(await page.locator('a[data-caldav="yandex"]').getAttribute('href')).toBe(
      `/caldav/connect?source=group:${group.id}&preset=yandex#caldav-form`,
    );
    expect(await page.locator('a[data-caldav="icloud"]').count()).toBe(1);
    await page.locator('a[data-caldav="any"]').click();
    await page.waitForURL(/\/caldav\/connect\?source=/);
    expect(await page.locator('h1').textContent()).toBe('Отправлять в календарь сразу');
    expect(await page.locator('p.lead').textContent()).toContain(group.name);
    // Each preset is a link: the page works without script.
    const presets = await page.locator('ul.caldav-presets a').allTextContents();
    expect(presets).toEqual([
      'Яндекс Календарь',
      'iCloud (iPhone, Mac)',
      'Nextcloud',
      'Fastmail',
      'Другой CalDAV-сервер',
    ]);
    await page.locator('a[data-preset="yandex"]').click();
    await page.waitForURL(/preset=yandex/);
    expect(await page.locator('#caldav-form .steps').textContent()).toContain('Пароли приложений');
    expect(await page.locator('#caldav-form').textContent()).toContain('https://caldav.yandex.ru');
    await expectFits(page);

    await page.locator('a[data-preset="other"]').click();
    await page.waitForURL(/preset=other/);
    await page.locator('#caldav-address').fill(radicale.url);
    await page.locator('#caldav-username').fill(USER);
    await page.locator('#caldav-password').fill('a-wrong-app-password');
    await page.locator('form.caldav-connect button[type="submit"]').click();
    const alert = page.locator('#caldav-error');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/^Сервер не принял логин или пароль приложения/);
    // What was typed is kept, the password is not.
    expect(await page.locator('#caldav-address').inputValue()).toBe(radicale.url);
    expect(await page.locator('#caldav-username').inputValue()).toBe(USER);
    expect(await page.locator('#caldav-password').inputValue()).toBe('');
    expect(await page.locator('#caldav-password').getAttribute('aria-invalid')).toBe('true');
    expect(await page.content()).not.toContain('a-wrong-app-password');
    expect(await page.locator('#caldav-password-hint').textContent()).toBe(
      'Введите пароль приложения ещё раз: после отказа поле очищается, пароль нигде не сохранён.',
    );
    expect(await stack.ctx.caldav.targets.idsForSource(`group:${group.id}`)).toEqual([]);
    await expectFits(page);

    // An address that is not https is said in the words of its field, in the first screen, the field focused.
    await page.locator('#caldav-address').fill('ftp://dav.example.org/');
    await page.locator('#caldav-password').fill('whatever');
    await page.locator('form.caldav-connect button[type="submit"]').click();
    await page.waitForURL(`${stack.url}/caldav/connect`);
    expect(await page.locator('#caldav-error').textContent()).toBe('Адрес CalDAV-сервера должен начинаться с https://');
    await expectInFirstScreen(page, '#caldav-error');
    expect(await page.evaluate('document.activeElement.id')).toBe('caldav-address');
    await page.locator('#caldav-address').fill(radicale.url);

    await page.locator('#caldav-password').fill(PASSWORD);
    await page.locator('form.caldav-connect button[type="submit"]').click();
    await page.waitForURL(MANAGE_PATH);
    const id = MANAGE_PATH.exec(page.url())?.[1] ?? '';
    expect(await page.locator('h1').textContent()).toBe('Календарь подключён');
    expect(await fact(page, 'Календарь')).toBe(group.name);
    expect(await fact(page, 'Статус')).toBe('Работает');
    expect(await page.content()).not.toContain(PASSWORD);
    const target = await stack.ctx.caldav.targets.get(id);
    expect(target).toMatchObject({ calendarOwned: true, details: { username: USER }, status: 'active' });
    const slug = `timetable-sync-${id}`;
    expect(existsSync(radicale.collectionDir(USER, slug))).toBe(true);
    await expectFits(page);

    // The first push (the worker's) ends: the page tells when and what it wrote, and nothing is waiting.
    await waitUntil(
      async () => (await stack.ctx.caldav.targets.get(id))?.lastPush !== undefined,
      'the first push',
      30_000,
    );
    await page.reload();
    expect(await fact(page, 'Последняя отправка')).toMatch(/добавлено [1-9]\d*/);
    const inserted = (await stack.ctx.caldav.targets.get(id))?.lastPush?.inserted ?? 0;
    const files = (await readdir(radicale.collectionDir(USER, slug))).filter((name) => name.endsWith('.ics'));
    expect(files.length).toBe(inserted);
    expect(await fact(page, 'Ждут отправки')).toMatch(/^ничего/);

    // The person revokes the app password: the next push is refused and the page asks for a new one.
    await radicale.setPassword(USER, NEW_PASSWORD);
    await stack.ctx.caldav.targets.requestReconcile(id);
    await stack.ctx.queues.pushQueue('caldav').add('caldav-push', { target: id, reason: 'reconcile' });
    await waitUntil(
      async () => (await stack.ctx.caldav.targets.get(id))?.status === 'needs-password',
      'the refused push',
      30_000,
    );
    await page.reload();
    expect(await page.locator('dd[data-status="needs-password"]').textContent()).toMatch(
      /^Нужен новый пароль приложения/,
    );
    await page.locator('#caldav-new-password').fill('still-not-it');
    await page.locator('section[aria-labelledby="password"] button[type="submit"]').click();
    await page.locator('#caldav-password-error').waitFor();
    expect(await page.locator('#caldav-password-error').textContent()).toMatch(/^Сервер не принял логин/);
    await page.locator('#caldav-new-password').fill(NEW_PASSWORD);
    await page.locator('section[aria-labelledby="password"] button[type="submit"]').click();
    await page.locator('p.notice.ok').waitFor();
    expect(await page.locator('p.notice.ok').textContent()).toBe('Пароль принят, отправка возобновлена.');
    expect(await fact(page, 'Статус')).toBe('Работает');

    // Disconnect asks for its confirmation ticked, as deleting a subscription does.
    expect(
      await page.locator('section[aria-labelledby="disconnect"] input[name="confirm"]').getAttribute('required'),
    ).toBe('');
    await page.locator('section[aria-labelledby="disconnect"] input[name="confirm"]').check();
    await page.locator('section[aria-labelledby="disconnect"] button[type="submit"]').click();
    await page.locator('h1', { hasText: 'Календарь отключён' }).waitFor();
    expect(await page.locator('p.notice').textContent()).toContain('отключён и удалён');
    expect(existsSync(radicale.collectionDir(USER, slug))).toBe(false);
    expect(await stack.ctx.caldav.targets.get(id)).toBeUndefined();
    await expectFits(page);

    expect(errors).toEqual([]);
    await context.close();
  }, 120_000);

  it('carries the page’s options into the calendar, says a misfit at the top, and edits them on the manage page', async () => {
    const group = await simulatorGroup();
    const { context, errors, page } = await openContext();
    // Refused options and refused forms are answered 400 on purpose; the browser logs such a status as an error.
    const unexpected = () => errors.filter((error) => !/status of 400/.test(error));
    await page.goto(`${stack.url}/timetables/groups/${group.id}?alarm=15&title=%7Bпредмет%7D+%7Bаудитория%7D`);
    const any = page.locator('a[data-caldav="any"]');
    expect(await any.getAttribute('href')).toBe(
      `/caldav/connect?source=group:${group.id}&alarm=15&title=%7Bsubject%7D+%7Broom%7D`,
    );
    await page.goto(`${stack.url}${await any.getAttribute('href')}`);
    expect(await page.locator('[data-options-line]').textContent()).toBe(
      'Напоминание за 15 минут, название «{предмет} {аудитория}»',
    );
    // «К расписанию» goes back to the timetable with these options, not to the whole one.
    expect(await page.locator('[data-timetable-link]').getAttribute('href')).toBe(
      `/timetables/groups/${group.id}?alarm=15&title=%7Bsubject%7D+%7Broom%7D`,
    );
    await page.locator('a[data-preset="other"]').click();
    await page.waitForURL(/preset=other/);

    // A subgroup the timetable does not have, sent with the form: said at the top, in the first screen, focused.
    await page.goto(`${stack.url}/caldav/connect?source=group:${group.id}&preset=other&alarm=15&subgroup=77`);
    await page.locator('#caldav-address').fill(radicale.url);
    await page.locator('#caldav-username').fill(OPTIONS_USER);
    await page.locator('#caldav-password').fill(PASSWORD);
    await page.locator('form.caldav-connect button[type="submit"]').click();
    await page.waitForURL(`${stack.url}/caldav/connect`);
    const refused = page.locator('#caldav-options-error');
    expect(await refused.textContent()).toContain('Подгруппа: В этом расписании нет подгруппы 77.');
    await expectInFirstScreen(page, '#caldav-options-error');
    expect(await page.evaluate('document.activeElement.getAttribute("href")')).toBe(
      `/timetables/groups/${group.id}?subgroup=77&alarm=15#options`,
    );
    expect(await page.locator('#caldav-username').inputValue()).toBe(OPTIONS_USER);
    expect(await stack.ctx.caldav.targets.idsForSource(`group:${group.id}`)).toEqual([]);
    await expectFits(page);

    await page.goto(`${stack.url}/caldav/connect?source=group:${group.id}&preset=other&alarm=15#caldav-form`);
    await page.locator('#caldav-address').fill(radicale.url);
    await page.locator('#caldav-username').fill(OPTIONS_USER);
    await page.locator('#caldav-password').fill(PASSWORD);
    await page.locator('form.caldav-connect button[type="submit"]').click();
    await page.waitForURL(MANAGE_PATH);
    const id = MANAGE_PATH.exec(page.url())?.[1] ?? '';
    expect((await stack.ctx.caldav.targets.get(id))?.options).toEqual({ alarmMinutes: 15 });
    expect(await fact(page, 'В календаре')).toBe('Напоминание за 15 минут');

    // The options form: a refused title is said beside its field, in the first screen after the post.
    await page.locator('#opt-title').fill('{комната}');
    await page.locator('form#options button[type="submit"]').click();
    await page.locator('#opt-title-error:not([hidden])').waitFor();
    expect(await page.locator('#opt-title-error').textContent()).toMatch(/^Неизвестная подстановка «?\{комната\}/);
    expect(await page.locator('#opt-title').inputValue()).toBe('{комната}');
    await expectInFirstScreen(page, '#opt-title-error');
    expect((await stack.ctx.caldav.targets.get(id))?.options).toEqual({ alarmMinutes: 15 });
    await expectFits(page);

    await page.locator('#opt-title').fill('{предмет}');
    await page.locator('#opt-alarm').selectOption('30');
    await page.locator('form#options button[type="submit"]').click();
    await page.locator('[data-options-saved-push]').waitFor();
    // The save came back as a redirect to the page: a reload reads the page, it does not post the form again.
    expect(new URL(page.url()).pathname).toBe(`/caldav/targets/${id}`);
    expect(new URL(page.url()).searchParams.get('done')).toBe('options');
    // Only what changed, in a notice that has the focus and is in the first screen.
    expect(await page.locator('[data-options-saved-push] li').allTextContents()).toEqual([
      'Напоминание: за 15 минут → за 30 минут',
      'Название: обычное → «{предмет}»',
    ]);
    expect(await page.locator('[data-options-saved-push]').textContent()).not.toContain('Было');
    await expectInFirstScreen(page, '[data-options-saved-push]');
    expect(await page.evaluate('document.activeElement.id')).toBe('options-saved');
    // The way back to the timetable, with the options the calendar follows.
    expect(await page.locator('[data-timetable-link]').getAttribute('href')).toBe(
      `/timetables/groups/${group.id}?alarm=30&title=%7Bsubject%7D`,
    );
    expect((await stack.ctx.caldav.targets.get(id))?.options).toEqual({ alarmMinutes: 30, titleTemplate: '{subject}' });
    await expectFits(page);

    expect(unexpected()).toEqual([]);
    await context.close();
  }, 120_000);

  it('is offered on a teacher’s page and on the personal page, where only the signed-in browser may connect', async () => {
    const { employees } = (await (await fetch(`${stack.simulator.url}/_sim/employees`)).json()) as {
      employees: { id: number; teacher: boolean }[];
    };
    const teacher = employees.find((employee) => employee.teacher);
    if (teacher === undefined) throw new Error('the simulator has no teacher');
    const { context, errors, page } = await openContext();
    await page.goto(`${stack.url}/timetables/employees/${teacher.id}`);
    expect(await page.locator('a[data-caldav="any"]').getAttribute('href')).toBe(
      `/caldav/connect?source=employee:${teacher.id}`,
    );

    const { users } = (await (await fetch(`${stack.simulator.url}/_sim/users`)).json()) as {
      users: { token: string }[];
    };
    const credential = users[0]?.token;
    if (credential === undefined) throw new Error('the simulator has no user');
    const { subscription, token } = await signUp(stack.ctx, credential);
    const connect = `${stack.url}/caldav/connect?source=personal:${subscription.id}&preset=icloud`;
    // Another browser, not signed in: no form, a page that says to sign in.
    const stranger = await page.goto(connect);
    expect(stranger?.status()).toBe(403);
    expect(await page.locator('h1').textContent()).toBe('Нужно войти');
    expect(await page.locator('form.caldav-connect').count()).toBe(0);

    await context.addCookies([{ name: 'tts-personal', value: `${subscription.id}.${token}`, url: stack.url }]);
    await page.goto(`${stack.url}/timetables/personal`);
    expect(await page.locator('a[data-caldav="any"]').getAttribute('href')).toBe(
      `/caldav/connect?source=personal:${subscription.id}`,
    );
    await page.goto(connect);
    // Where the app password is made is a link, not text to retype.
    expect(await page.locator('#caldav-form a[data-account-link]').getAttribute('href')).toBe(
      'https://account.apple.com/',
    );
    expect(await page.locator('#caldav-form').textContent()).toContain('https://caldav.icloud.com');
    await expectFits(page);
    expect(errors.filter((error) => !/status of 403/.test(error))).toEqual([]);
    await context.close();
  }, 60_000);
});
