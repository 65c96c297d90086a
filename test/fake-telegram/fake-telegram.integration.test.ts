/**
 * The fake Bot API keeps the rules the bot depends on: long polling confirmed by offset and woken by a new update,
 * one poller at a time, webhooks with the secret header, sendMessage's checks, inline keyboards and button
 * presses (callback queries answered once), `allowed_updates`, and faults.
 */
import { createServer } from 'node:http';
import { describe, expect, it, onTestFinished } from 'vitest';
import { type FakeTelegram, startFakeTelegram } from '../../testkit/fake-telegram/index.ts';
import { waitUntil } from '../../testkit/poll.ts';

async function fake(): Promise<FakeTelegram> {
  const telegram = await startFakeTelegram({ username: 'sync_test_bot' });
  onTestFinished(() => telegram.close());
  return telegram;
}

interface Answer {
  status: number;
  body: { ok: boolean; result?: unknown; error_code?: number; description?: string; parameters?: unknown };
  headers: Headers;
}

async function call(
  telegram: FakeTelegram,
  method: string,
  params: Record<string, unknown> = {},
  init: { token?: string; signal?: AbortSignal; form?: boolean } = {},
): Promise<Answer> {
  const url = `${telegram.apiRoot}/bot${init.token ?? telegram.token}/${method}`;
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': init.form ? 'application/x-www-form-urlencoded' : 'application/json' },
    body: init.form
      ? new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]))
      : JSON.stringify(params),
    ...(init.signal ? { signal: init.signal } : {}),
  });
  return { status: response.status, body: (await response.json()) as Answer['body'], headers: response.headers };
}

type Updates = { update_id: number; message: { text: string; chat: { id: number }; entities?: unknown[] } }[];

