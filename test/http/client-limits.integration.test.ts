import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { startTestApp, type TestApp } from './helpers.ts';

let simulator: RunningSimulator;
const apps: TestApp[] = [];

beforeAll(async () => {
  simulator = await startSimulator({ port: 0, seed: 3, groups: 2, employees: 6, users: 1 });
});
afterAll(async () => {
  for (const app of apps) await app.close();
  await simulator.close();
});

async function appWith(env: Record<string, string>): Promise<TestApp> {
  const app = await startTestApp({ env: { UNIVERSITY_API_URL: simulator.url, SEARCHES_PER_CLIENT: '2/1m', ...env } });
  apps.push(app);
  return app;
}

function search(app: TestApp, q: string, headers: Record<string, string> = {}) {
  return app.app.inject({ method: 'GET', url: `/api/employees?q=${encodeURIComponent(q)}`, headers });
}

describe('teacher search limits', () => {
  it('answers 429 with Retry-After beyond the client’s misses; cached queries stay free', async () => {
    const app = await appWith({});
    expect((await search(app, 'Ив')).statusCode).toBe(200);
    expect((await search(app, 'Пе')).statusCode).toBe(200);
    const refused = await search(app, 'Си');
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(29);
    expect(refused.json()).toEqual({
      error: expect.stringMatching(/^too many teacher searches from your address/),
      code: 'RATE_LIMITED',
    });
    expect((await search(app, 'ив')).statusCode).toBe(200);
  });

  it('ignores X-Forwarded-For unless TRUST_PROXY names the peer', async () => {
    const untrusting = await appWith({});
    await search(untrusting, 'Аа', { 'x-forwarded-for': '198.51.100.1' });
    await search(untrusting, 'Бб', { 'x-forwarded-for': '198.51.100.2' });
    expect((await search(untrusting, 'Вв', { 'x-forwarded-for': '198.51.100.3' })).statusCode).toBe(429);

    const trusting = await appWith({ TRUST_PROXY: '127.0.0.1' });
    for (const [i, q] of ['Аа', 'Бб', 'Вв', 'Гг'].entries()) {
      expect((await search(trusting, q, { 'x-forwarded-for': `198.51.100.${i}` })).statusCode).toBe(200);
    }
  });

  it('limits all clients together too', async () => {
    const app = await appWith({ TRUST_PROXY: '127.0.0.1', SEARCHES_TOTAL: '3/1m' });
    for (const [i, q] of ['Дд', 'Ее', 'Жж'].entries()) {
      expect((await search(app, q, { 'x-forwarded-for': `203.0.113.${i}` })).statusCode).toBe(200);
    }
    const refused = await search(app, 'Зз', { 'x-forwarded-for': '203.0.113.9' });
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error).toMatch(/^too many teacher searches right now/);
  });
});
