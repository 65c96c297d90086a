import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
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
    expect((await runCli(['resync', '--group', 'abc'])).stderr).toContain('--group must be a positive integer id');
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

  it('starts embedded Redis and the simulator, serves, lets a second command reuse Redis, and stops it all on SIGINT', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'tts-demo-'));
    dirs.push(cwd);
    const demo = startCli(['demo', '--port', '0', '--simulator-port', '0'], { cwd, env: { LOG_LEVEL: 'warn' } });
    children.push(demo);
    const output = await waitForOutput(demo, /University simulator:/, 60_000);
    for (const label of ['a group:', 'a teacher:']) {
      const feedUrl = new RegExp(`${label}\\s+(\\S+)`).exec(output)?.[1] ?? '';
      expect(feedUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/feeds\/(groups|employees)\/\d+\.ics$/);
      const response = await fetch(feedUrl);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/calendar; charset=utf-8');
      expect(await response.text()).toContain('BEGIN:VEVENT');
    }

    const record = JSON.parse(await readFile(join(cwd, '.data/redis.json'), 'utf8')) as { url: string };
    expect(await pingRedis(record.url)).toBe(true);
    expect(existsSync(join(cwd, '.data/redis/appendonlydir'))).toBe(true);

    const second = startCli(['demo', '--port', '0', '--simulator-port', '0'], { cwd, env: { LOG_LEVEL: 'info' } });
    children.push(second);
    const secondOutput = await waitForOutput(second, /University simulator:/, 60_000);
    expect(secondOutput).toContain(record.url);
    second.kill('SIGINT');
    expect(await exited(second)).toBe(0);
    expect(await pingRedis(record.url)).toBe(true);

    demo.kill('SIGINT');
    expect(await exited(demo)).toBe(0);
    expect(await pingRedis(record.url)).toBe(false);
    expect(existsSync(join(cwd, '.data/redis.json'))).toBe(false);
  });
});
