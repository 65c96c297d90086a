/**
 * `GET /admin/channels` and the channel state gauge: every channel with whether it is configured, its state (a
 * disabled one with why and since when) and the jobs its queue holds; behind the admin token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE } from '../../src/jobs/contract.ts';
import { TEST_ADMIN_TOKEN } from '../support/service.ts';
import { startTestApp, type TestApp } from './helpers.ts';

let t: TestApp;
const auth = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };

beforeAll(async () => {
  t = await startTestApp({
    env: { TELEGRAM_BOT_TOKEN: '123456:test-token-not-real', TELEGRAM_API_ROOT: 'http://127.0.0.1:9' },
  });
});
afterAll(() => t?.close());

async function channels(): Promise<Record<string, unknown>[]> {
  const response = await t.app.inject({ method: 'GET', url: '/admin/channels', headers: auth });
  expect(response.statusCode).toBe(200);
  expect(response.headers['cache-control']).toBe('no-store');
  return response.json().channels;
}

describe('GET /admin/channels', () => {
  it('asks for the admin token', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/admin/channels' });
    expect(response.statusCode).toBe(401);
    expect(response.json().code).toBeDefined();
  });

  it('names every channel: configured or not, its state and what waits', async () => {
    expect(await channels()).toEqual([
      { name: 'telegram', on: true, state: 'on', waiting: 0 },
      { name: 'max', on: false, state: 'off', waiting: 0 },
      { name: 'email', on: false, state: 'off', waiting: 0 },
      { name: 'webhook', on: true, state: 'on', waiting: 0 },
    ]);
  });

  it('says why a channel is disabled and since when, with its waiting messages, until it is on again', async () => {
    const since = Date.UTC(2029, 9, 2, 7, 0);
    await t.ctx.notify.states.disable('telegram', 'Telegram refuses the bot: 401 Unauthorized', since);
    const data = {
      deliveryId: 'tg:1:group:1:1',
      chatId: '1',
      set: { source: 'group:1', name: 'ИВТ-21', stamp: 1, items: [], omitted: 0 },
      pageUrl: 'https://timetable.example.edu/g',
    };
    await t.ctx.queues.telegram.add(QUEUE.telegram, data, { jobId: 'waiting-one' });
    await t.ctx.queues.telegram.add(QUEUE.telegram, data, { jobId: 'held-one', delay: 3_600_000 });
    const [telegram] = await channels();
    expect(telegram).toEqual({
      name: 'telegram',
      on: true,
      state: 'disabled',
      reason: 'Telegram refuses the bot: 401 Unauthorized',
      since: '2029-10-02T07:00:00.000Z',
      waiting: 2,
    });
    const scraped = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(scraped.body).toContain('tts_channel_state{channel="telegram"} 0');
    // Channels that are not configured have no state sample.
    expect(scraped.body).not.toContain('tts_channel_state{channel="max"}');

    expect(await t.ctx.notify.states.enable('telegram')).toBe(true);
    expect((await channels())[0]).toMatchObject({ state: 'on' });
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).body).toContain(
      'tts_channel_state{channel="telegram"} 1',
    );
  });
});