describe('fake Telegram Bot API', () => {
  it('answers getMe and refuses a wrong token with 401', async () => {
    const telegram = await fake();
    const me = await call(telegram, 'getMe');
    expect(me.body).toMatchObject({ ok: true, result: { id: 123456789, is_bot: true, username: 'sync_test_bot' } });
    const wrong = await call(telegram, 'getMe', {}, { token: '123456789:wrong' });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ ok: false, error_code: 401, description: 'Unauthorized' });
    expect((await call(telegram, 'noSuchMethod')).status).toBe(404);
  });

  it('long-polls getUpdates: a new update answers early, offset confirms, a command has its entity', async () => {
    const telegram = await fake();
    const started = Date.now();
    const pending = call(telegram, 'getUpdates', { timeout: 20 });
    await waitUntil(() => telegram.calls('getUpdates').length === 1, 'the poll to arrive');
    telegram.userSays(42, '/start g4242');
    const first = await pending;
    expect(Date.now() - started).toBeLessThan(5_000);
    const updates = first.body.result as Updates;
    expect(updates).toHaveLength(1);
    expect(updates[0]?.message).toMatchObject({ text: '/start g4242', chat: { id: 42 } });
    expect(updates[0]?.message.entities).toEqual([{ type: 'bot_command', offset: 0, length: 6 }]);
    // Not confirmed yet: the same update again.
    const again = await call(telegram, 'getUpdates', { timeout: 0 });
    expect((again.body.result as Updates).map((u) => u.update_id)).toEqual([updates[0]?.update_id]);
    // Confirmed by offset (form body this time): gone.
    const next = (updates[0]?.update_id ?? 0) + 1;
    const confirmed = await call(telegram, 'getUpdates', { offset: next, timeout: 0 }, { form: true });
    expect(confirmed.body.result).toEqual([]);
    expect(telegram.pendingUpdates()).toBe(0);
  });

  it('answers an empty list when the timeout passes, and forgets a poll whose client went away', async () => {
    const telegram = await fake();
    const empty = await call(telegram, 'getUpdates', { timeout: 1 });
    expect(empty.body).toEqual({ ok: true, result: [] });
    const abort = new AbortController();
    const gone = call(telegram, 'getUpdates', { timeout: 30 }, { signal: abort.signal }).catch((error) => error);
    await waitUntil(() => telegram.calls('getUpdates').length === 2, 'the second poll');
    abort.abort();
    await gone;
    // The aborted poll does not take the update, nor conflict with the next poller.
    await new Promise((resolve) => setTimeout(resolve, 100));
    telegram.userSays(7, 'привет');
    const next = await call(telegram, 'getUpdates', { timeout: 5 });
    expect(next.status).toBe(200);
    expect((next.body.result as Updates).map((u) => u.message.text)).toEqual(['привет']);
  });

  it('ends a waiting getUpdates with 409 when another one arrives', async () => {
    const telegram = await fake();
    const older = call(telegram, 'getUpdates', { timeout: 20 });
    await waitUntil(() => telegram.calls('getUpdates').length === 1, 'the first poll');
    const newer = call(telegram, 'getUpdates', { timeout: 1 });
    const conflict = await older;
    expect(conflict.status).toBe(409);
    expect(conflict.body.description).toMatch(/^Conflict: terminated by other getUpdates request/);
    expect((await newer).status).toBe(200);
  });

  it('answers nothing to a getUpdates its client aborted just before the next one', async () => {
    const telegram = await fake();
    const aborting = new AbortController();
    const older = call(telegram, 'getUpdates', { timeout: 20 }, { signal: aborting.signal }).catch(() => 'aborted');
    await waitUntil(() => telegram.calls('getUpdates').length === 1, 'the first poll');
    // As grammY's stop: abort the long poll, then at once confirm the offset.
    aborting.abort();
    expect((await call(telegram, 'getUpdates', { limit: 1 })).status).toBe(200);
    expect(await older).toBe('aborted');
    await new Promise((done) => setTimeout(done, 200));
    expect(telegram.calls('getUpdates').map((each) => each.status)).toEqual([undefined, 200]);
  });

  it('posts updates to a webhook with the secret header; getUpdates is then 409', async () => {
    const telegram = await fake();
    const received: { secret: string | undefined; body: string }[] = [];
    let failFirst = true;
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        if (failFirst) {
          failFirst = false;
          res.writeHead(500).end();
          return;
        }
        received.push({ secret: req.headers['x-telegram-bot-api-secret-token'] as string | undefined, body });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
    const { port } = receiver.address() as { port: number };
    const set = await call(telegram, 'setWebhook', {
      url: `http://127.0.0.1:${port}/telegram/webhook`,
      secret_token: 'shared-secret_1',
    });
    expect(set.body).toEqual({ ok: true, result: true });
    expect((await call(telegram, 'getUpdates')).status).toBe(409);
    telegram.userSays(5, '/help');
    // The fake records a post once its answer is read, a moment after the receiver has the body.
    await waitUntil(() => received.length === 1 && telegram.webhookPosts().length === 2, 'the webhook delivery');
    expect(received[0]?.secret).toBe('shared-secret_1');
    expect(JSON.parse(received[0]?.body ?? '{}')).toMatchObject({ message: { text: '/help', chat: { id: 5 } } });
    expect(telegram.webhookPosts().map((post) => post.outcome)).toEqual([500, 200]);
    expect(telegram.pendingUpdates()).toBe(0);
    expect((await call(telegram, 'deleteWebhook')).body.result).toBe(true);
    expect((await call(telegram, 'getUpdates')).status).toBe(200);
  });

  it('sendMessage checks the chat, the HTML and the length, and records what it accepted', async () => {
    const telegram = await fake();
    const send = (chat_id: number, text: string) =>
      call(telegram, 'sendMessage', { chat_id, text, parse_mode: 'HTML' });
    expect((await send(1, 'hi')).body).toMatchObject({
      ok: false,
      error_code: 400,
      description: 'Bad Request: chat not found',
    });
    telegram.userSays(1, '/start');
    const bad = await send(1, 'Физика <практика>');
    expect(bad.status).toBe(400);
    expect(bad.body.description).toMatch(/^Bad Request: can't parse entities/);
    expect((await send(1, 'A & B')).body.description).toMatch(/^Bad Request: can't parse entities/);
    expect((await send(1, '<b>open')).body.description).toMatch(/can't parse entities/);
    expect((await send(1, 'x'.repeat(4097))).body.description).toBe('Bad Request: message is too long');
    // 4096 characters after parsing is allowed even though the HTML is longer.
    expect((await send(1, `<b>${'&amp;'.repeat(4096)}</b>`)).status).toBe(200);
    const good = await send(
      1,
      '<b>Физика &lt;1&gt; &amp; _химия_ *</b>\n<a href="https://x.test/?a=1&amp;b=2">Расписание</a>',
    );
    expect(good.body).toMatchObject({
      ok: true,
      result: { chat: { id: 1 }, text: expect.stringContaining('Физика <1> & _химия_ *') },
    });
    const messages = telegram.messages(1);
    expect(messages).toHaveLength(2);
    expect(messages[1]?.text).toBe('Физика <1> & _химия_ *\nРасписание');
    expect(messages[1]?.html).toContain('&lt;1&gt;');
    telegram.blockChat(1);
    expect((await send(1, 'hi')).body).toEqual({
      ok: false,
      error_code: 403,
      description: 'Forbidden: bot was blocked by the user',
    });
    expect(telegram.messages()).toHaveLength(2);
  });

  it('injects 429 with retry_after, 403, 400, 500, 409 and reset, each spent after `times`', async () => {
    const telegram = await fake();
    telegram.addChat(3);
    const send = () => call(telegram, 'sendMessage', { chat_id: 3, text: 'hi' });
    telegram.fault({ method: 'sendMessage', kind: '429', retryAfter: 7 });
    const limited = await send();
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({
      ok: false,
      error_code: 429,
      description: 'Too Many Requests: retry after 7',
      parameters: { retry_after: 7 },
    });
    expect(limited.headers.get('retry-after')).toBe('7');
    telegram.fault({ method: 'sendMessage', kind: '403' });
    expect((await send()).status).toBe(403);
    telegram.fault({ method: 'sendMessage', kind: '400', description: 'Bad Request: something else' });
    expect((await send()).body.description).toBe('Bad Request: something else');
    telegram.fault({ method: 'sendMessage', kind: '500', times: 2 });
    expect([(await send()).status, (await send()).status]).toEqual([500, 500]);
    telegram.fault({ method: 'getUpdates', kind: '409' });
    expect((await call(telegram, 'getUpdates')).status).toBe(409);
    telegram.fault({ method: 'sendMessage', kind: 'reset', chatId: 3 });
    await expect(send()).rejects.toThrow();
    expect((await send()).status).toBe(200);
    expect(telegram.messages(3)).toHaveLength(1);
  });

  it('holds a stalled sendMessage: released it is a message, its client gone it is not', async () => {
    const telegram = await fake();
    telegram.addChat(9);
    telegram.fault({ method: 'sendMessage', kind: 'stall', times: 2 });
    const abort = new AbortController();
    const killed = call(telegram, 'sendMessage', { chat_id: 9, text: 'lost' }, { signal: abort.signal }).catch(
      (error: unknown) => error,
    );
    const held = call(telegram, 'sendMessage', { chat_id: 9, text: 'kept' });
    await waitUntil(() => telegram.stalledCount() === 2, 'two held requests');
    abort.abort();
    await killed;
    await waitUntil(() => telegram.stalledCount() === 1, 'the aborted request to be let go');
    expect(telegram.messages()).toEqual([]);
    telegram.release();
    expect((await held).status).toBe(200);
    expect(telegram.messages().map((message) => message.text)).toEqual(['kept']);
    expect(
      telegram
        .calls('sendMessage')
        .map((c) => c.status ?? 'none')
        .sort(),
    ).toEqual([200, 'none']);
  });

  it('keeps an inline keyboard, delivers a press as a callback_query, and takes one answer to it', async () => {
    const telegram = await fake();
    telegram.addChat(11);
    const keyboard = [
      [
        { text: '1', callback_data: 'sg:group:1:1' },
        { text: 'Все', callback_data: 'sg:group:1:all' },
      ],
    ];
    const sent = await call(telegram, 'sendMessage', {
      chat_id: 11,
      text: 'Какая?',
      reply_markup: { inline_keyboard: keyboard },
    });
    expect(sent.body).toMatchObject({ ok: true, result: { reply_markup: { inline_keyboard: keyboard } } });
    // A form body carries the markup as JSON text.
    const form = await call(
      telegram,
      'sendMessage',
      { chat_id: 11, text: 'Ещё', reply_markup: JSON.stringify({ inline_keyboard: keyboard }) },
      { form: true },
    );
    expect(form.status).toBe(200);
    const [message] = telegram.messages(11);
    expect(message?.inlineKeyboard).toEqual(keyboard);
    expect(() => telegram.userPresses(11, message?.messageId as number, 'sg:group:1:2')).toThrow(/no message/);

    const { updateId, queryId } = telegram.userPresses(11, message?.messageId as number, 'sg:group:1:all');
    const updates = await call(telegram, 'getUpdates', {});
    expect(updates.body.result).toEqual([
      {
        update_id: updateId,
        callback_query: expect.objectContaining({
          id: queryId,
          data: 'sg:group:1:all',
          from: expect.objectContaining({ id: 11, is_bot: false }),
          message: expect.objectContaining({
            message_id: message?.messageId,
            chat: expect.objectContaining({ id: 11 }),
            reply_markup: { inline_keyboard: keyboard },
          }),
        }),
      },
    ]);
    expect((await call(telegram, 'answerCallbackQuery', { callback_query_id: queryId, text: 'Готово' })).status).toBe(
      200,
    );
    const twice = await call(telegram, 'answerCallbackQuery', { callback_query_id: queryId });
    expect(twice.body).toMatchObject({
      ok: false,
      error_code: 400,
      description: expect.stringContaining('query ID is invalid'),
    });
    expect((await call(telegram, 'answerCallbackQuery', { callback_query_id: '1' })).status).toBe(400);
    expect(telegram.callbackAnswers()).toEqual([{ queryId, text: 'Готово', showAlert: false, at: expect.any(Number) }]);
  });

  it('refuses keyboards Telegram refuses: callback data over 64 bytes, a button with no action or two', async () => {
    const telegram = await fake();
    telegram.addChat(12);
    const send = (button: Record<string, unknown>) =>
      call(telegram, 'sendMessage', { chat_id: 12, text: 'x', reply_markup: { inline_keyboard: [[button]] } });
    expect((await send({ text: 'a', callback_data: 'я'.repeat(33) })).body.description).toBe(
      'Bad Request: BUTTON_DATA_INVALID',
    );
    expect((await send({ text: 'a' })).status).toBe(400);
    expect((await send({ text: 'a', callback_data: 'x', url: 'https://t.me' })).status).toBe(400);
    const flat = await call(telegram, 'sendMessage', {
      chat_id: 12,
      text: 'x',
      reply_markup: { inline_keyboard: [{ text: 'a' }] },
    });
    expect(flat.body.description).toContain('should be an Array of Arrays');
    expect(telegram.messages(12)).toEqual([]);
  });

  it('edits a keyboard away, refusing what Telegram refuses: not modified, no such message, a bad keyboard', async () => {
    const telegram = await fake();
    telegram.addChat(14);
    const keyboard = [[{ text: '1', callback_data: 'a' }]];
    await call(telegram, 'sendMessage', { chat_id: 14, text: 'Какая?', reply_markup: { inline_keyboard: keyboard } });
    const [message] = telegram.messages(14);
    const edit = (params: Record<string, unknown>) =>
      call(telegram, 'editMessageReplyMarkup', { chat_id: 14, message_id: message?.messageId, ...params });
    expect((await edit({ reply_markup: { inline_keyboard: keyboard } })).body.description).toContain(
      'message is not modified',
    );
    expect((await edit({ reply_markup: { inline_keyboard: [[{ text: 'x' }]] } })).status).toBe(400);
    expect((await edit({ message_id: 999 })).body.description).toBe('Bad Request: message to edit not found');
    const removed = await edit({});
    expect(removed.body).toMatchObject({ ok: true, result: { message_id: message?.messageId, text: 'Какая?' } });
    expect(removed.body.result).not.toHaveProperty('reply_markup');
    expect(telegram.messages(14)[0]?.inlineKeyboard).toBeUndefined();
    expect(() => telegram.userPresses(14, message?.messageId as number, 'a')).toThrow(/no message/);
    // Taking away what is gone already (a second quick press): not modified.
    expect((await edit({ reply_markup: { inline_keyboard: [] } })).body).toMatchObject({
      ok: false,
      error_code: 400,
      description: expect.stringContaining('message is not modified'),
    });
    telegram.blockChat(14);
    expect((await edit({ reply_markup: { inline_keyboard: keyboard } })).status).toBe(403);
  });

  it('never delivers an update of a type the bot left out of allowed_updates', async () => {
    const telegram = await fake();
    telegram.addChat(13);
    const keyboard = [[{ text: 'ok', callback_data: 'ok' }]];
    await call(telegram, 'sendMessage', { chat_id: 13, text: 'x', reply_markup: { inline_keyboard: keyboard } });
    const [message] = telegram.messages(13);
    telegram.userPresses(13, message?.messageId as number, 'ok');
    const only = await call(telegram, 'getUpdates', { allowed_updates: ['message'] });
    expect(only.body.result).toEqual([]);
    telegram.userSays(13, 'привет');
    telegram.userPresses(13, message?.messageId as number, 'ok');
    // The choice is kept until the bot names others.
    const next = (await call(telegram, 'getUpdates', {})).body.result as Updates;
    expect(next.map((update) => Object.keys(update).sort())).toEqual([['message', 'update_id']]);
    // Pressed while only messages are wanted: never queued at all.
    telegram.userPresses(13, message?.messageId as number, 'ok');
    const offset = (next[0]?.update_id ?? 0) + 1;
    const asked = await call(telegram, 'getUpdates', { offset, allowed_updates: ['message', 'callback_query'] });
    expect(asked.body.result).toEqual([]);
    telegram.userPresses(13, message?.messageId as number, 'ok');
    const press = (await call(telegram, 'getUpdates', { offset })).body.result as object[];
    expect(press.map((update) => Object.keys(update).sort())).toEqual([['callback_query', 'update_id']]);
  });
});
