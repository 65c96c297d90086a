/**
 * deploy/nginx.conf's cache of public feeds on a real nginx (through deploy/run-proxy; skipped where no nginx
 * is installed), in front of the real api listening on loopback, its workers, real Redis and the simulator. A
 * public feed is fetched from the api once and then served by nginx, exactly (ETag, 304, gzip, HEAD); queries,
 * personal feeds and pages always reach the api; a change published upstream reaches clients of the proxy
 * within 60 s; a revoked personal URL is refused at once; with the api gone, the cached copies are still served.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { silentLogger } from '../../src/logger.ts';
import { type RawResponse, rawRequest } from '../../testkit/processes.ts';
import { type RunningProxy, startProxy } from '../../testkit/proxy.ts';
import { type Pipeline, startPipeline, waitForJob } from '../jobs/helpers.ts';
import { TEST_ADMIN_TOKEN } from '../support/service.ts';

const nginxPath = inject('nginxPath');
/** What the issue promises: a change published upstream reaches the proxy's clients within a minute. */
const REACH_MS = 60_000;
/**
 * The api's `FEED_PUBLIC_MAX_AGE` here, in seconds: the last two tests wait out a copy's max-age, 30 s each at the
 * default. Long enough that the first test's dozen requests all find the copy fresh on a loaded machine.
 */
const MAX_AGE_SECONDS = 5;

