/**
 * Finding a timetable on `/` in a real browser: a group and a teacher by name (following the result link),
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

/** Types `text` into the search box and submits it with the keyboard. */
async function search(page: Page, text: string): Promise<void> {
  await page.goto(`${stack.url}/`);
  await page.getByLabel('Группа или преподаватель').fill(text);
  await page.keyboard.press('Enter');
  await page.waitForURL(/\?q=/);
}

describe('the search on /', () => {
  it('finds a group by its name written without the dash, and links to its timetable', async () => {
    const { page, errors } = await openPage();
    const [group] = await simControl(stack.simulator.url).groups();
    if (!group) throw new Error('no group');
    await search(page, group.name.replace(/-/g, ''));
    expect(new URL(page.url()).searchParams.get('q')).toBe(group.name.replace(/-/g, ''));
    const link = page.getByRole('list', { name: 'Группы' }).getByRole('link', { name: group.name, exact: true });
    await link.click();
    await page.waitForURL(`${stack.url}/timetables/groups/${group.id}`);
    expect(errors).toEqual([]);
  });

  it('finds a teacher by surname, shown with full name, and links to their timetable', async () => {
    const { page, errors } = await openPage();
    const [teacher] = await simControl(stack.simulator.url).employees();
    if (!teacher) throw new Error('no teacher');
    await search(page, teacher.lastName);
    const fullName = `${teacher.lastName} ${teacher.firstName} ${teacher.middleName}`;
    const link = page
      .getByRole('list', { name: 'Преподаватели' })
      .locator(`a[href="/timetables/employees/${teacher.id}"]`);
    expect(await link.textContent()).toContain(fullName);
    await link.click();
    await page.waitForURL(`${stack.url}/timetables/employees/${teacher.id}`);
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
    await stack.ctx.directory.record(990001, '<img src=x onerror=alert(1)>');
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
    await page.waitForURL(`${stack.url}/timetables/personal`);
    const cookies = await page.context().cookies();
    const session = cookies.find((cookie) => cookie.name === 'tts-personal');
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
    expect((await page.context().cookies()).some((cookie) => cookie.name === 'tts-personal')).toBe(false);
    expect(errors).toEqual([]);
  });
});
