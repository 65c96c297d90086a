/**
 * Managing without curl, in a real browser: pushing a group to Google from its page lands on the manage page
 * (Russian, the calendar's real name, its state), the manage link copied there opens the same page in another
 * browser, and Disconnect with "delete the calendar too" removes the calendar from Google. A signed-in student
 * saves feed options, rotates the feed URL, pushes to Google and deletes the subscription from the personal
 * page. No page logs a console error (a CSP violation is one), and each fits a 360 px screen.
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

/** A fresh browser 360 px wide, clipboard allowed, whose pages record console errors and page errors. */
async function openContext(): Promise<{ context: BrowserContext; errors: string[]; newPage: () => Promise<Page> }> {
  const context = await browser.newContext({ viewport: { width: 360, height: 800 }, locale: 'ru-RU' });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.url });
  // A step that hangs fails at that step, well within the test's time.
  context.setDefaultTimeout(5_000);
  const errors: string[] = [];
  const newPage = async () => {
    const page = await context.newPage();
    watchPageErrors(page, errors);
    return page;
  };
  return { context, errors, newPage };
}

/** The page scrolls nowhere sideways at its width. */
async function expectFits(page: Page): Promise<void> {
  expect(await sidewaysOverflow(page), `sideways scroll on ${page.url()}`).toBeLessThanOrEqual(0);
}

/** The manage page's value of a fact (`Календарь`, `Статус`, …). */
function fact(page: Page, term: string): Promise<string | null> {
  return page.locator('dl.facts dt', { hasText: term }).locator('xpath=following-sibling::dd[1]').textContent();
}

async function simulatorGroup(): Promise<{ id: number; name: string }> {
  const { groups } = (await (await fetch(`${stack.simulator.url}/_sim/groups`)).json()) as {
    groups: { id: number; name: string; entryCount: number }[];
  };
  const group = groups.find((candidate) => candidate.entryCount > 5);
  if (group === undefined) throw new Error('the simulator has no group with classes');
  return group;
}

/** An ICS body with its folded lines joined, so that a word split across a fold is found. */
async function feedText(url: string): Promise<{ status: number; text: string }> {
  const answer = await fetch(url);
  return { status: answer.status, text: (await answer.text()).replace(/\r\n[ \t]/g, '') };
}

/** How many events of an unfolded ICS body are of `kind` (their CATEGORIES name it). */
function eventsOfKind(ics: string, kind: string): number {
  return ics.split('BEGIN:VEVENT').filter((event) => new RegExp(`^CATEGORIES:.*${kind}`, 'm').test(event)).length;
}

/** The page's getComputedStyle, as typed here (the tests' types have no DOM). */
type ComputedStyle = { getComputedStyle: (element: unknown, pseudo: string) => { content: string } };

const MANAGE_PATH = /\/google\/targets\/([A-Za-z0-9_-]+)$/;

