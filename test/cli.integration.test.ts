import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pingRedis } from '../src/runtime/embedded-redis.ts';
import { exited, runCli, startCli, waitForOutput } from './support/cli.ts';

const COMMANDS = ['demo', 'start', 'api', 'worker', 'simulator', 'render', 'resync'];

describe('timetable-sync command line', () => {
  it('lists every command of docs/design.md in its help', async () => {
    const result = await runCli(['--help']);
    expect(result.code).toBe(0);
    for (const command of COMMANDS) expect(result.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
  });

  it.each(COMMANDS)('has --help for %s', async (command) => {
    const result = await runCli([command, '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^Usage: timetable-sync ${command}`));
  });

  it('rejects an unknown command and an unknown option with usage errors', async () => {
    const unknown = await runCli(['frobnicate']);
    expect(unknown.code).toBe(64);
    expect(unknown.stderr).toContain('unknown command "frobnicate"');
    const badOption = await runCli(['simulator', '--prot', '1']);
    expect(badOption.code).toBe(64);
    expect(badOption.stderr).toContain("Unknown option '--prot'");
    const badPort = await runCli(['simulator', '--port', 'eighty']);
    expect(badPort.code).toBe(64);
    expect(badPort.stderr).toContain('--port must be a whole number');
  });

  it('checks resync arguments before looking for Redis, and says so when there is none', async () => {
    const result = await runCli(['resync', '--all']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('no Redis: set REDIS_URL');
    expect((await runCli(['resync'])).code).toBe(64);
    expect((await runCli(['resync', '--group', 'abc'])).stderr).toContain(
      '--group must be an id, a whole number from 1 to 9007199254740991',
    );
    expect((await runCli(['resync', '--all', '--group', '1'])).code).toBe(64);
  });

  it('prints help on stderr with exit 64 when called without a command', async () => {
    const result = await runCli([]);
    expect(result.code).toBe(64);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('Usage: timetable-sync <command>');
  });

  it('requires UNIVERSITY_API_URL for start and worker', async () => {
    for (const role of ['start', 'worker']) {
      const result = await runCli([role]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('UNIVERSITY_API_URL: is required for this command');
    }
  });
});

describe('timetable-sync demo', () => {
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  afterEach(async () => {
    // Even when an assertion failed midway: no demo and no embedded Redis outlives the test.
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    for (const dir of dirs.splice(0)) {
      const record = await readFile(join(dir, '.data/redis.json'), 'utf8').catch(() => undefined);
      if (record) process.kill((JSON.parse(record) as { pid: number }).pid, 'SIGTERM');
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('starts a password-protected embedded Redis and the simulator, serves, and stops it all on SIGINT', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'tts-demo-'));
    dirs.push(cwd);
    const demo = startCli(['demo', '--port', '0', '--simulator-port', '0'], {
      cwd,
      env: { LOG_LEVEL: 'info', GOOGLE_CLIENT_ID: 'demo-client', GOOGLE_CLIENT_SECRET: 'demo-secret' },
    });
    children.push(demo);
    let printed = '';
    demo.stderr?.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    const output = await waitForOutput(demo, /University simulator:/, 60_000);
    const feeds = ['a group:', 'a teacher:'].map((label) => new RegExp(`${label}\\s+(\\S+)`).exec(output)?.[1] ?? '');
    for (const feedUrl of feeds) {
      // On PUBLIC_URL (localhost by default), the host Google sends a browser back to.
      expect(feedUrl).toMatch(/^http:\/\/localhost:\d+\/feeds\/(groups|employees)\/\d+\.ics$/);
      const response = await fetch(feedUrl);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/calendar; charset=utf-8');
      expect(await response.text()).toContain('BEGIN:VEVENT');
    }

    // The page finds any of the simulator's groups by name: demo imported them into the group directory.
    const page = /Find a timetable:\s+(\S+)/.exec(output)?.[1] ?? '';
    const simulatorUrl = /University simulator:\s+(\S+)/.exec(output)?.[1] ?? '';
    const listed = (await (await fetch(`${simulatorUrl}/_sim/groups`)).json()) as {
      groups: { id: number; name: string }[];
    };
    const last = listed.groups.at(-1);
    expect(listed.groups.length).toBe(1500);
    // The one group a whole name finds opens at once.
    const found = await fetch(`${page}?q=${encodeURIComponent(last?.name ?? '')}`, { redirect: 'manual' });
    expect(found.status).toBe(303);
    expect(found.headers.get('location')).toBe(`/timetables/groups/${last?.id}`);

    // The printed consent link starts a consent, with its cookie, on the host the callback comes back to; the
    // same link on 127.0.0.1 (where the demo listens) is sent there first.
    const connect = /Google Calendar push:\s+(\S+)/.exec(output)?.[1] ?? '';
    expect(connect).toMatch(/^http:\/\/localhost:\d+\/google\/connect\?source=group:\d+$/);
    const started = await fetch(connect, { redirect: 'manual' });
    expect(started.status).toBe(302);
    expect(started.headers.get('location')).toMatch(
      /^https:\/\/accounts\.google\.com\/.*redirect_uri=http%3A%2F%2Flocalhost%3A/,
    );
    expect(started.headers.get('set-cookie')).toMatch(/^tts-consent-/);
    const elsewhere = await fetch(connect.replace('//localhost:', '//127.0.0.1:'), { redirect: 'manual' });
    expect(elsewhere.status).toBe(302);
    expect(elsewhere.headers.get('location')).toBe(`${connect}&public-host=1`);
    expect(elsewhere.headers.get('set-cookie')).toBeNull();

    const record = JSON.parse(await readFile(join(cwd, '.data/redis.json'), 'utf8')) as { url: string };
    const { password, port } = new URL(record.url);
    expect(password).toMatch(/^[0-9a-f]{64}$/);
    expect(await pingRedis(record.url)).toBe(true);
    expect(existsSync(join(cwd, '.data/redis/appendonlydir'))).toBe(true);
    expect((await stat(join(cwd, '.data'))).mode & 0o777).toBe(0o700);
    expect((await stat(join(cwd, '.data/redis.json'))).mode & 0o777).toBe(0o600);
    // The printed address and every log line (info level) name Redis without its password.
    expect(output).toMatch(new RegExp(`Redis: +redis://127\\.0\\.0\\.1:${port} \\(credentials hidden\\)`));
    expect(`${output}${printed}`).not.toContain(password);

    // Commands of the folder still find it, password included.
    const resync = await runCli(['resync', '--all'], { cwd });
    expect(resync.stderr).toBe('');
    expect(resync.code).toBe(0);
    // render finds the demo's university as it finds its Redis: no UNIVERSITY_API_URL needed.
    const groupId = /\/feeds\/groups\/(\d+)\.ics/.exec(feeds[0] ?? '')?.[1] ?? '';
    const render = await runCli(['render', '--group', groupId], { cwd });
    expect(render.stderr).toContain(
      `using the university simulator of the demo running in this folder (${simulatorUrl})`,
    );
    expect(render.code).toBe(0);
    expect(render.stdout).toContain('BEGIN:VEVENT');

    demo.kill('SIGINT');
    expect(await exited(demo)).toBe(0);
    expect(await pingRedis(record.url)).toBe(false);
    expect(existsSync(join(cwd, '.data/redis.json'))).toBe(false);
    expect(existsSync(join(cwd, '.data/instance.lock'))).toBe(false);
    expect(existsSync(join(cwd, '.data/demo.json'))).toBe(false);
    // With the demo gone, its simulator is no longer assumed.
    expect((await runCli(['render', '--group', groupId], { cwd })).stderr).toContain('UNIVERSITY_API_URL');
  });

  it('refuses a second demo in the same folder while the first keeps serving, and takes over a stale lock', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'tts-demo-'));
    dirs.push(cwd);
    const demo = startCli(['demo', '--port', '0', '--simulator-port', '0'], { cwd, env: { LOG_LEVEL: 'warn' } });
    children.push(demo);
    const output = await waitForOutput(demo, /University simulator:/, 60_000);
    const feedUrl = /a group:\s+(\S+)/.exec(output)?.[1] ?? '';
    const before = await (await fetch(feedUrl)).text();

    const second = await runCli(['demo', '--port', '0', '--simulator-port', '0'], { cwd, timeoutMs: 30_000 });
    expect(second.code).toBe(1);
    expect(second.stderr).toBe(
      `timetable-sync demo: another demo is running in this folder (pid ${demo.pid}); stop it or use another folder\n`,
    );
    const start = await runCli(['start'], {
      cwd,
      env: { UNIVERSITY_API_URL: 'http://127.0.0.1:9' },
      timeoutMs: 30_000,
    });
    expect(start.code).toBe(1);
    expect(start.stderr).toContain(`another demo is running in this folder (pid ${demo.pid})`);
    const after = await fetch(feedUrl);
    expect(after.status).toBe(200);
    expect(await after.text()).toBe(before);

    // kill -9 leaves the lock (and Redis) behind: the next demo finds the lock stale and adopts Redis.
    demo.kill('SIGKILL');
    await exited(demo);
    const lock = JSON.parse(await readFile(join(cwd, '.data/instance.lock'), 'utf8')) as { pid: number };
    expect(lock.pid).toBe(demo.pid);
    const next = startCli(['demo', '--port', '0', '--simulator-port', '0'], { cwd, env: { LOG_LEVEL: 'warn' } });
    children.push(next);
    await waitForOutput(next, /University simulator:/, 60_000);
    const taken = JSON.parse(await readFile(join(cwd, '.data/instance.lock'), 'utf8')) as { pid: number };
    expect(taken.pid).toBe(next.pid);
    next.kill('SIGINT');
    expect(await exited(next)).toBe(0);
    expect(existsSync(join(cwd, '.data/instance.lock'))).toBe(false);
  });
});

describe('demo ports', () => {
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  const servers: Server[] = [];
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
    for (const dir of dirs.splice(0)) {
      const record = await readFile(join(dir, '.data/redis.json'), 'utf8').catch(() => undefined);
      if (record) process.kill((JSON.parse(record) as { pid: number }).pid, 'SIGTERM');
      await rm(dir, { recursive: true, force: true });
    }
  });

  /** A port held by a server of this test: `port` when given (already held by another is as good), else any. */
  async function hold(port = 0): Promise<number> {
    const server = createServer();
    const listening = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (!listening) return port;
    servers.push(server);
    return (server.address() as AddressInfo).port;
  }

  it('--port 0 picks a free simulator port too, with 4010 taken, and says quiet hours are on', async () => {
    await hold(4010);
    const cwd = await mkdtemp(join(tmpdir(), 'tts-demo-'));
    dirs.push(cwd);
    const demo = startCli(['demo', '--port', '0'], { cwd, env: { LOG_LEVEL: 'warn' } });
    children.push(demo);
    const output = await waitForOutput(demo, /University simulator:.*\n/, 60_000);
    const simulatorUrl = /University simulator:\s+(\S+)/.exec(output)?.[1] ?? '';
    expect(new URL(simulatorUrl).port).not.toBe('4010');
    expect((await fetch(`${simulatorUrl}/_sim/groups`)).status).toBe(200);
    expect(output).toContain(
      'Quiet hours:            Telegram messages wait from 23:00 to 07:00 (Europe/Moscow) unless a class starts sooner;\n' +
        '                          NOTIFY_QUIET_HOURS=off sends them at once',
    );
    demo.kill('SIGINT');
    expect(await exited(demo)).toBe(0);
  });

  it.each([
    ['--simulator-port', 'the university simulator'],
    ['--port', 'the service'],
  ])('names the flag in one line when the port of %s is in use', async (flag, name) => {
    const busy = await hold();
    const cwd = await mkdtemp(join(tmpdir(), 'tts-demo-'));
    dirs.push(cwd);
    const other = flag === '--port' ? '--simulator-port' : '--port';
    const result = await runCli(['demo', flag, String(busy), other, '0'], {
      cwd,
      env: { LOG_LEVEL: 'warn' },
      timeoutMs: 60_000,
    });
    expect(result.code).toBe(1);
    expect(result.stderr.split('\n').filter((line) => line.startsWith('timetable-sync'))).toEqual([
      `timetable-sync demo: port ${busy} (${name}) is in use: choose another with ${flag} N, or ${flag} 0 for a free one`,
    ]);
    expect(result.stderr).not.toMatch(/EADDRINUSE|\n\s+at /);
    // Nothing is left running: the embedded Redis stopped with the demo.
    expect(existsSync(join(cwd, '.data/redis.json'))).toBe(false);
  });
});

describe('an unreachable Redis', () => {
  it.each(['start', 'api', 'worker', 'resync'])('is one line naming it without credentials for %s', async (command) => {
    const env = { REDIS_URL: 'redis://:hunter2@127.0.0.1:1', UNIVERSITY_API_URL: 'http://127.0.0.1:9' };
    const result = await runCli(command === 'resync' ? ['resync', '--all'] : [command], { env, timeoutMs: 30_000 });
    expect(result.code).toBe(1);
    const lines = result.stderr.split('\n').filter((line) => line.startsWith('timetable-sync'));
    expect(lines).toEqual([
      `timetable-sync ${command}: cannot reach Redis at redis://127.0.0.1:1 (credentials hidden): ` +
        'connect ECONNREFUSED 127.0.0.1:1; check REDIS_URL and that redis-server runs',
    ]);
    expect(`${result.stdout}${result.stderr}`).not.toMatch(/hunter2|MaxRetriesPerRequest|\n\s+at /);
  });
});
