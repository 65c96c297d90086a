/**
 * The fake MAX Bot API keeps the rules the bot depends on, and the service's own client (notify/max/client.ts)
 * reads them right: the bare Authorization header (401 verify.token), messages to a dialog's chat_id with their
 * refusals (400, 403 chat.denied, 404 chat.not.found), markers on /updates (64-bit, commit on pass, only the latest
 * without one, one on an empty page too, a held poll woken by an update), webhooks (no polling while subscribed,
 * POSTs with the secret), button
 * answers, and the 429s of the bot's and a dialog's buckets, which the client waits out: Retry-After when sent,
 * else a wait doubling from a second. Every request of two clients takes a token of one shared Redis bucket.
 */
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import { MaxClient } from '../../src/notify/max/client.ts';
import { MaxApiError, MaxNetworkError } from '../../src/notify/max/errors.ts';
import { UPDATE_TYPES } from '../../src/notify/max/updates.ts';
import { type FakeMax, startFakeMax } from '../../testkit/fake-max/index.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

let redis: Redis;
const prefix = uniquePrefix('max-client');

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
});

afterAll(async () => {
  redis.disconnect();
  await deletePrefix(inject('redisUrl'), prefix);
});

async function fake(options: Parameters<typeof startFakeMax>[0] = {}): Promise<FakeMax> {
  const max = await startFakeMax(options);
  onTestFinished(() => max.close());
  return max;
}

/** A client of `max` recording its sleeps (they are real, but short ones are asked for). */
function clientOf(max: FakeMax, options: { token?: string; rate?: number; sleeps?: number[] } = {}): MaxClient {
  const client = new MaxClient({
    token: options.token ?? max.token,
    apiRoot: max.apiRoot,
    ...(options.rate === undefined ? {} : { rate: { redis, key: `${prefix}:rate:max-api`, perSecond: options.rate } }),
    sleepFor: async (ms) => {
      options.sleeps?.push(ms);
      await new Promise((wake) => setTimeout(wake, Math.min(ms, 50)));
    },
  });
  onTestFinished(() => client.close());
  return client;
}