describe('managing a Google connection in a browser', () => {
  it('pushes a group from its page, copies the manage link to another browser, and disconnects', async () => {
    const group = await simulatorGroup();
    const first = await openContext();
    const page = await first.newPage();
    await page.goto(`${stack.url}/timetables/groups/${group.id}`);
    expect(await page.textContent('h1')).toBe(group.name);
    await expectFits(page);

    // The fake Google's consent page answers at once with a redirect back to the callback.
    await page.click('[data-link="push"]');
    await page.waitForURL(MANAGE_PATH);
    const targetId = MANAGE_PATH.exec(new URL(page.url()).pathname)?.[1] as string;
    expect(await page.getAttribute('html', 'lang')).toBe('ru');
    expect(await page.textContent('h1')).toBe('Google Календарь подключён');
    expect(await fact(page, 'Календарь')).toBe(group.name);
    expect(await page.getAttribute('dd[data-status]', 'data-status')).toBe('active');
    expect(await fact(page, 'Статус')).toBe('Работает');
    await expectFits(page);

    const calendar = await eventually(async () => {
      const found = stack.google.calendars().find((candidate) => candidate.summary === group.name);
      return found !== undefined && stack.google.events(found.id).length > 0 ? found : undefined;
    }, 'the calendar pushed with its events');

    const manageLink = await page.inputValue('#manage-link-url');
    expect(manageLink).toMatch(
      new RegExp(`^${stack.url}/google/targets/${targetId}/manage\\?token=[A-Za-z0-9_-]{43}$`),
    );
    await page.click('button[data-copy="#manage-link-url"]');
    await waitUntil(
      async () => (await page.evaluate('navigator.clipboard.readText()')) === manageLink,
      'the manage link copied',
    );
    expect(await page.textContent('button[data-copy="#manage-link-url"]')).toBe('Скопировано');
    const copied = (await page.evaluate('navigator.clipboard.readText()')) as string;

    const second = await openContext();
    const elsewhere = await second.newPage();
    await elsewhere.goto(copied);
    expect(new URL(elsewhere.url()).pathname).toBe(`/google/targets/${targetId}`);
    expect(await elsewhere.textContent('h1')).toBe('Google Календарь подключён');
    expect(await fact(elsewhere, 'Календарь')).toBe(group.name);
    const cookies = await second.context.cookies(`${stack.url}/google/targets/${targetId}`);
    expect(cookies.find((cookie) => cookie.name === 'tts-manage')).toMatchObject({ httpOnly: true });

    await elsewhere.check('input[name="deleteCalendar"]');
    await elsewhere.check('input[name="confirm"]');
    await elsewhere.click('form[action$="/disconnect"] button[type="submit"]');
    await elsewhere.waitForURL(`${stack.url}/google/targets/${targetId}/disconnect`);
    expect(await elsewhere.textContent('h1')).toBe('Календарь отключён');
    expect(await elsewhere.textContent('[role="status"]')).toBe(
      `Календарь «${group.name}» отключён и удалён из вашего Google Календаря.`,
    );
    await expectFits(elsewhere);
    expect(stack.google.calendars().some((candidate) => candidate.id === calendar.id)).toBe(false);

    // The first browser's manage page now says the connection is gone.
    const gone = await page.goto(`${stack.url}/google/targets/${targetId}`);
    expect(gone?.status()).toBe(404);
    expect(await page.textContent('h1')).toBe('Подключение не найдено');

    // The gone connection's 404 is the one error Chromium logs (for any failed page load); nothing else.
    expect(first.errors).toEqual([expect.stringContaining('status of 404')]);
    expect(second.errors).toEqual([]);
    await first.context.close();
    await second.context.close();
  });
});

