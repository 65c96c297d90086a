/**
 * Every page a student meets, checked the way a person meets it, on a phone (390×844, an iPhone's user agent) and
 * on a laptop (1280×900): the home page, a search's results, a group's, a teacher's and the personal page, and a
 * group whose week is empty. On each: nothing is wider than the screen, axe-core finds no serious or critical
 * accessibility violation, and on a phone the way into a calendar (`[data-calendar-action]`) is on the first
 * screen of a timetable page.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_COOKIE } from '../../src/http/personal-session.ts';
import { importSimulatorGroups } from '../../src/runtime/demo.ts';
import { localDate } from '../../src/timetable/zoned-time.ts';
import { eventually } from '../../testkit/poll.ts';
import { PHONE, SCREENS, type Screen } from '../../testkit/screens.ts';
import { launchBrowser, sidewaysOverflow, WebStack } from '../support/browser.ts';
import { simControl } from '../upstream/sim-control.ts';

const axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let stack: WebStack;
let browser: Browser;
let group: { id: number; name: string };
let teacherId: number;
let credential: string;

beforeAll(async () => {
  stack = await WebStack.start();
  browser = await launchBrowser();
  // The search answers from the group directory, which a deployment fills from the university's list.
  await importSimulatorGroups(stack.ctx, stack.simulator.url);
  const sim = simControl(stack.simulator.url);
  const { users } = (await (await fetch(`${stack.simulator.url}/_sim/users`)).json()) as {
    users: { token: string; groupId: number }[];
  };
  const [user] = users;
  if (user === undefined) throw new Error('the simulator has no user');
  credential = user.token;
  // The student's own group, with classes this week: its page, its teacher's and the personal page show them.
  const groups = await sim.groups();
  const own = groups.find((candidate) => candidate.id === user.groupId);
  if (own === undefined) throw new Error("the simulator has no user's group");
  group = own;
  const { entries } = await stack.ctx.upstream.groupSchedule(group.id);
  const teacher = entries.find((entry) => (entry.teacher.id ?? 0) > 0)?.teacher.id;
  if (teacher === undefined || teacher === null) throw new Error("no class of the student's group has a teacher");
  teacherId = teacher;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

/** A page on `screen`, signed in as the simulator's first student when `signedIn`. */
async function open(screen: Screen, path: string, options: { signedIn?: boolean } = {}): Promise<Page> {
  const context = await browser.newContext(screen.context);
  if (options.signedIn) await context.addCookies(await personalCookies(screen));
  const page = await context.newPage();
  const response = await page.goto(`${stack.url}${path}`);
  expect(response?.status(), `${path} on the ${screen.name}`).toBe(200);
  await page.waitForLoadState('networkidle');
  return page;
}

let session: { name: string; value: string; url: string }[] | undefined;

/**
 * The personal session's cookie, got once by signing in as a person does (the credential typed into the home
 * page's form), after the first fetch of the personal timetable has ended.
 */
async function personalCookies(screen: Screen) {
  if (session !== undefined) return session;
  const context = await browser.newContext(screen.context);
  const page = await context.newPage();
  await page.goto(`${stack.url}/`);
  const field = page.locator('form.sign-in [name="credential"]');
  await field.fill(credential);
  await Promise.all([page.waitForURL('**/timetables/personal**'), field.press('Enter')]);
  const cookie = (await context.cookies()).find((candidate) => candidate.name === SESSION_COOKIE);
  if (cookie === undefined) throw new Error('signing in set no session cookie');
  const source = `personal:${cookie.value.split('.')[0]}`;
  await eventually(async () => {
    const { snapshot, published } = await stack.ctx.snapshots.load(source);
    return snapshot && published ? true : undefined;
  }, 'the personal timetable fetched');
  await context.close();
  session = [{ name: cookie.name, value: cookie.value, url: stack.url }];
  return session;
}

/** What a person would see wrong on the page, each as a line; empty when the page passes. */
async function problems(page: Page, screen: Screen, options: { calendarAction: boolean }): Promise<string[]> {
  const found: string[] = [];
  const overflow = await sidewaysOverflow(page);
  if (overflow > 0) found.push(`the page scrolls sideways by ${overflow} px`);
  for (const element of await widerThanScreen(page))
    found.push(`${element.selector} reaches ${element.right} px on a ${screen.width} px screen`);
  for (const violation of await seriousViolations(page))
    found.push(
      `axe ${violation.impact} ${violation.id}: ${violation.help} (${violation.nodes.length} elements: ${violation.nodes
        .slice(0, 5)
        .map((node) => `${node.target.join(' ')}${node.summary ? ` — ${node.summary}` : ''}`)
        .join('; ')})`,
    );
  if (options.calendarAction && screen.name === 'phone') {
    const action = page.locator('[data-calendar-action]');
    const count = await action.count();
    if (count !== 1) found.push(`the page has ${count} [data-calendar-action] elements, not one`);
    else {
      const box = await action.boundingBox();
      const bottom = box === null ? undefined : Math.ceil(box.y + box.height);
      if (bottom === undefined) found.push('[data-calendar-action] is not shown');
      else if (bottom > screen.height)
        found.push(`[data-calendar-action] ends at ${bottom} px, below the first screen (${screen.height} px)`);
    }
  }
  return found;
}

/**
 * Shown elements whose right edge is past the screen's, reported outermost first (an element inside one that
 * overflows is not reported again). Clipped elements count: a table cut off inside a scrolling box is as wide.
 */
