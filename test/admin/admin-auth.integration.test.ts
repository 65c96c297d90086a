import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { presentedToken } from '../../src/http/admin-auth.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { TEST_ADMIN_TOKEN, testContext } from '../support/service.ts';
import { adminApp, BEARER } from './admin-app.ts';

const basic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});

describe('admin authentication', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function app(
    env: Record<string, string | undefined> = {},
  ): Promise<{ app: FastifyInstance; ctx: ServiceContext }> {
    const opened = await testContext(env);
    const built = await adminApp(opened.context);
    cleanups.push(opened.close, () => built.close());
    return { app: built, ctx: opened.context };
  }

  it('answers 503 saying so on every admin route when ADMIN_TOKEN is not set', async () => {
    for (const token of [undefined, '']) {
      const { app: server } = await app({ ADMIN_TOKEN: token });
      for (const [method, url] of [
        ['POST', '/admin/resync'],
        ['GET', '/admin/jobs/x'],
        ['GET', '/admin/sources'],
        ['GET', '/admin/queues'],
        ['GET', '/admin/nothing-here'],
      ] as const) {
        const response = await server.inject({
          method,
          url,
          headers: BEARER,
          ...(method === 'POST' ? { payload: { all: true } } : {}),
        });
        expect(response.statusCode, `${method} ${url}`).toBe(503);
        expect(response.json()).toEqual({
          error: 'admin routes are disabled: set ADMIN_TOKEN',
          code: 'ADMIN_DISABLED',
        });
      }
    }
  });

  it('answers 401 with a Bearer challenge to a missing, wrong or malformed token', async () => {
    const { app: server } = await app();
    const attempts = [
      {},
      { authorization: 'Bearer wrong-token-wrong-token' },
      { authorization: `Bearer ${TEST_ADMIN_TOKEN}x` },
      { authorization: TEST_ADMIN_TOKEN },
      basic('admin', TEST_ADMIN_TOKEN),
    ];
    for (const headers of attempts) {
      for (const url of ['/admin/sources', '/admin/nothing-here']) {
        const response = await server.inject({ method: 'GET', url, headers });
        expect(response.statusCode, JSON.stringify(headers)).toBe(401);
        expect(response.headers['www-authenticate']).toBe('Bearer');
        expect(response.json().error).toMatch(/admin token|Authorization: Bearer/);
      }
    }
  });

  it('lets the right Bearer token through, whatever the scheme case', async () => {
    const { app: server } = await app();
    expect((await server.inject({ method: 'GET', url: '/admin/sources', headers: BEARER })).statusCode).toBe(200);
    expect(
      (
        await server.inject({
          method: 'GET',
          url: '/admin/sources',
          headers: { authorization: `bearer ${TEST_ADMIN_TOKEN}` },
        })
      ).statusCode,
    ).toBe(200);
    const unknown = await server.inject({ method: 'GET', url: '/admin/nothing-here', headers: BEARER });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toContain('/admin/nothing-here');
  });

  it('serves Bull Board to a browser with HTTP Basic (any user, the token as password) and challenges it with Basic', async () => {
    const { app: server } = await app();
    const challenge = await server.inject({ method: 'GET', url: '/admin/queues' });
    expect(challenge.statusCode).toBe(401);
    expect(challenge.headers['www-authenticate']).toBe('Basic realm="timetable-sync admin"');
    const wrong = await server.inject({
      method: 'GET',
      url: '/admin/queues',
      headers: basic('admin', 'not-the-token'),
    });
    expect(wrong.statusCode).toBe(401);

    for (const headers of [basic('anyone', TEST_ADMIN_TOKEN), basic('', TEST_ADMIN_TOKEN), BEARER]) {
      const page = await server.inject({ method: 'GET', url: '/admin/queues', headers });
      expect(page.statusCode).toBe(200);
      expect(page.headers['content-type']).toContain('text/html');
      expect(page.body).toContain('/admin/queues');
    }
    const api = await server.inject({
      method: 'GET',
      url: '/admin/queues/api/queues',
      headers: basic('me', TEST_ADMIN_TOKEN),
    });
    expect(api.statusCode).toBe(200);
    expect(
      api
        .json()
        .queues.map((queue: { name: string }) => queue.name)
        .sort(),
    ).toEqual(['caldav-push', 'notify', 'push', 'refresh', 'schedule', 'telegram', 'webhook']);
    const apiWithout = await server.inject({ method: 'GET', url: '/admin/queues/api/queues' });
    expect(apiWithout.statusCode).toBe(401);
  });

  it('reads the token from Bearer everywhere and from Basic only on the board', () => {
    expect(presentedToken(`Bearer abc`, false)).toBe('abc');
    expect(presentedToken(`Basic ${Buffer.from('u:p:q').toString('base64')}`, true)).toBe('p:q');
    expect(presentedToken(`Basic ${Buffer.from('u:p').toString('base64')}`, false)).toBeUndefined();
    expect(presentedToken(`Basic ${Buffer.from('no-colon').toString('base64')}`, true)).toBeUndefined();
    expect(presentedToken('Bearer', false)).toBeUndefined();
    expect(presentedToken(undefined, true)).toBeUndefined();
  });
});
