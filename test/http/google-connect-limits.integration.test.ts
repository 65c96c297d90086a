/**
 * `GET /google/connect` stores a pending consent per call (500 calls once wrote 500 Redis keys): beyond the
 * client's limit it answers 429 and stores nothing. The other Google suites raise the limit out of their way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GoogleApp, PUBLIC_URL, startGoogleApp } from './google-helpers.ts';
import { storeTimetable } from './helpers.ts';

/** The per-client allowance of this suite. */
const ALLOWED = 3;

let g: GoogleApp;

beforeAll(async () => {
  g = await startGoogleApp({ GOOGLE_CONNECTS_PER_CLIENT: `${ALLOWED}/10m` });
  await storeTimetable(g.ctx, 'group:4242');
});
afterAll(async () => {
  await g.close();
});

function connect() {
  return g.app.inject({
    method: 'GET',
    url: '/google/connect?source=group:4242',
    headers: { host: new URL(PUBLIC_URL).host },
  });
}

async function keyCount(pattern: string): Promise<number> {
  return (await g.ctx.redis.keys(pattern)).length;
}

/** Keys under the suite's prefix, except the queues' (BullMQ's own bookkeeping comes and goes). */
async function storedKeys(): Promise<number> {
  const keys = await g.ctx.redis.keys(`${g.ctx.config.redisPrefix}:*`);
  return keys.filter((key) => !key.startsWith(`${g.ctx.keys.queuePrefix}:`)).length;
}

describe('GET /google/connect limits', () => {
  it('answers 429 with Retry-After beyond the client’s connects, and stores no consent for them', async () => {
    const consents = g.ctx.keys.googleOAuthState('*');
    for (let i = 0; i < ALLOWED; i++) expect((await connect()).statusCode).toBe(302);
    expect(await keyCount(consents)).toBe(ALLOWED);

    const refused = await connect();
    expect(refused.statusCode).toBe(429);
    // One token comes back every 200 s at 3/10m.
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(100);
    expect(refused.headers['content-type']).toMatch(/^application\/json/);
    expect(refused.json()).toEqual({
      error: expect.stringMatching(/^too many Google connections from your address/),
      code: 'RATE_LIMITED',
    });
    expect(refused.headers['set-cookie']).toBeUndefined();

    // Further refusals write nothing at all under the prefix: no consent, no new key of any kind.
    const keysAfterFirstRefusal = await storedKeys();
    for (let i = 0; i < 20; i++) expect((await connect()).statusCode).toBe(429);
    expect(await keyCount(consents)).toBe(ALLOWED);
    expect(await storedKeys()).toBe(keysAfterFirstRefusal);
  });
});