async function widerThanScreen(page: Page): Promise<{ selector: string; right: number }[]> {
  // A string: this project's types know no DOM.
  return page.evaluate(`(() => {
    const width = document.documentElement.clientWidth;
    const found = [];
    const reported = [];
    for (const element of document.body.querySelectorAll('*')) {
      const rect = element.getBoundingClientRect();
      if (rect.width === 0 || rect.height === 0 || rect.right <= width + 1) continue;
      const style = getComputedStyle(element);
      if (style.visibility === 'hidden' || style.position === 'fixed') continue;
      if (reported.some((outer) => outer.contains(element))) continue;
      reported.push(element);
      const classes = [...element.classList].map((name) => '.' + name).join('');
      found.push({
        selector: element.tagName.toLowerCase() + (element.id ? '#' + element.id : '') + classes,
        right: Math.round(rect.right),
      });
    }
    return found;
  })()`);
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; summary?: string }[];
}

/**
 * axe-core's serious and critical violations on the page. Its source is evaluated through the DevTools protocol,
 * which the page's CSP (`script-src 'self'`, no inline script) does not govern, as it would an injected
 * `<script>`; the page itself runs under its CSP as a visitor's would.
 */
async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(axeSource);
  const violations = (await page.evaluate(`axe
    .run(document, { resultTypes: ['violations'] })
    .then((result) => result.violations.map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      help: violation.help,
      nodes: violation.nodes.map((node) => ({ target: node.target.map(String), summary: node.failureSummary })),
    })))`)) as AxeViolation[];
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
}

/** A phone set to dark mode, as many are: the colours of the dark theme are checked too. */
const DARK_PHONE: Screen = { ...PHONE, context: { ...PHONE.context, colorScheme: 'dark' } };

describe.for([
  ...SCREENS.map((screen) => [`${screen.width}×${screen.height}`, screen] as const),
  [`${PHONE.width}×${PHONE.height} dark`, DARK_PHONE] as const,
])('the pages on a %s screen', ([, screen]) => {
  it('home page', async () => {
    const page = await open(screen, '/');
    expect(await problems(page, screen, { calendarAction: false })).toEqual([]);
    await page.context().close();
  });

  it("search results for a part of a group's name", async () => {
    const page = await open(screen, `/?q=${encodeURIComponent(group.name.slice(0, 4))}`);
    expect(await page.locator(`a[href="/timetables/groups/${group.id}"]`).count()).toBeGreaterThan(0);
    expect(await problems(page, screen, { calendarAction: false })).toEqual([]);
    await page.context().close();
  });

  it("a group's page", async () => {
    const page = await open(screen, `/timetables/groups/${group.id}`);
    expect(await problems(page, screen, { calendarAction: true })).toEqual([]);
    await page.context().close();
  });

  it("a teacher's page", async () => {
    const page = await open(screen, `/timetables/employees/${teacherId}`);
    expect(await problems(page, screen, { calendarAction: true })).toEqual([]);
    await page.context().close();
  });

  it('the personal page', async () => {
    const page = await open(screen, '/timetables/personal', { signedIn: true });
    expect(await page.inputValue('#feed-url')).toMatch(/\/feeds\/personal\/[\w-]+\.ics$/);
    expect(await problems(page, screen, { calendarAction: true })).toEqual([]);
    await page.context().close();
  });

  it('the CalDAV connect page with a form open', async () => {
    const page = await open(screen, `/caldav/connect?source=group:${group.id}&preset=nextcloud`);
    expect(await page.locator('form.caldav-connect').count()).toBe(1);
    expect(await problems(page, screen, { calendarAction: false })).toEqual([]);
    await page.context().close();
  });

  it("the Google connection's manage page", async () => {
    const page = await open(screen, `/timetables/groups/${group.id}`);
    const push = await page.getAttribute('[data-link="push"]', 'href');
    if (push === null) throw new Error('the group page has no push link');
    // The fake Google's consent answers at once with a redirect to the callback, which shows the manage page.
    await page.goto(new URL(push, stack.url).href);
    await page.waitForURL(/\/google\/targets\/[\w-]+$/);
    await page.waitForLoadState('networkidle');
    expect(await problems(page, screen, { calendarAction: false })).toEqual([]);
    await page.context().close();
  });
});

describe('a week without classes', () => {
  it("leaves a group's page as usable on a phone", async () => {
    // Another group than the student's: every class it has this week is cancelled at the university.
    const groups = await simControl(stack.simulator.url).groups();
    const empty = groups.find((candidate) => candidate.id !== group.id && candidate.entryCount > 0);
    if (empty === undefined) throw new Error('the simulator has too few groups');
    const today = localDate(stack.ctx.now(), stack.ctx.config.timezone);
    const monday = new Date(`${today}T00:00:00Z`);
    monday.setUTCDate(monday.getUTCDate() - ((monday.getUTCDay() + 6) % 7));
    const sunday = new Date(monday.getTime() + 6 * 86_400_000).toISOString().slice(0, 10);
    const weekStart = monday.toISOString().slice(0, 10);
    const { entries } = await stack.ctx.upstream.groupSchedule(empty.id);
    const thisWeek = entries.filter((entry) => entry.startDate <= sunday && entry.finishDate >= weekStart);
    for (const entry of thisWeek) {
      const response = await fetch(`${stack.simulator.url}/_sim/entries/${entry.id}`, { method: 'DELETE' });
      // One class of several groups is deleted once.
      expect([204, 404]).toContain(response.status);
    }
    const page = await open(PHONE, `/timetables/groups/${empty.id}`);
    const stored = await stack.ctx.snapshots.snapshot(`group:${empty.id}`);
    const left = (stored?.entries ?? []).filter((entry) => entry.startDate <= sunday && entry.finishDate >= weekStart);
    expect(left, 'classes left this week').toEqual([]);
    expect(await page.textContent('h1')).toBe(empty.name);
    expect(await problems(page, PHONE, { calendarAction: true })).toEqual([]);
    await page.context().close();
  });
});
