/**
 * Takes the screenshots of the self-service pages in docs/screenshots/ (README shows some): runs the demo in a
 * temporary folder and opens the home page, a search, a group's, a teacher's and the personal page in Debian's
 * Chromium (playwright-core) on the screens the page tests use (testkit/screens.ts: a 390 px phone with an
 * iPhone's user agent, a 1280 px laptop), saving full-page PNGs named `<page>-<width>.png`. Run after changing a
 * page:
 *
 *     npm run screenshots
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { ensureChromium } from '../testkit/chromium.ts';
import { SCREENS, type Screen } from '../testkit/screens.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'docs', 'screenshots');
const PORT = 18_600 + Math.floor(Math.random() * 300);
const SIM_PORT = PORT + 1;

/** Starts the demo; resolves once it printed its links. */
async function startDemo(folder: string): Promise<() => Promise<void>> {
  const child = spawn(
    process.execPath,
    [join(root, 'bin/timetable-sync.js'), 'demo', '--port', String(PORT), '--simulator-port', String(SIM_PORT)],
    { cwd: folder, env: { ...process.env, LOG_LEVEL: 'warn', PUBLIC_URL: `http://127.0.0.1:${PORT}` }, stdio: 'pipe' },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`demo did not start:\n${output}`)), 120_000);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('demo is running')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('exit', (code) => reject(new Error(`demo exited with ${code}:\n${output}`)));
  });
  return async () => {
    child.kill('SIGINT');
    await new Promise((resolve) => child.once('exit', resolve));
  };
}

async function shoot(page: Page, name: string, width: number): Promise<void> {
  const path = join(out, `${name}-${width}.png`);
  await page.screenshot({ path, fullPage: true });
  process.stdout.write(`${path}\n`);
}

/** The page's feed, with its folded lines joined, once it is published (the first fetch takes a moment). */
async function publishedFeed(url: string): Promise<string> {
  for (let tries = 0; tries < 120; tries++) {
    const answer = await fetch(url);
    if (answer.status === 200) return (await answer.text()).replace(/\r\n[ \t]/g, '');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`${url} was not published`);
}

/** The pages to take, found as a student finds them: the own group, its first teacher by name, the own page. */
interface Tour {
  base: string;
  group: { id: number; name: string };
  teacherPath: string;
  credential: string;
}

async function planTour(base: string, sim: string): Promise<Tour> {
  const groups = ((await (await fetch(`${sim}/_sim/groups`)).json()) as { groups: { id: number; name: string }[] })
    .groups;
  const users = ((await (await fetch(`${sim}/_sim/users`)).json()) as { users: { token: string; groupId: number }[] })
    .users;
  const user = users[0];
  const group = groups.find((candidate) => candidate.id === user?.groupId) ?? groups[0];
  if (group === undefined || user === undefined) throw new Error('the simulator has no groups or users');
  // Visiting the group's page fetches its timetable; its feed names the teachers.
  await fetch(`${base}/timetables/groups/${group.id}`);
  const feed = await publishedFeed(`${base}/feeds/groups/${group.id}.ics`);
  const teacher = /^DESCRIPTION:.*?Преподаватель: ([^\\\r\n]+)/m.exec(feed)?.[1];
  if (teacher === undefined) throw new Error(`no class of ${group.name} names a teacher`);
  const [surname = teacher] = teacher.split(' ');
  // One teacher found opens their page at once (303); several are a list.
  const search = await fetch(`${base}/?q=${encodeURIComponent(surname)}`, { redirect: 'manual' });
  const teacherPath =
    search.headers.get('location') ?? /href="(\/timetables\/employees\/\d+)"/.exec(await search.text())?.[1];
  if (teacherPath === undefined) throw new Error(`the search for ${surname} found no teacher`);
  return { base, group, teacherPath, credential: user.token };
}

async function tour(browser: Browser, plan: Tour, screen: Screen): Promise<void> {
  const context = await browser.newContext(screen.context);
  const page = await context.newPage();
  const visit = async (path: string) => {
    await page.goto(`${plan.base}${path}`);
    await page.waitForLoadState('networkidle');
  };
  await visit('/');
  await shoot(page, 'home', screen.width);
  await visit(`/?q=${encodeURIComponent(plan.group.name.slice(0, 4))}`);
  await shoot(page, 'search', screen.width);
  await visit(`/timetables/groups/${plan.group.id}`);
  await shoot(page, 'group', screen.width);
  await visit(plan.teacherPath);
  await shoot(page, 'teacher', screen.width);
  await visit('/');
  const field = page.locator('form[action^="/timetables/personal"] [name="credential"]');
  await field.fill(plan.credential);
  await Promise.all([page.waitForURL('**/timetables/personal**'), field.press('Enter')]);
  // The first refresh of a new personal timetable (and its study plan) takes a moment: its feed tells when.
  const feedUrl = await page.inputValue('#feed-url');
  await publishedFeed(feedUrl);
  await visit('/timetables/personal');
  await shoot(page, 'personal', screen.width);
  await context.close();
}

const folder = await mkdtemp(join(tmpdir(), 'tts-screens-'));
const stopDemo = await startDemo(folder);
const browser = await chromium.launch({ executablePath: ensureChromium(), args: ['--no-sandbox'] });
try {
  const plan = await planTour(`http://127.0.0.1:${PORT}`, `http://127.0.0.1:${SIM_PORT}`);
  for (const screen of SCREENS) await tour(browser, plan, screen);
} finally {
  await browser.close();
  await stopDemo();
  await rm(folder, { recursive: true, force: true });
}
