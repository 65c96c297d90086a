/**
 * The sign-up limits over the real routes, the simulator as the university: correct sign-ups that run at once
 * never use up the failure budget, a client's checks in flight are capped with their own answer, refusals are
 * charged after the fact, the overall failure budget refuses only clients that were refused recently, and no
 * failure limit ever refuses a credential the university accepted before, while the university still sees
 * only a handful of wrong ones from an address.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { simControl } from '../upstream/sim-control.ts';
import { startTestApp, type TestApp } from './helpers.ts';

let simulator: RunningSimulator;
let credentials: string[];
const apps: TestApp[] = [];

beforeAll(async () => {
  simulator = await startSimulator({ port: 0, seed: 5, groups: 2, employees: 2, users: 12 });
  credentials = (await simControl(simulator.url).users()).map((user) => user.token);
});
afterAll(async () => {
  for (const app of apps) await app.close();
  await simulator.close();
});

async function appWith(env: Record<string, string> = {}): Promise<TestApp> {
  const app = await startTestApp({ env: { UNIVERSITY_API_URL: simulator.url, TRUST_PROXY: '127.0.0.1', ...env } });
  apps.push(app);
  return app;
}

function signUp(app: TestApp, credential: string, from = '192.0.2.1') {
  return app.app.inject({
    method: 'POST',
    url: '/api/subscriptions',
    headers: { 'x-forwarded-for': from },
    payload: { credential },
  });
}

/** Profile checks the university has answered so far. */
async function meCalls(): Promise<number> {
  return (await simControl(simulator.url).stats()).byEndpoint.me ?? 0;
}

function credential(index: number): string {
  const found = credentials[index];
  if (found === undefined) throw new Error(`the simulator has no user ${index}`);
  return found;
}

