/**
 * The sign-up limits over the real routes, the simulator as the university: correct sign-ups that run at once
 * never use up the failure budget, a client's checks in flight are capped with their own answer, refusals are
 * charged after the fact, and the overall failure budget refuses only clients that were refused recently.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { simControl } from '../upstream/sim-control.ts';
import { startTestApp, type TestApp } from './helpers.ts';

let simulator: RunningSimulator;
let credentials: string[];
const apps: TestApp[] = [];

beforeAll(async () => {
  simulator = await startSimulator({ port: 0, seed: 5, groups: 2, employees: 2, users: 10 });
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
    const refused = await signUp(app, credential(0));
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error).toBe('too many refused credentials from your address; try again in 450 seconds');
    expect((await signUp(app, credential(0), '192.0.2.9')).statusCode).toBe(200);
  });

  it('bound refusals over all clients without refusing a client refused at most once', async () => {
    const app = await appWith({ FAILED_SIGN_UPS_TOTAL: '2/15m' });
    expect((await signUp(app, 'wrong-a', '198.51.100.1')).statusCode).toBe(401);
    expect((await signUp(app, 'wrong-b', '198.51.100.2')).statusCode).toBe(401);
    // The overall budget is spent. One refusal is a typo (behind a campus NAT, anyone's): that client may
    // still sign up...
    expect((await signUp(app, credential(3), '198.51.100.1')).statusCode).toBe(201);
    // ...and try once more; refused twice, it waits while everybody is out of failures.
    expect((await signUp(app, 'wrong-c', '198.51.100.2')).statusCode).toBe(401);
    const refused = await signUp(app, credential(3), '198.51.100.2');
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error).toMatch(
      /^too many refused credentials right now, one from your address; try again in/,
    );
    // A client never refused may, right or wrong.
    expect((await signUp(app, credential(3), '198.51.100.3')).statusCode).toBe(200);
    expect((await signUp(app, 'wrong-d', '198.51.100.4')).statusCode).toBe(401);
  });

  it('give the tokens back when the university was never asked (no SECRET_KEY)', async () => {
    const app = await appWith({ SECRET_KEY: '', SIGN_UPS_PER_CLIENT: '2/10m' });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await signUp(app, credential(0))).statusCode);
    expect(statuses).toEqual([503, 503, 503, 503]);
  });
});
