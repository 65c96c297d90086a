/**
 * Logs never contain credentials, tokens or feed secrets: a full scenario against real `start` and `render`
 * processes at LOG_LEVEL=trace, every line they print captured and searched for every secret in play.
 */

import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { freePort } from '../../src/runtime/embedded-redis.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { until } from '../../testkit/poll.ts';
import { exited, runCli, startCli, waitForOutput } from '../support/cli.ts';
import { deletePrefix, TEST_ADMIN_TOKEN, TEST_SECRET_KEY, uniquePrefix } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';

let sim: Awaited<ReturnType<typeof startSimulator>>;
const prefix = uniquePrefix('logs');

beforeAll(async () => {
  sim = await startSimulator({ port: 0, seed: 5, groups: 6, employees: 6, users: 3 });
});
afterAll(async () => {
  await sim?.close();
  await deletePrefix(inject('redisUrl'), prefix);
});

/** Collects everything a child prints, on both streams. */
function capture(child: ChildProcess): () => string {
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return () => text;
}

it('no credential, token or key reaches a log line, even at trace level', { timeout: 60_000 }, async () => {
  const control = simControl(sim.url);
  const [user, otherUser] = await control.users();
  if (!user || !otherUser) throw new Error('the simulator has no users');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    REDIS_URL: inject('redisUrl'),
    REDIS_PREFIX: prefix,
    UNIVERSITY_API_URL: sim.url,
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    SECRET_KEY: TEST_SECRET_KEY,
    LOG_LEVEL: 'trace',
    PORT: String(port),
    REFRESH_ATTEMPTS: '1',
  };
  const service = startCli(['start'], { env });
  const logs = capture(service);
  await waitForOutput(service, /is running on/);
  const admin = { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' };

  // A personal subscription, its secret feed URL, its management routes.
  const created = await fetch(`${base}/api/subscriptions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ credential: user.token }),
  });
  expect(created.status).toBe(201);
  const { id, token, feedUrl } = (await created.json()) as { id: string; token: string; feedUrl: string };
  const feed = await until(
    () => fetch(feedUrl.replace(/^https?:\/\/[^/]+/, base)),
    (response) => response.status === 200,
  );
  expect(feed.status).toBe(200);
  expect(
    (await fetch(`${base}/api/subscriptions/${id}`, { headers: { authorization: `Bearer ${token}` } })).status,
  ).toBe(200);
  expect(
    (await fetch(`${base}/api/subscriptions/${id}`, { headers: { authorization: `Bearer ${otherUser.token}` } }))
      .status,
  ).toBe(401);
  expect((await fetch(`${base}/feeds/personal/${token.slice(0, -2)}xx.ics`)).status).toBe(404);
  expect(
    (
      await fetch(`${base}/api/subscriptions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ credential: `${user.token}-revoked` }),
      })
    ).status,
  ).toBe(401);

  // The university starts rejecting the credential; an admin resync marks the subscription; the user replaces it.
  await control.fault({ endpoint: 'mySchedule', kind: 'status', status: 401, error: 'Недействительный токен' });
  expect(
    (
      await fetch(`${base}/admin/resync`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ subscription: id }),
      })
    ).status,
  ).toBe(202);
  const marked = await until(
    async () =>
      (await (await fetch(`${base}/api/subscriptions/${id}`, { headers: admin })).json()) as { status: string },
    (body) => body.status === 'needs-credential',
  );
  expect(marked.status).toBe('needs-credential');
  await control.clearFaults();
  expect(
    (
      await fetch(`${base}/api/subscriptions/${id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ credential: user.token }),
      })
    ).status,
  ).toBe(200);

  // Admin routes with the right token, a wrong one, and the board's Basic auth.
  expect((await fetch(`${base}/admin/sources`, { headers: admin })).status).toBe(200);
  expect(
    (await fetch(`${base}/admin/sources`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}x` } })).status,
  ).toBe(401);
  expect(
    (
      await fetch(`${base}/admin/queues`, {
        headers: { authorization: `Basic ${Buffer.from(`admin:${TEST_ADMIN_TOKEN}`).toString('base64')}` },
      })
    ).status,
  ).toBe(200);
  expect(
    (
      await fetch(`${base}/api/subscriptions/${id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${token}` },
      })
    ).status,
  ).toBe(204);
  service.kill('SIGTERM');
  expect(await exited(service)).toBe(0);

  // `render --me` reads the credential from the environment.
  const render = await runCli(['render', '--me'], {
    env: { UNIVERSITY_API_URL: sim.url, UNIVERSITY_CREDENTIAL: user.token, LOG_LEVEL: 'trace' },
  });
  expect(render.code).toBe(0);

  const output = `${logs()}\n${render.stderr}`;
  // The logs are really there (a vacuous pass would prove nothing).
  expect(output).toContain('feed published');
  expect(output).toContain('"level":20');
  expect(output.split('\n').length).toBeGreaterThan(20);
  const secrets = {
    'user credential': user.token,
    'other credential': otherUser.token,
    'feed token': token,
    'feed token hash': createHash('sha256').update(token).digest('hex'),
    'admin token': TEST_ADMIN_TOKEN,
    'secret key': TEST_SECRET_KEY,
    'basic credentials': Buffer.from(`admin:${TEST_ADMIN_TOKEN}`).toString('base64'),
  };
  for (const [name, secret] of Object.entries(secrets)) {
    expect(output.includes(secret), `${name} appears in the logs`).toBe(false);
    expect(output.includes(encodeURIComponent(secret)), `${name} (URL-encoded) appears in the logs`).toBe(false);
  }
});
