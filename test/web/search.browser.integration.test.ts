/**
 * Finding a timetable on `/` in a real browser: groups and teachers by name (following the result link, or opened
 * at once when the search finds one),
 * signing in with a simulator student's credential (redirect and cookie; the personal page is another test's),
 * a wrong credential showing the form again, and a hostile group name shown as text.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueRefresh } from '../../src/jobs/queues.ts';
import { importSimulatorGroups } from '../../src/runtime/demo.ts';
import { waitForJob } from '../jobs/helpers.ts';
import { launchBrowser, WebStack, watchPageErrors } from '../support/browser.ts';
import { simControl } from '../upstream/sim-control.ts';

let stack: WebStack;
let browser: Browser;

beforeAll(async () => {
  stack = await WebStack.start();
  browser = await launchBrowser();
  await importSimulatorGroups(stack.ctx, stack.simulator.url);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

/** A fresh browser page at 390 px; console errors (a CSP violation is one) and dialogs are collected. */
async function openPage(): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 390, height: 800 }, locale: 'ru-RU' });
  const page = await context.newPage();
  const errors: string[] = [];
  // A page answered with 4xx is logged as a failed load (the form's 422, say): not an error here.
  watchPageErrors(page, errors, /^Failed to load resource/);
  page.on('dialog', (dialog) => {
    errors.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return { page, errors };
}

/** Types `text` into the search box and submits it with the keyboard: a list, or the one timetable found. */
async function search(page: Page, text: string): Promise<void> {
  await page.goto(`${stack.url}/`);
  await page.getByLabel('Группа или преподаватель').fill(text);
  await page.keyboard.press('Enter');
  await page.waitForURL(/\?q=|\/timetables\//);
}

describe('the search on /', () => {
  it('lists the groups a name finds, linked to their timetables', async () => {
    const { page, errors } = await openPage();
    await stack.ctx.directory.record(990101, 'ЭЭ-101');
    await stack.ctx.directory.record(990102, 'ЭЭ-102');
    await search(page, 'ээ10');
    expect(new URL(page.url()).searchParams.get('q')).toBe('ээ10');
    const link = page.getByRole('list', { name: 'Группы' }).getByRole('link', { name: 'ЭЭ-102', exact: true });
    await link.click();
    await page.waitForURL(`${stack.url}/timetables/groups/990102`);
    expect(errors).toEqual([]);
  });

  it('opens the one group found by its name written without the dash, at once', async () => {
    const { page, errors } = await openPage();
    const groups = await simControl(stack.simulator.url).groups();
    const group = groups.find((one) => groups.every((other) => other.id === one.id || !other.name.includes(one.name)));
    if (!group) throw new Error('no group whose name is in no other');
    await search(page, group.name.replace(/-/g, ''));
    expect(page.url()).toBe(`${stack.url}/timetables/groups/${group.id}`);
    expect(await page.textContent('h1')).toBe(group.name);
    expect(errors).toEqual([]);
  });

  it('opens the one teacher found by full name at once, and lists teachers when several match', async () => {
    const { page, errors } = await openPage();
    const employees = await simControl(stack.simulator.url).employees();
    const [teacher] = employees;
    if (!teacher) throw new Error('no teacher');
    const fullName = `${teacher.lastName} ${teacher.firstName} ${teacher.middleName}`;
    await search(page, fullName);
    expect(page.url()).toBe(`${stack.url}/timetables/employees/${teacher.id}`);
    // Two letters several names hold: a list of teachers, each linked. Not those of a ё surname: the next test
    // needs one that no search has found yet.
    const names = employees.map((one) => `${one.lastName} ${one.firstName} ${one.middleName}`.toLowerCase());
    const held = (text: string) => names.filter((name) => name.includes(text));
    const text = employees
      .flatMap((one) =>
        Array.from({ length: one.lastName.length - 1 }, (_, at) => one.lastName.toLowerCase().slice(at, at + 2)),
      )
      .find(
        (two) =>
          /^\p{L}{2}$/u.test(two) &&
          held(two).length >= 2 &&
          held(two).length <= 20 &&
          !held(two).some((name) => name.includes('ё')),
      );
    if (text === undefined) throw new Error('no two letters that several names hold');
    await search(page, text);
    const links = page.getByRole('list', { name: 'Преподаватели' }).locator('a[href^="/timetables/employees/"]');
    expect(await links.count()).toBeGreaterThan(1);
    expect(await page.getByLabel('Группа или преподаватель').inputValue()).toBe(text);
    expect(errors).toEqual([]);
  });

  it('finds a teacher whose surname has ё typed with е, and with initials, once a timetable named them', async () => {
    const { page, errors } = await openPage();
    const sim = simControl(stack.simulator.url);
    // The last such teacher: the first one is the other tests' (the university's search found them already).
    const teacher = (await sim.employees()).filter((employee) => employee.lastName.includes('ё')).at(-1);
    if (!teacher) throw new Error('the simulator has no teacher with ё in the surname');
    const plain = teacher.lastName.replace(/ё/g, 'е');
    expect(await stack.ctx.teachers.find(plain, 50)).toEqual([]);
    const job = await enqueueRefresh(stack.ctx.queues, stack.ctx.config, `employee:${teacher.id}`, {
      reason: 'resync',
      now: Date.now(),
    });
    expect((await waitForJob(stack.ctx, job)).state).toBe('completed');
    const asked = (await sim.stats()).byEndpoint.employeeSearch;
    const fullName = `${teacher.lastName} ${teacher.firstName} ${teacher.middleName}`;
    for (const text of [plain, `${plain} ${teacher.firstName[0]}.${teacher.middleName[0]}.`]) {
      await search(page, text);
      // Found: opened at once when alone, else in the list with the full name.
      if (page.url() === `${stack.url}/timetables/employees/${teacher.id}`) continue;
      const link = page
        .getByRole('list', { name: 'Преподаватели' })
        .locator(`a[href="/timetables/employees/${teacher.id}"]`);
      expect(await link.textContent(), text).toContain(fullName);
      expect(await page.getByLabel('Группа или преподаватель').inputValue()).toBe(text);
    }
    // The service's own directory answered: the university's search was not asked.
    expect((await sim.stats()).byEndpoint.employeeSearch).toBe(asked);
    expect(errors).toEqual([]);
  });

  it('says a teacher was not found for a name, and a group for a number, keeping the text typed', async () => {
    const { page, errors } = await openPage();
    await search(page, 'Щукарь');
    const nameMiss = (await page.locator('#search-results').textContent()) ?? '';
    expect(nameMiss).toContain('Преподаватель «Щукарь» не найден. Проверьте фамилию или введите только её начало.');
    expect(nameMiss).not.toMatch(/групп|номер/i);
    expect(await page.getByLabel('Группа или преподаватель').inputValue()).toBe('Щукарь');

    await search(page, '99-999');
    const groupMiss = (await page.locator('#search-results').textContent()) ?? '';
    expect(groupMiss).toContain('Группа «99-999» не найдена.');
    expect(groupMiss).not.toContain('Преподаватель');
    expect(await page.getByLabel('Группа или преподаватель').inputValue()).toBe('99-999');
    expect(errors).toEqual([]);
  });

  it('shows a hostile group name as text', async () => {
    const { page, errors } = await openPage();
    // Two of them: one alone would open its timetable rather than a list.
    await stack.ctx.directory.record(990001, '<img src=x onerror=alert(1)>');
    await stack.ctx.directory.record(990002, '<img src=y>');
    await search(page, 'img src');
    const link = page.locator('a[href="/timetables/groups/990001"]');
    expect(await link.textContent()).toBe('<img src=x onerror=alert(1)>');
    expect(await page.evaluate('document.querySelectorAll("main img").length')).toBe(0);
    expect(errors).toEqual([]);
  });
});

describe('signing in on /', () => {
  it('signs a simulator student in and lands on the personal page with the session cookie', async () => {
    const { page } = await openPage();
    const [user] = await simControl(stack.simulator.url).users();
    if (!user) throw new Error('no user');
    await page.goto(`${stack.url}/`);
    await page.getByLabel('Токен университета').fill(user.token);
    const [response] = await Promise.all([
      page.waitForResponse((answer) => answer.request().method() === 'POST'),
      page.getByRole('button', { name: 'Войти' }).click(),
    ]);
    expect(response.status()).toBe(303);
    // The form posts to `/#sign-in` (a refusal opens at its error); the browser keeps that fragment through the
    // redirect, which names nothing on the personal page.
    await page.waitForURL((url) => url.pathname === '/timetables/personal');
    const cookies = await page.context().cookies();
    const session = cookies.find((cookie) => cookie.name === 'tts-session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
    expect(session?.value).toMatch(/^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/);
  });

  it('shows the form again with the error for a wrong credential, the field empty', async () => {
    const { page, errors } = await openPage();
    await page.goto(`${stack.url}/`);
    await page.getByLabel('Токен университета').fill('wrong-credential-0000');
    const [response] = await Promise.all([
      page.waitForResponse((answer) => answer.request().method() === 'POST'),
      page.getByRole('button', { name: 'Войти' }).click(),
    ]);
    expect(response.status()).toBe(422);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('Университет не принял этот токен');
    expect(await page.getByLabel('Токен университета').inputValue()).toBe('');
    expect(await page.content()).not.toContain('wrong-credential-0000');
    expect((await page.context().cookies()).some((cookie) => cookie.name.startsWith('tts-'))).toBe(false);
    expect(errors).toEqual([]);
  });
});
