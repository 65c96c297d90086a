/**
 * Takes the screenshots of the self-service pages in docs/screenshots/ (README shows one): runs the demo in a
 * temporary folder, opens its pages in Debian's Chromium (playwright-core) at 390 and 1280 px wide, and saves
 * full-page PNGs. Run after changing a page:
 *
 *     npm run screenshots
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { ensureChromium } from '../testkit/chromium.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'docs', 'screenshots');
const WIDTHS = [390, 1280] as const;
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

const folder = await mkdtemp(join(tmpdir(), 'tts-screens-'));
const stopDemo = await startDemo(folder);
const browser = await chromium.launch({ executablePath: ensureChromium(), args: ['--no-sandbox'] });
try {
  const base = `http://127.0.0.1:${PORT}`;
  const sim = `http://127.0.0.1:${SIM_PORT}`;
  const groups = ((await (await fetch(`${sim}/_sim/groups`)).json()) as { groups: { id: number; name: string }[] })
    .groups;
  const users = ((await (await fetch(`${sim}/_sim/users`)).json()) as { users: { token: string; groupId: number }[] })
    .users;
  const user = users[0];
  const group = groups.find((candidate) => candidate.id === user?.groupId) ?? groups[0];
  if (group === undefined || user === undefined) throw new Error('the simulator has no groups or users');
  for (const width of WIDTHS) {
    const context = await browser.newContext({ viewport: { width, height: 900 }, locale: 'ru-RU' });
    const page = await context.newPage();
    await page.goto(`${base}/?q=${encodeURIComponent(group.name.slice(0, 4))}`);
    await shoot(page, 'search', width);
    await page.goto(`${base}/timetables/groups/${group.id}`);
    await shoot(page, 'group', width);
    await page.goto(`${base}/`);
    await page.fill('input[type=password]', user.token);
    await Promise.all([page.waitForURL('**/timetables/personal**'), page.press('input[type=password]', 'Enter')]);
    // The first refresh of a new personal timetable (and its study plan) takes a moment: reload until it shows.
    for (let tries = 0; tries < 60 && (await page.locator('section.plan table').count()) === 0; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      await page.reload();
    }
    await shoot(page, 'personal', width);
    await context.close();
  }
} finally {
  await browser.close();
  await stopDemo();
  await rm(folder, { recursive: true, force: true });
}