async function raw(max: FakeMax, method: string, path: string, body?: unknown, token = max.token): Promise<Response> {
  return fetch(`${max.apiRoot}/${path}`, {
    method,
    headers: { authorization: token, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function refusal(promise: Promise<unknown>): Promise<MaxApiError> {
  const error = await promise.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  if (!(error instanceof MaxApiError)) throw new Error(`expected a MaxApiError, got ${String(error)}`);
  return error;
}

describe('fake MAX Bot API and the client', () => {
  it('takes the token only in a bare Authorization header, and the client never shows it', async () => {
    const max = await fake();
    expect((await clientOf(max).me()).username).toBe(max.username);
    const wrong = await refusal(clientOf(max, { token: 'not-the-token-1234' }).me());
    expect([wrong.status, wrong.code]).toEqual([401, 'verify.token']);
    expect(wrong.message).not.toContain('not-the-token-1234');
    // Bearer, and the query parameter older pages describe, are refused.
    expect((await raw(max, 'GET', 'me', undefined, `Bearer ${max.token}`)).status).toBe(401);
    const query = await fetch(`${max.apiRoot}/me?access_token=${max.token}`);
    expect([query.status, await query.json()]).toEqual([
      401,
      { code: 'verify.token', message: 'Invalid access_token' },
    ]);
    expect((await raw(max, 'GET', 'nothing-here')).status).toBe(404);
    expect((await raw(max, 'PUT', 'me')).status).toBe(405);
  });

  it("sends to a dialog's chat_id, which is not the person's user_id, and refuses as MAX does", async () => {
    // Many messages to one dialog: its two a second are another test's.
    const max = await fake({ chatRate: 0 });
    const client = clientOf(max);
    const chatId = max.userStarts('5550001', 'g4242');
    expect(chatId).not.toBe('5550001');
    const { mid } = await client.send(chatId, {
      text: '<b>ИВТ-21: изменения</b>\n10:10 Физика &amp; химия',
      format: 'html',
      buttons: [[{ text: '1', payload: 'sg:group:4242:1' }]],
    });
    expect(mid).toMatch(/^mid\./);
    const [message] = max.messages(chatId);
    expect(message?.text).toBe('ИВТ-21: изменения\n10:10 Физика & химия');
    expect(message?.buttons).toEqual([[{ type: 'callback', text: '1', payload: 'sg:group:4242:1' }]]);
    // user_id reaches the same dialog; an unknown dialog is 404, chat 0 is 403.
    expect((await raw(max, 'POST', 'messages?user_id=5550001', { text: 'по user_id' })).status).toBe(200);
    expect(max.messages(chatId)).toHaveLength(2);
    const unknown = await refusal(client.send('999999', { text: 'кому?' }));
    expect([unknown.status, unknown.code]).toEqual([404, 'chat.not.found']);
    const zero = await refusal(client.send('0', { text: 'никому' }));
    expect([zero.status, zero.code]).toEqual([403, 'chat.denied']);
    // Over 4000 characters: MAX's 400 (the client does not even ask).
    const long = await raw(max, 'POST', `messages?chat_id=${chatId}`, { text: 'я'.repeat(4001) });
    expect(long.status).toBe(400);
    await expect(client.send(chatId, { text: 'я'.repeat(4001) })).rejects.toThrow(RangeError);
    // Stopped: 403 chat.denied; a deleted dialog: 404; starting again opens it.
    max.userStops('5550001');
    const stopped = await refusal(client.send(chatId, { text: 'ещё' }));
    expect([stopped.status, stopped.code]).toEqual([403, 'chat.denied']);
    max.userRemovesDialog('5550001');
    expect((await refusal(client.send(chatId, { text: 'ещё' }))).code).toBe('chat.not.found');
    expect(max.userStarts('5550001')).toBe(chatId);
    await client.send(chatId, { text: 'снова' });
    // A suspended (unmoderated) bot is refused everywhere.
    max.suspend(true);
    expect((await refusal(client.send(chatId, { text: 'снова' }))).code).toBe('chat.denied');
  });

  it('answers updates by marker: only the latest without one, commit on pass, a held poll woken', async () => {
    const max = await fake();
    const client = clientOf(max);
    const poll = (marker?: string, timeoutSeconds = 0) =>
      client.updates({ marker, timeoutSeconds, limit: 100, types: UPDATE_TYPES });
    max.userStarts('1', 'g1');
    max.userSays('1', '/today');
    max.userSays('1', '/week');
    // No marker: only the latest.
    const first = await poll();
    expect(first.updates).toHaveLength(1);
    expect((first.updates[0] as { message: { body: { text: string } } }).message.body.text).toBe('/week');
    // A marker answers everything from it; passing the next one commits them.
    const all = await poll('1');
    expect(all.updates.map((u) => (u as { update_type: string }).update_type)).toEqual([
      'bot_started',
      'message_created',
      'message_created',
    ]);
    const chatId = (all.updates[0] as { chat_id: string }).chat_id;
    expect(typeof chatId).toBe('string');
    expect(chatId).toBe(max.chatIdOf('1'));
    expect(max.pendingUpdates()).toBe(3);
    // Markers are 64-bit: beyond 2^53 they keep every digit, so the one before the last answers the last alone.
    expect(all.marker).toBe(first.marker);
    expect(BigInt(all.marker ?? '0') > 2n ** 53n).toBe(true);
    const last = await poll(String(BigInt(all.marker ?? '0') - 1n));
    expect(last.updates.map((u) => (u as { message: { body: { text: string } } }).message.body.text)).toEqual([
      '/week',
    ]);
    const again = await poll(all.marker);
    expect(again.updates).toEqual([]);
    expect(again.marker).toBe(all.marker);
    expect(max.pendingUpdates()).toBe(0);
    // A poll with nothing to answer is held, and a new update ends it.
    const held = poll(all.marker, 20);
    await waitUntil(() => max.calls('updates').some((call) => call.status === undefined), 'the held poll');
    max.userSays('1', '/list');
    const woken = await held;
    expect(woken.updates).toHaveLength(1);
  });

  it('gets nothing by polling while subscribed, and POSTs updates to the webhook with the secret', async () => {
    const max = await fake();
    const client = clientOf(max);
    const received: { secret: string | undefined; body: { update_type: string } }[] = [];
    const receiver = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        received.push({ secret: req.headers['x-max-bot-api-secret'] as string | undefined, body: JSON.parse(text) });
        res.writeHead(received.length === 1 ? 500 : 200).end();
      });
    });
    await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
    onTestFinished(() => new Promise<void>((done) => receiver.close(() => done())));
    const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/max/webhook`;
    await expect(client.subscribe(url, UPDATE_TYPES, 'bad secret!')).rejects.toThrow(MaxApiError);
    await client.subscribe(url, UPDATE_TYPES, 'secret_0123-ok');
    expect(await client.subscriptions()).toEqual([{ url, updateTypes: [...UPDATE_TYPES] }]);
    max.userStarts('2', 'e17');
    // Nothing to a poller while subscribed, with a valid marker all the same (MAX's empty pages carry one).
    const empty = await client.updates({ marker: '1', timeoutSeconds: 0, limit: 10, types: UPDATE_TYPES });
    expect(empty).toEqual({ updates: [], marker: '1' });
    // The first POST failed (500): MAX sends it again.
    await waitUntil(() => received.length === 2, 'the webhook POSTs');
    expect(received.map((each) => [each.secret, each.body.update_type])).toEqual([
      ['secret_0123-ok', 'bot_started'],
      ['secret_0123-ok', 'bot_started'],
    ]);
    await client.unsubscribe(url);
    expect(await client.subscriptions()).toEqual([]);
    max.userSays('2', '/help');
    const polled = await client.updates({ timeoutSeconds: 0, limit: 10, types: UPDATE_TYPES });
    expect(polled.updates).toHaveLength(1);
  });

  it('answers a button press once, replacing the pressed message when asked', async () => {
    const max = await fake();
    const client = clientOf(max);
    const chatId = max.userStarts('3');
    const { mid } = await client.send(chatId, {
      text: 'Из какой вы подгруппы?',
      buttons: [
        [
          { text: '1', payload: 'sg:group:1:1' },
          { text: 'Все', payload: 'sg:group:1:all' },
        ],
      ],
    });
    const callbackId = max.userPresses('3', mid, 'sg:group:1:1');
    await client.answer(callbackId, { notification: '1 подгруппа', message: { text: 'Из какой вы подгруппы?' } });
    expect(max.answers()).toEqual([
      expect.objectContaining({ callbackId, notification: '1 подгруппа', message: expect.anything() }),
    ]);
    expect(max.messages(chatId)[0]?.buttons).toBeUndefined();
    expect((await refusal(client.answer(callbackId, { notification: 'ещё раз' }))).status).toBe(404);
  });

  it("answers 429 over the bot's 30 a second and a dialog's 2 a second; the client waits it out", async () => {
    // A bot's bucket of 5 a second (MAX's is 30; the same bucket): 40 requests at once leave at least 20 refused
    // however slowly a loaded machine sends them (it would take 4 s to refill 20).
    const max = await fake({ rps: 5, chatRate: 2 });
    const answers = await Promise.all(Array.from({ length: 40 }, () => raw(max, 'GET', 'me')));
    const limited = answers.filter((answer) => answer.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(20);
    expect(await limited[0]?.json()).toEqual({ code: 'too.many.requests', message: 'Too many requests' });
    expect(limited[0]?.headers.get('retry-after')).toBe('1');
    await new Promise((wake) => setTimeout(wake, 1_100));
    const chatId = max.userStarts('4');
    const client = clientOf(max);
    await client.send(chatId, { text: '1' });
    await client.send(chatId, { text: '2' });
    const third = await refusal(client.send(chatId, { text: '3' }));
    expect([third.status, third.code, third.retryAfterMs]).toEqual([429, 'too.many.requests', 1_000]);
    expect(max.refusals().chat).toBe(1);
  });

  it('waits out 429s of other calls: Retry-After when sent, else doubling from a second', async () => {
    const max = await fake();
    const sleeps: number[] = [];
    const client = clientOf(max, { sleeps });
    max.fault({ path: 'me', kind: '429', retryAfter: 3 });
    max.fault({ path: 'me', kind: '429', retryAfter: 0, times: 3 });
    expect((await client.me()).username).toBe(max.username);
    expect(sleeps).toEqual([3_000, 1_000, 2_000, 4_000]);
    // A message's 429 is not slept through: it carries the wait for its queue.
    const chatId = max.userStarts('5');
    max.fault({ path: 'messages', kind: '429', retryAfter: 0 });
    expect((await refusal(client.send(chatId, { text: 'x' }))).retryAfterMs).toBe(1_000);
    // A server error and a dropped connection are told apart from MAX's refusals.
    max.fault({ path: 'messages', kind: '503' });
    expect((await refusal(client.send(chatId, { text: 'x' }))).status).toBe(503);
    max.fault({ path: 'messages', kind: 'reset' });
    await expect(client.send(chatId, { text: 'x' })).rejects.toThrow(MaxNetworkError);
  });

  it('takes every request of every client from one shared bucket, so MAX never refuses them', async () => {
    const max = await fake({ rps: 30 });
    const clients = [clientOf(max, { rate: 30 }), clientOf(max, { rate: 30 })];
    await Promise.all(clients.flatMap((client) => Array.from({ length: 30 }, () => client.me())));
    expect(max.refusals().global).toBe(0);
    const times = max.calls('me').map((call) => call.at);
    // 60 requests at 30 a second: about two seconds, never a second with more than 31 of them.
    for (const at of times)
      expect(times.filter((other) => other >= at && other < at + 1_000).length).toBeLessThanOrEqual(31);
  });
});
