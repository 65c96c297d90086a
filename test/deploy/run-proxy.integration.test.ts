/**
 * deploy/run-proxy as operators run it: --help, a clear refusal when nginx is missing or the configuration it
 * renders is invalid, and a stop within seconds on SIGTERM (nginx replaced the script, so the signal reaches it).
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RUN_PROXY, startProxy } from '../../testkit/proxy.ts';

const nginxPath = inject('nginxPath');
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tts-run-proxy-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const run = (...args: string[]) => spawnSync(RUN_PROXY, args, { encoding: 'utf8', timeout: 30_000 });

describe('deploy/run-proxy', () => {
  it('explains itself with --help, and refuses missing arguments', () => {
    const help = run('--help');
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('--listen HOST:PORT --api URL --dir DIR');
    const missing = run('--listen', '127.0.0.1:1');
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('--api URL is required');
  });

  it('refuses to start without nginx, naming the package', () => {
    const answer = run(
      '--listen',
      '127.0.0.1:1',
      '--api',
      'http://127.0.0.1:2',
      '--dir',
      dir,
      '--nginx',
      '/nonexistent',
    );
    expect(answer.status).toBe(2);
    expect(answer.stderr).toContain('not an executable nginx: /nonexistent');
  });

  describe.skipIf(nginxPath === undefined)('with nginx', () => {
    it('refuses an invalid configuration before starting nginx', () => {
      const answer = run(
        '--listen',
        'no:such:port',
        '--api',
        'http://127.0.0.1:2',
        '--dir',
        dir,
        '--nginx',
        nginxPath ?? '',
      );
      expect(answer.status).toBe(2);
      expect(answer.stderr).toContain('the rendered configuration is invalid');
      expect(answer.stderr).toContain('[emerg]');
    });

    it('stops within seconds on SIGTERM', async () => {
      const proxy = await startProxy({ api: 'http://127.0.0.1:2', dir, nginxPath });
      const exited = new Promise<number | null>((done) => proxy.child.once('exit', (code) => done(code)));
      const started = Date.now();
      proxy.child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(Date.now() - started).toBeLessThan(5_000);
      await proxy.stop();
    }, 60_000);
  });
});
