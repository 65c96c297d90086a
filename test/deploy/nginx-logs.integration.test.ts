/**
 * deploy/nginx.conf run by a real nginx through deploy/run-proxy (skipped where no nginx is installed), in front
 * of a stand-in api on loopback: its access log must not hold a personal feed token or an OAuth code, and it
 * must not pass the operator pages (`/metrics`, the queue board) from outside. With the api down, its error log
 * must not hold secrets either.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { until } from '../../testkit/poll.ts';
import { type RunningProxy, startProxy } from '../../testkit/proxy.ts';

const nginxPath = inject('nginxPath');

describe.skipIf(nginxPath === undefined)('deploy/nginx.conf on a real nginx', () => {
  let dir: string;
  let api: Server;
  let proxy: RunningProxy | undefined;
  let base: string;
  let port: number;
  /** The paths the stand-in api was asked for. */
  const reached: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tts-nginx-'));
    api = createServer((incoming, response) => {
      reached.push(incoming.url ?? '');
      response.end('ok\n');
    });
    await new Promise<void>((done) => api.listen(0, '127.0.0.1', done));
    const apiPort = (api.address() as AddressInfo).port;
    proxy = await startProxy({ api: `http://127.0.0.1:${apiPort}`, dir, nginxPath });
    ({ url: base, port } = proxy);
  }, 60_000);
  afterAll(async () => {
    await proxy?.stop();
    await new Promise((done) => api?.close(done));
    await rm(dir, { recursive: true, force: true });
  });

  it('logs personal feed requests with the token hidden, and no query strings', async () => {
    const token = 'S3cretPersonalToken0123456789abcdefghijklmno';
    for (const path of [
      `/feeds/personal/${token}.ics`,
      `/feeds/personal/${token}.ics?subgroup=1`,
      `/feeds/%70ersonal/${token}.ics`,
      `/FEEDS/Personal/${token}.ics`,
      '/google/callback?code=0AuthCodeSecret&state=abc',
      '/feeds/groups/4242.ics',
    ])
      expect((await fetch(`${base}${path}`)).status, path).toBe(200);
    // Through a public feed's prefix (whose own lines are not masked), as sent: nginx resolves the dots first,
    // and the path is a personal feed's again.
    for (const path of [`/feeds/groups/../personal/${token}.ics`, `/feeds/groups/%2e%2E/personal/${token}.ics`])
      expect((await rawGet(port, path)).status, path).toBe(200);
    const log = await until(
      () => readFile(join(dir, 'access.log'), 'utf8').catch(() => ''),
      (text) => text.split('\n').filter(Boolean).length >= 8,
      15_000,
    );
    expect(log).not.toContain(token);
    expect(log).not.toContain('0AuthCodeSecret');
    expect(log.match(/"GET \/feeds\/personal\/<hidden> HTTP\/1\.1" 200/g)).toHaveLength(6);
    expect(log).toContain('"GET /google/callback HTTP/1.1" 200');
    expect(log).toContain('"GET /feeds/groups/4242.ics HTTP/1.1" 200');
    // run-proxy's top level keeps the nginx image's default log (format `main`, with the request line): ours
    // must replace it.
    expect(await readFile(join(dir, 'default-access.log'), 'utf8').catch(() => '')).toBe('');
  }, 30_000);

  it('refuses /metrics and the queue board in every spelling, and passes feeds and the admin API', async () => {
    const refused = [
      '/metrics',
      '/metrics/',
      '/metrics?name=x',
      '/METRICS',
      '//metrics',
      '/feeds/../metrics',
      '/%6detrics',
      '/admin/queues',
      '/admin/queues/',
      '/admin/queues/api/queues',
      '/Admin/Queues',
      '/admin//queues',
      '/admin/%71ueues/static/x.js',
    ];
    reached.length = 0;
    for (const path of refused) {
      const answer = await rawGet(port, path);
      expect(answer.status, path).toBe(404);
      expect(JSON.parse(answer.body), path).toEqual({ error: expect.any(String), code: 'NOT_PROXIED' });
    }
    expect(reached).toEqual([]);
    // Everything else passes: feeds, health, and the token-guarded admin routes.
    const passed = ['/feeds/groups/4242.ics', '/healthz', '/readyz', '/admin/sources', '/admin/parity'];
    for (const path of passed) expect((await rawGet(port, path)).status, path).toBe(200);
    expect(reached).toEqual(passed);
  }, 30_000);

  // Last: stops the api for good.
  it('keeps secrets out of the error log while the api is down', async () => {
    await new Promise((done) => {
      api.close(done);
      api.closeAllConnections();
    });
    const token = 'S3cretPersonalToken0123456789abcdefghijklmno';
    for (const path of [
      `/feeds/personal/${token}.ics`,
      '/google/callback?code=0AuthCodeSecret&state=abc',
      '/google/targets/t1/manage?token=ManageTokenSecret',
      '/GOOGLE/targets/t1/manage?token=ManageTokenSecret',
      '/feeds/groups/4242.ics?after=secrets',
    ])
      expect((await fetch(`${base}${path}`)).status, path).toBe(502);
    // nginx logs each failure as it answers; the last path's line shows the error log is being written. run-proxy
    // sends the critical-only lines of the secret-bearing paths to the same file.
    const errors = await until(
      () => readFile(join(dir, 'error.log'), 'utf8').catch(() => ''),
      (text) => text.includes('/feeds/groups/4242.ics'),
      15_000,
    );
    for (const secret of [token, '0AuthCodeSecret', 'ManageTokenSecret']) expect(errors).not.toContain(secret);
  }, 30_000);
});

/** GET `path` exactly as written (fetch would resolve `..` and fold `//` first). */
function rawGet(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const asked = request({ host: '127.0.0.1', port, path, agent: false }, (answer) => {
      let body = '';
      answer.setEncoding('utf8');
      answer.on('data', (chunk: string) => {
        body += chunk;
      });
      answer.on('end', () => resolve({ status: answer.statusCode ?? 0, body }));
    });
    asked.on('error', reject);
    asked.end();
  });
}