describe('the personal page on a phone', () => {
  it('shows the study plan as cards that fit 390 px and say each difference in words', async () => {
    const { users } = (await (await fetch(`${stack.simulator.url}/_sim/users`)).json()) as {
      users: { token: string }[];
    };
    const credential = users[1]?.token ?? users[0]?.token;
    if (credential === undefined) throw new Error('the simulator has no user');
    const { subscription, token } = await signUp(stack.ctx, credential);
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: 'ru-RU' });
    context.setDefaultTimeout(5_000);
    const errors: string[] = [];
    await context.addCookies([{ name: 'tts-personal', value: `${subscription.id}.${token}`, url: stack.url }]);
    const page = await context.newPage();
    watchPageErrors(page, errors);
    // The first refresh of a personal timetable fetches its study plan too, and stores the plan before it
    // publishes the timetable: reload until both show (the live options form comes with the timetable).
    await eventually(async () => {
      await page.goto(`${stack.url}/timetables/personal`);
      const plan = await page.locator('section.plan table').count();
      const timetable = await page.locator('form[data-options]').count();
      return plan > 0 && timetable > 0 ? true : undefined;
    }, 'the study plan and the timetable shown');
    await expectFits(page);
    // The heading names the person once: no "Расписание:" before it, no group after it (linked just below).
    const heading = (await page.textContent('h1')) ?? '';
    expect(heading).not.toMatch(/^Расписание|\(/);
    expect(await page.locator('.lead a').textContent()).toBe(subscription.group?.name);
    const wrap = page.locator('section.plan .table-wrap');
    const overflow = await wrap.evaluate((element) => element.scrollWidth - element.clientWidth);
    expect(overflow, 'the plan scrolls sideways').toBeLessThanOrEqual(0);
    // Every subject is a card as wide as the section; every differing line says its difference in words.
    const cards = page.locator('section.plan tbody.plan-subject');
    expect(await cards.count()).toBeGreaterThan(0);
    const sectionWidth = (await page.locator('section.plan').boundingBox())?.width ?? 0;
    for (const box of await cards.evaluateAll((all) => all.map((card) => card.getBoundingClientRect().width)))
      expect(box).toBeLessThanOrEqual(sectionWidth + 0.5);
    const differing = page.locator('section.plan tr.plan-differs');
    expect(await differing.count()).toBeGreaterThan(0);
    for (const text of await differing.allInnerTexts())
      expect(text).toMatch(/⚠ (нет в расписании|далеко от плана|нет в плане)/);
    // The words are on the screen, not cut off to the right; each number is labelled with its column's name.
    for (const box of await page
      .locator('section.plan .plan-mark')
      .evaluateAll((all) => all.map((mark) => mark.getBoundingClientRect()))) {
      expect(box.left).toBeGreaterThanOrEqual(0);
      expect(box.right).toBeLessThanOrEqual(390);
    }
    const labels = await page
      .locator('section.plan tr.plan-differs td.num')
      .evaluateAll((cells) =>
        cells.map((cell) => (globalThis as unknown as ComputedStyle).getComputedStyle(cell, '::before').content),
      );
    expect(labels.length).toBeGreaterThan(0);
    for (const label of labels) expect(label).toMatch(/^"(По плану|В расписании), ч: "$/);
    // The feed URLs are listed readably on the phone: each with its reader (or none yet) and a revoke form.
    const urls = page.locator('#feed-urls li.feed-url');
    expect(await urls.count()).toBeGreaterThan(0);
    for (const box of await urls.evaluateAll((all) => all.map((item) => item.getBoundingClientRect()))) {
      expect(box.left).toBeGreaterThanOrEqual(0);
      expect(box.right).toBeLessThanOrEqual(390);
    }
    expect(await urls.first().textContent()).toMatch(
      /(Адрес, показанный выше|Другой адрес)[\s\S]*(Последнее чтение|ещё не читали)/,
    );
    expect(await urls.first().locator('button', { hasText: 'Отозвать' }).count()).toBe(1);
    // One options form on the page.
    expect(await page.locator('form[data-options]').count()).toBe(1);
    expect(await page.locator('select[name="alarm"]').count()).toBe(1);
    expect(errors).toEqual([]);
    await context.close();
  });
});