describe.skipIf(nginxPath === undefined)('the proxy caches public feeds (deploy/nginx.conf on a real nginx)', () => {
  let dir: string;
  let pipeline: Pipeline;
  let app: FastifyInstance;
  let apiUrl: string;
  let apiClosed = false;
  let proxy: RunningProxy;
  /** Every request the api was asked, `METHOD url`, in order. */
  const seen: string[] = [];
  let group: number;
  let feedPath: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tts-proxy-cache-'));
    pipeline = await startPipeline({ FEED_PUBLIC_MAX_AGE: `${MAX_AGE_SECONDS}s` });
    app = await buildApp(pipeline.ctx, { logger: silentLogger() });
    await app.listen({ port: 0, host: '127.0.0.1' });
    app.server.on('request', (request) => seen.push(`${request.method} ${request.url}`));
    apiUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    proxy = await startProxy({ api: apiUrl, dir, nginxPath, workers: 1 });
    const [first] = await pipeline.sim.groups();
    if (first === undefined) throw new Error('the simulator has no group');
    group = first.id;
    feedPath = `/feeds/groups/${group}.ics`;
    // The feed exists at the api before the proxy is asked (a first request may answer 503 while it is fetched).
    await okFrom(apiUrl, feedPath);
  }, 120_000);

  afterAll(async () => {
    await proxy?.stop();
    if (!apiClosed) await app?.close();
    await pipeline?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Requests the api saw for `url` since `from` (an index into `seen`). */
  const asked = (from: number, url: string) => seen.slice(from).filter((line) => line.endsWith(` ${url}`)).length;
  const through = (path: string, options: Parameters<typeof rawRequest>[1] = {}) =>
    rawRequest(`${proxy.url}${path}`, options);

  it('serves a public feed from its cache after one request to the api, with ETag, 304, codings and HEAD', async () => {
    const from = seen.length;
    const first = await through(feedPath);
    expect(first.status).toBe(200);
    expect(first.headers['x-cache-status']).toBe('MISS');
    expect(first.headers['cache-control']).toBe(`public, max-age=${MAX_AGE_SECONDS}`);
    const second = await through(feedPath);
    expect(second.headers['x-cache-status']).toBe('HIT');
    expect(second.body.equals(first.body)).toBe(true);
    expect(second.headers.etag).toBe(first.headers.etag);
    expect(second.headers['last-modified']).toBe(first.headers['last-modified']);
    expect(second.headers['content-encoding']).toBeUndefined();
    expect(asked(from, feedPath)).toBe(1);

    // 304 on If-None-Match, answered from the cache with the same ETag.
    const etag = String(first.headers.etag);
    const notModified = await through(feedPath, { headers: { 'if-none-match': etag } });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.etag).toBe(etag);
    expect(notModified.body.length).toBe(0);

    // gzip when asked (a copy of its own, then a hit), plain when not: the two never mixed up.
    const gzip = await through(feedPath, { headers: { 'accept-encoding': 'gzip, deflate' } });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gzip.headers['x-cache-status']).toBe('MISS');
    expect(gunzipSync(gzip.body).equals(first.body)).toBe(true);
    expect(gzip.headers.etag).not.toBe(etag);
    const gzipAgain = await through(feedPath, { headers: { 'accept-encoding': 'deflate, gzip' } });
    expect(gzipAgain.headers['x-cache-status']).toBe('HIT');
    expect(gzipAgain.headers['content-encoding']).toBe('gzip');
    expect(gzipAgain.body.equals(gzip.body)).toBe(true);
    const plain = await through(feedPath, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers['x-cache-status']).toBe('HIT');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body.equals(first.body)).toBe(true);
    // A browser's header: br, cached once for every browser that accepts it.
    const br = await through(feedPath, { headers: { 'accept-encoding': 'gzip, deflate, br, zstd' } });
    expect(br.headers['content-encoding']).toBe('br');
    expect((await through(feedPath, { headers: { 'accept-encoding': 'br' } })).headers['x-cache-status']).toBe('HIT');

    // HEAD: the headers of the cached GET, no body.
    const head = await through(feedPath, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers['x-cache-status']).toBe('HIT');
    expect(head.headers.etag).toBe(etag);
    expect(head.body.length).toBe(0);
    // One request per coding reached the api: identity, gzip, br.
    expect(asked(from, feedPath)).toBe(3);
  }, 60_000);

  it('never caches a query, a personal feed, a page or the API', async () => {
    const query = `${feedPath}?alarm=15`;
    const from = seen.length;
    for (let i = 0; i < 2; i++) {
      const answer = await through(query);
      expect(answer.status).toBe(200);
      expect(answer.headers['x-cache-status']).toBe('BYPASS');
    }
    expect(asked(from, query)).toBe(2);

    const { token } = await signUp();
    const personal = `/feeds/personal/${token}.ics`;
    await okFrom(proxy.url, personal);
    const personalFrom = seen.length;
    for (let i = 0; i < 2; i++) {
      const answer = await through(personal);
      expect(answer.status).toBe(200);
      expect(answer.headers['x-cache-status']).toBeUndefined();
      expect(answer.headers['cache-control']).toMatch(/^private/);
    }
    expect(asked(personalFrom, personal)).toBe(2);

    for (const path of ['/', '/healthz']) {
      const pageFrom = seen.length;
      for (let i = 0; i < 2; i++) expect((await through(path)).headers['x-cache-status'], path).toBeUndefined();
      expect(asked(pageFrom, path), path).toBe(2);
    }
  }, 60_000);

  it('refuses a revoked personal URL through the proxy at once', async () => {
    const { id, token } = await signUp(1);
    const personal = `/feeds/personal/${token}.ics`;
    await okFrom(proxy.url, personal);
    expect((await through(personal)).status).toBe(200);
    // The owner's own way to revoke it: a new URL from the personal page (its cookie holds id and token).
    const rotated = await rawRequest(`${apiUrl}/timetables/personal/rotate`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `tts-personal=${id}.${token}` },
      body: '',
    });
    expect(rotated.headers.location).toBe('/timetables/personal?done=rotated');
    const refused = await through(personal);
    expect(refused.status).toBe(404);
    expect(refused.headers['x-cache-status']).toBeUndefined();
  }, 60_000);

  it(`shows a change published upstream through the proxy within ${REACH_MS / 1000} s`, async () => {
    const before = await through(feedPath);
    expect(before.status).toBe(200);
    expect(['HIT', 'MISS', 'EXPIRED', 'REVALIDATED', 'UPDATING', 'STALE']).toContain(before.headers['x-cache-status']);
    const room = `PROXY-${Date.now()}`;
    expect(before.body.toString()).not.toContain(room);
    await pipeline.sim.addEntry({ groupIds: [group], num_auditorium_schedule: room });
    const response = await fetch(`${apiUrl}/admin/resync`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ source: `group:${group}` }),
    });
    expect(response.status).toBe(202);
    for (const job of ((await response.json()) as { jobs: string[] }).jobs)
      expect((await waitForJob(pipeline.ctx, job, 30_000)).state).toBe('completed');
    const published = Date.now();
    // The api has it at once; the proxy once its copy is older than the api's max-age.
    expect((await rawRequest(`${apiUrl}${feedPath}`)).body.toString()).toContain(room);
    let seenThrough: RawResponse | undefined;
    while (Date.now() - published < REACH_MS + 5_000) {
      const answer = await through(feedPath);
      if (answer.status === 200 && answer.body.toString().includes(room)) {
        seenThrough = answer;
        break;
      }
      await new Promise((wake) => setTimeout(wake, 250));
    }
    const took = Date.now() - published;
    expect(seenThrough, `the change did not show through the proxy within ${took} ms`).toBeDefined();
    expect(took).toBeLessThan(REACH_MS);
    // And it is cached again.
    expect((await through(feedPath)).headers['x-cache-status']).toBe('HIT');
  }, 120_000);

  // Last: stops the api for good.
  it('serves cached public feeds while the api is down, past their max-age (STALE)', async () => {
    const cached = await through(feedPath);
    expect(cached.status).toBe(200);
    await app.close();
    apiClosed = true;
    expect((await through('/healthz')).status).toBe(502);
    // Asked until the copy's max-age has passed: then nginx tries the api, fails, and serves the copy anyway.
    let answer = await through(feedPath);
    const deadline = Date.now() + (MAX_AGE_SECONDS + 30) * 1000;
    while (answer.headers['x-cache-status'] !== 'STALE' && Date.now() < deadline) {
      expect(answer.status).toBe(200);
      await new Promise((wake) => setTimeout(wake, 500));
      answer = await through(feedPath);
    }
    expect(answer.headers['x-cache-status']).toBe('STALE');
    expect(answer.status).toBe(200);
    expect(answer.body.equals(cached.body)).toBe(true);
    expect(answer.headers.etag).toBe(cached.headers.etag);
    // A feed never cached is an error meanwhile: nothing to serve.
    expect((await through(`/feeds/groups/${group}.ics?alarm=5`)).status).toBe(502);
  }, 120_000);

  /** Signs up the simulator's user `index` through the proxy: the new subscription's id and feed token. */
  async function signUp(index = 0): Promise<{ id: string; token: string }> {
    const users = await pipeline.sim.users();
    const credential = users[index]?.token;
    if (credential === undefined) throw new Error(`the simulator has no user ${index}`);
    const answer = await through('/api/subscriptions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ credential }),
    });
    expect(answer.status, answer.body.toString()).toBe(201);
    return JSON.parse(answer.body.toString()) as { id: string; token: string };
  }
});

/** GETs `path` from `base` until it answers 200 (a first feed request may answer 503 while its fetch runs). */
async function okFrom(base: string, path: string): Promise<RawResponse> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const answer = await rawRequest(`${base}${path}`);
    if (answer.status === 200) return answer;
    if (Date.now() > deadline) throw new Error(`GET ${path} answered ${answer.status}: ${answer.body}`);
    await new Promise((wake) => setTimeout(wake, 250));
  }
}