describe('sign-up limits', () => {
  it('serve 8 correct sign-ups from one address at once, however slow the university', async () => {
    const app = await appWith();
    await simControl(simulator.url).fault({ endpoint: 'me', kind: 'latency', latencyMs: 600, times: 8 });
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => signUp(app, credential(i))));
    expect(answers.map((answer) => answer.statusCode)).toEqual(Array(8).fill(201));
  });

  it('cap the checks one client has in flight, with their own answer', async () => {
    const app = await appWith({ SIGN_UPS_IN_FLIGHT_PER_CLIENT: '2' });
    await simControl(simulator.url).fault({ endpoint: 'me', kind: 'latency', latencyMs: 600, times: 2 });
    const answers = await Promise.all([0, 1, 2].map((i) => signUp(app, credential(i))));
    const refused = answers.filter((answer) => answer.statusCode === 429);
    expect(refused).toHaveLength(1);
    expect(refused[0]?.json()).toEqual({
      error: 'too many sign-ups in progress from your address; try again in 5 seconds',
      code: 'RATE_LIMITED',
    });
    expect(refused[0]?.headers['retry-after']).toBe('5');
    // Another address is not affected by this one's checks in flight.
    await simControl(simulator.url).fault({ endpoint: 'me', kind: 'latency', latencyMs: 600, times: 2 });
    const [mine, theirs] = await Promise.all([
      Promise.all([0, 1].map((i) => signUp(app, credential(i)))),
      signUp(app, credential(2), '192.0.2.2'),
    ]);
    for (const answer of [...mine, theirs]) expect([200, 201]).toContain(answer.statusCode);
  });

  it('charge a refused credential after the answer, and refuse the client once its failures are spent', async () => {
    const app = await appWith({ FAILED_SIGN_UPS_PER_CLIENT: '2/15m' });
    expect((await signUp(app, credential(0))).statusCode).toBe(201);
    expect((await signUp(app, 'wrong-1')).statusCode).toBe(401);
    expect((await signUp(app, credential(0))).statusCode).toBe(200);
    expect((await signUp(app, 'wrong-2')).statusCode).toBe(401);
    // Out of failures: a credential never seen here is not sent to the university, right or wrong...
    const calls = await meCalls();
    const refused = await signUp(app, credential(1));
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error).toBe('too many refused credentials from your address; try again in 450 seconds');
    expect(await meCalls()).toBe(calls);
    // ...while one the university accepted before still signs up, checked with the university as always.
    expect((await signUp(app, credential(0))).statusCode).toBe(200);
    expect(await meCalls()).toBe(calls + 1);
    expect((await signUp(app, credential(1), '192.0.2.9')).statusCode).toBe(201);
  });

  it('grow the failure budget of an address with the distinct people accepted from it; a lone one keeps the base', async () => {
    const app = await appWith({
      FAILED_SIGN_UPS_PER_CLIENT: '3/15m',
      FAILED_SIGN_UPS_PER_ACCEPTED: '2',
      SIGN_UPS_PER_CLIENT: '100/10m',
    });
    const nat = '198.51.100.20';
    // A campus NAT: four students signed in from it (three beyond the first: the budget grows by 3 × 2 to 9).
    for (let i = 2; i < 6; i++) expect((await signUp(app, credential(i), nat)).statusCode).toBe(201);
    for (let i = 0; i < 8; i++) expect((await signUp(app, `typo-${i}`, nat)).statusCode).toBe(401);
    // A first-time correct credential from it still passes after eight typos (the base alone refused it after 3).
    expect((await signUp(app, credential(6), nat)).statusCode).toBe(201);
    // The grown budget is a bound too: once spent, new credentials from the NAT wait, unsent.
    expect((await signUp(app, 'typo-8', nat)).statusCode).toBe(401);
    const spent = await meCalls();
    expect((await signUp(app, credential(8), nat)).statusCode).toBe(429);
    expect(await meCalls()).toBe(spent);

    // A lone address with its own credential accepted keeps the base: three typos, then refused unsent.
    const lone = '198.51.100.30';
    expect((await signUp(app, credential(9), lone)).statusCode).toBe(201);
    for (let i = 0; i < 3; i++) expect((await signUp(app, `guess-${i}`, lone)).statusCode).toBe(401);
    const calls = await meCalls();
    const refused = await signUp(app, credential(7), lone);
    expect(refused.statusCode).toBe(429);
    expect(await meCalls()).toBe(calls);
  });

  it('never refuse a credential accepted before, however many wrong ones its address sent', async () => {
    const app = await appWith();
    const campus = '203.0.113.7';
    expect((await signUp(app, credential(4), campus)).statusCode).toBe(201);
    expect((await signUp(app, credential(5), '192.0.2.20')).statusCode).toBe(201);
    // Someone behind the same address guesses: 8 at once (the most in flight), then a flood of 60 more.
    const before = await meCalls();
    const burst = await Promise.all(Array.from({ length: 8 }, (_, i) => signUp(app, `guess-${i}`, campus)));
    expect(burst.map((answer) => answer.statusCode)).toEqual(Array(8).fill(401));
    const flood = [];
    for (let start = 0; start < 60; start += 10)
      flood.push(
        ...(await Promise.all(Array.from({ length: 10 }, (_, i) => signUp(app, `guess-${8 + start + i}`, campus)))),
      );
    expect(flood.map((answer) => answer.statusCode)).toEqual(Array(60).fill(429));
    // The university saw the burst, and nothing of the flood.
    expect((await meCalls()) - before).toBe(8);

    // Credentials it accepted before sign up from there at once, each checked with the university: the one
    // first used there, one first used elsewhere, and with a feed token, the replacement by the same one.
    const again = await signUp(app, credential(4), campus);
    expect(again.statusCode).toBe(200);
    expect((await signUp(app, credential(5), campus)).statusCode).toBe(200);
    const replaced = await app.app.inject({
      method: 'PATCH',
      url: `/api/subscriptions/${again.json().id}`,
      headers: { 'x-forwarded-for': campus, authorization: `Bearer ${again.json().token}` },
      payload: { credential: credential(4) },
    });
    expect(replaced.statusCode).toBe(200);
    // The sign-in form on the page alike.
    const page = await app.app.inject({
      method: 'POST',
      url: '/timetables/personal',
      headers: {
        'x-forwarded-for': campus,
        origin: app.ctx.config.publicUrl,
        'content-type': 'application/x-www-form-urlencoded',
      },
      payload: `credential=${encodeURIComponent(credential(4))}`,
    });
    expect(page.statusCode).toBe(303);
    expect((await meCalls()) - before).toBe(12);
    // A new person there waits until the address has failures to spare again: the guesser's debt.
    const newcomer = await signUp(app, credential(6), campus);
    expect(newcomer.statusCode).toBe(429);
    expect(Number(newcomer.headers['retry-after'])).toBeGreaterThan(180);

    // A known credential the university stops accepting is refused, charged, and forgotten.
    await simControl(simulator.url).fault({ endpoint: 'me', kind: 'status', status: 401, times: 1 });
    expect((await signUp(app, credential(5), campus)).statusCode).toBe(401);
    expect((await signUp(app, credential(5), campus)).statusCode).toBe(429);
    expect((await meCalls()) - before).toBe(13);
  });

  it('forget the credential of a deleted subscription', async () => {
    const app = await appWith({ FAILED_SIGN_UPS_PER_CLIENT: '1/15m' });
    const signedUp = await signUp(app, credential(7));
    expect(signedUp.statusCode).toBe(201);
    expect(await app.ctx.knownCredentials.has(credential(7))).toBe(true);
    const deleted = await app.app.inject({
      method: 'DELETE',
      url: `/api/subscriptions/${signedUp.json().id}`,
      headers: { authorization: `Bearer ${signedUp.json().token}` },
    });
    expect(deleted.statusCode).toBe(204);
    expect(await app.ctx.knownCredentials.has(credential(7))).toBe(false);
    expect((await signUp(app, 'wrong')).statusCode).toBe(401);
    expect((await signUp(app, credential(7))).statusCode).toBe(429);
  });

  it('bound refusals over all clients without refusing a client refused at most once', async () => {
    const app = await appWith({ FAILED_SIGN_UPS_TOTAL: '2/15m' });
    expect((await signUp(app, 'wrong-a', '198.51.100.1')).statusCode).toBe(401);
    expect((await signUp(app, 'wrong-b', '198.51.100.2')).statusCode).toBe(401);
    // The overall budget is spent. One refusal is a typo (behind a campus NAT, anyone's): that client may
    // still sign up...
    expect((await signUp(app, credential(3), '198.51.100.1')).statusCode).toBe(201);
    // ...and try once more; refused twice, it waits while everybody is out of failures (with a credential
    // the university never accepted here: one it did, it may still use).
    expect((await signUp(app, 'wrong-c', '198.51.100.2')).statusCode).toBe(401);
    const refused = await signUp(app, credential(8), '198.51.100.2');
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error).toMatch(
      /^too many refused credentials right now, one from your address; try again in/,
    );
    expect((await signUp(app, credential(3), '198.51.100.2')).statusCode).toBe(200);
    // A client never refused may, right or wrong.
    expect((await signUp(app, credential(8), '198.51.100.3')).statusCode).toBe(201);
    expect((await signUp(app, 'wrong-d', '198.51.100.4')).statusCode).toBe(401);
  });

  it('give the tokens back when the university was never asked (no SECRET_KEY)', async () => {
    const app = await appWith({ SECRET_KEY: '', SIGN_UPS_PER_CLIENT: '2/10m' });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await signUp(app, credential(0))).statusCode);
    expect(statuses).toEqual([503, 503, 503, 503]);
  });
});
