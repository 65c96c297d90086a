/**
 * Google push never logs a secret: a real `start` process at LOG_LEVEL=trace connects one calendar through the
 * consent flow and registers another through the admin route, pushes through injected failures, loses one
 * grant, and every line it prints is searched for refresh and access tokens, authorization codes, the OAuth
 * state, manage tokens and the client secret.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { freePort } from '../../src/runtime/embedded-redis.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { type FakeGoogle, startFakeGoogle } from '../../testkit/fake-google/index.ts';
import { until } from '../../testkit/poll.ts';
import { exited, startCli, waitForOutput } from '../support/cli.ts';
import { deletePrefix, TEST_ADMIN_TOKEN, TEST_SECRET_KEY, uniquePrefix } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';

let sim: Awaited<ReturnType<typeof startSimulator>>;
let google: FakeGoogle;
const prefix = uniquePrefix('glogs');

beforeAll(async () => {
  sim = await startSimulator({ port: 0, seed: 7, groups: 4, employees: 4, users: 2 });
  google = await startFakeGoogle({ seed: 3 });
});
afterAll(async () => {
  await google?.close();
  await sim?.close();
  await deletePrefix(inject('redisUrl'), prefix);
});

/** Follows the consent flow by hand: our redirect, the fake consent page's redirect, our callback. */
async function consent(
  base: string,
  source: string,
): Promise<{ id: string; manageToken: string; code: string; state: string }> {
  const toGoogle = await fetch(`${base}/google/connect?source=${source}`, { redirect: 'manual' });
  expect(toGoogle.status).toBe(302);
  const back = await fetch(toGoogle.headers.get('location') ?? '', { redirect: 'manual' });
  const callback = new URL(back.headers.get('location') ?? '');
  // The browser's consent cookie goes back with the callback, as a browser would send it.
  const cookie = (toGoogle.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const answer = await fetch(`${base}${callback.pathname}${callback.search}`, {
    headers: { accept: 'application/json', cookie },
  });
  expect(answer.status).toBe(200);
  const body = (await answer.json()) as { id: string; manageToken: string };
  return { ...body, code: callback.searchParams.get('code') ?? '', state: callback.searchParams.get('state') ?? '' };
}

it('no Google token, code, state or secret reaches a log line, even at trace level', { timeout: 90_000 }, async () => {
  const control = simControl(sim.url);
  const [first, second] = await control.groups();
  if (!first || !second) throw new Error('the simulator has no groups');
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
    PUBLIC_URL: base,
    REFRESH_ATTEMPTS: '1',
    GOOGLE_CLIENT_ID: google.clientId,
    GOOGLE_CLIENT_SECRET: google.clientSecret,
    GOOGLE_API_ROOT_URL: google.rootUrl,
    GOOGLE_OAUTH_TOKEN_URL: google.tokenUrl,
    GOOGLE_OAUTH_AUTH_URL: google.authUrl,
  };
  const service = startCli(['start'], { env });
  let logs = '';
  service.stdout?.on('data', (chunk: Buffer) => (logs += chunk.toString()));
  service.stderr?.on('data', (chunk: Buffer) => (logs += chunk.toString()));
  await waitForOutput(service, /is running on/);
  const admin = { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' };
  const target = async (id: string) =>
    (await (await fetch(`${base}/admin/google-targets/${id}`, { headers: admin })).json()) as {
      status: string;
      lastPush: unknown;
    };

  // One calendar through consent, one through the admin route; their first pushes start (paced by the budget).
  const connected = await consent(base, `group:${first.id}`);
  const { refreshToken } = google.addUser();
  const registered = await fetch(`${base}/admin/google-targets`, {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({ source: `group:${second.id}`, refreshToken }),
  });
  expect(registered.status).toBe(201);
  const { id: adminTarget } = (await registered.json()) as { id: string };
  expect(
    (
      await fetch(`${base}/google/targets/${connected.id}`, {
        headers: { authorization: `Bearer ${connected.manageToken}` },
      })
    ).status,
  ).toBe(200);
  expect(
    (
      await fetch(`${base}/google/targets/${connected.id}`, {
        headers: { authorization: `Bearer ${connected.manageToken}x` },
      })
    ).status,
  ).toBe(401);

  // A changed timetable pushed through a 500, a rate limit and a 401 (expired access token), then a revoked grant.
  google.inject({ kind: '500', times: 1 });
  google.inject({ kind: '403-rate', times: 1 });
  google.expireAccessTokens();
  await control.addEntry({ groupIds: [second.id] });
  await fetch(`${base}/admin/resync`, { method: 'POST', headers: admin, body: JSON.stringify({ all: true }) });
  // Revoke only once a push has met both faults: otherwise the revoked grant could stop every push first and
  // leave a fault for the calendar deletion below.
  expect(
    await until(
      async () => google.counts().faulted,
      (faulted) => faulted >= 2,
      30_000,
    ),
  ).toBeGreaterThanOrEqual(2);
  google.revoke(refreshToken);
  google.expireAccessTokens();
  await control.addEntry({ groupIds: [second.id] });
  await fetch(`${base}/admin/resync`, {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({ source: `group:${second.id}` }),
  });
  expect(
    (
      await until(
        () => target(adminTarget),
        (state) => state.status === 'needs-consent',
        20_000,
      )
    ).status,
  ).toBe('needs-consent');
  // The status is stored before the line that reports it is written: wait for the line itself. Which Google
  // answer stopped the push is not fixed (the token endpoint's invalid_grant, or a 401 from the API after a
  // fresh token), so the line is matched on what every such stop logs.
  const stopLine = (text: string) =>
    /"status":"needs-consent"[^\n]*"msg":"push stopped: Google refused the grant/.test(text);
  expect(stopLine(await until(async () => logs, stopLine, 10_000))).toBe(true);
  expect(
    (
      await fetch(`${base}/google/targets/${connected.id}?deleteCalendar=true`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${connected.manageToken}` },
      })
    ).status,
  ).toBe(204);
  service.kill('SIGTERM');
  expect(await exited(service)).toBe(0);

  // The logs are really there, and show the Google work (a vacuous pass would prove nothing).
  expect(logs).toContain('"level":20');
  expect(google.counts().tokenRequests).toBeGreaterThan(2);
  const secrets: Record<string, string> = {
    'consent refresh token (admin route)': refreshToken,
    'authorization code': connected.code,
    'OAuth state': connected.state,
    'OAuth state hash': createHash('sha256').update(connected.state).digest('hex'),
    'manage token': connected.manageToken,
    'manage token hash': createHash('sha256').update(connected.manageToken).digest('hex'),
    'client secret': google.clientSecret,
  };
  for (const [name, secret] of Object.entries(secrets)) {
    expect(secret.length, `${name} is known`).toBeGreaterThan(8);
    expect(logs.includes(secret), `${name} appears in the logs`).toBe(false);
    expect(logs.includes(encodeURIComponent(secret)), `${name} (URL-encoded) appears in the logs`).toBe(false);
  }
  // Every token the fake ever issued has a recognisable prefix: refresh `1//fake-`, access `ya29.fake-`, code
  // `4/fake-`.
  for (const pattern of [/1\/\/fake-/, /1%2F%2Ffake-/i, /ya29\.fake-/, /4\/fake-/, /4%2Ffake-/i])
    expect(logs).not.toMatch(pattern);
});