describe('the personal controls in a browser', () => {
  it('saves options, rotates the feed URL, pushes to Google and deletes the subscription', async () => {
    const { users } = (await (await fetch(`${stack.simulator.url}/_sim/users`)).json()) as {
      users: { token: string }[];
    };
    const credential = users[0]?.token;
    if (credential === undefined) throw new Error('the simulator has no user');
    const { subscription, token } = await signUp(stack.ctx, credential);
    await eventually(async () => {
      const { snapshot, published } = await stack.ctx.snapshots.load(subscription.source);
      return snapshot && published ? true : undefined;
    }, 'the personal timetable fetched');

    const { context, errors, newPage } = await openContext();
    await context.addCookies([{ name: 'tts-personal', value: `${subscription.id}.${token}`, url: stack.url }]);
    const page = await newPage();
    await page.goto(`${stack.url}/timetables/personal`);
    const oldFeed = `${stack.url}/feeds/personal/${token}.ics`;
    expect(await page.inputValue('#feed-url')).toBe(oldFeed);
    await expectFits(page);

    // Hide a kind of class the feed has.
    const kind = (await page.locator('#options input[name="exclude"]').first().getAttribute('value')) as string;
    expect(kind).toBeTruthy();
    const kindTitle = new RegExp(`^SUMMARY:.*\\(${kind}\\)`, 'm');
    const whole = (await feedText(oldFeed)).text;
    expect(eventsOfKind(whole, kind)).toBeGreaterThan(0);
    expect(whole).toMatch(kindTitle);
    await page.locator(`#options input[name="exclude"][value="${kind}"]`).check();
    // One options form: it previews the options and saves them; no second form, no second heading.
    expect(await page.locator('select[name="alarm"]').count()).toBe(1);
    expect(await page.locator('h2, h3', { hasText: /^Настройки (ленты|календаря)$/ }).count()).toBe(1);
    await page.click('#options button[value="save"]');
    await page.waitForURL(/\?done=options#options$/);
    expect(await page.textContent('#options .notice.ok')).toBe(
      'Настройки сохранены: подписанные календари получат их при следующем обновлении.',
    );
    expect(await page.isChecked(`#options input[name="exclude"][value="${kind}"]`)).toBe(true);
    const hidden = await feedText(oldFeed);
    expect(hidden.status).toBe(200);
    expect(hidden.text).toContain('BEGIN:VEVENT');
    expect(eventsOfKind(hidden.text, kind)).toBe(0);
    expect(hidden.text).not.toMatch(kindTitle);

    // A new feed URL: the old one stops at once.
    await page.click('#rotate button[type="submit"]');
    await page.waitForURL(/\?done=rotated$/);
    const newFeed = await page.inputValue('#feed-url');
    expect(newFeed).toMatch(new RegExp(`^${stack.url}/feeds/personal/[A-Za-z0-9_-]+\\.ics$`));
    expect(newFeed).not.toBe(oldFeed);
    expect((await feedText(oldFeed)).status).toBe(404);
    expect((await feedText(newFeed)).status).toBe(200);
    const newToken = /\/feeds\/personal\/([A-Za-z0-9_-]+)\.ics$/.exec(newFeed)?.[1] as string;
    await expectFits(page);

    // Push to Google: the link carries no feed token (the session cookie stands for it), and the saved options,
    // which the pushed calendar follows as the feed does.
    const pushHref = (await page.getAttribute('[data-link="push"]', 'href')) as string;
    expect(pushHref).toBe(`/google/connect?source=${subscription.source}&${new URLSearchParams({ exclude: kind })}`);
    expect(pushHref).not.toContain(newToken);
    await page.click('[data-link="push"]');
    // With options, a page says them before Google is asked; its button is in the first screen.
    await page.waitForSelector('[data-google-consent]');
    expect(await page.textContent('h1')).toBe('Подключить Google Календарь');
    expect(await page.textContent('[data-options-line]')).toMatch(/^Без /);
    const go = await page.locator('[data-google-consent]').boundingBox();
    expect((go?.y ?? 900) + (go?.height ?? 0)).toBeLessThanOrEqual(800);
    await expectFits(page);
    await page.click('[data-google-consent]');
    await page.waitForURL(MANAGE_PATH);
    expect(await page.textContent('h1')).toBe('Google Календарь подключён');
    const calendarName = (await fact(page, 'Календарь')) as string;
    expect(calendarName).toBeTruthy();
    expect(await fact(page, 'В календаре')).toMatch(/^Без /);
    const pushedId = MANAGE_PATH.exec(new URL(page.url()).pathname)?.[1] as string;
    expect((await stack.ctx.google.targets.get(pushedId))?.options).toEqual({ excludeKinds: [kind] });
    await expectFits(page);

    // Deleting asks for the box to be ticked (the browser refuses the form without it).
    await page.goto(`${stack.url}/timetables/personal#delete`);
    await page.click('#delete button[type="submit"]');
    expect(new URL(page.url()).pathname).toBe('/timetables/personal');
    await page.check('#delete input[name="confirm"]');
    await page.click('#delete button[type="submit"]');
    await page.waitForURL(`${stack.url}/?done=deleted`);
    await expectFits(page);
    expect((await feedText(newFeed)).status).toBe(404);
    expect((await context.cookies(stack.url)).some((cookie) => cookie.name === 'tts-personal')).toBe(false);
    expect(await stack.ctx.subscriptions.get(subscription.id)).toBeUndefined();

    expect(errors).toEqual([]);
    await context.close();
  });
});
