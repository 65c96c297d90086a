/** The sender through grammY against the fake Bot API: what each answer of Telegram means for a delivery. */
import { describe, expect, it, onTestFinished } from 'vitest';
import { createTelegramSender } from '../../src/notify/telegram/sender.ts';
import { type FakeTelegram, startFakeTelegram } from '../../testkit/fake-telegram/index.ts';

async function fake(): Promise<FakeTelegram> {
  const telegram = await startFakeTelegram();
  onTestFinished(() => telegram.close());
  return telegram;
}

describe('TelegramSender', () => {
  it('sends HTML without a preview and answers the message id', async () => {
    const telegram = await fake();
    telegram.addChat(42);
    const sender = createTelegramSender({ token: telegram.token, apiRoot: `${telegram.apiRoot}/` });
    const outcome = await sender.send('42', '<b>ИВТ &amp; Co</b>: ауд. 1008 → 2207');
    expect(outcome).toEqual({ kind: 'sent', messageId: 1 });
    expect(telegram.messages(42).map((m) => m.text)).toEqual(['ИВТ & Co: ауд. 1008 → 2207']);
    expect(telegram.calls('sendMessage')[0]?.params).toMatchObject({
      parse_mode: 'HTML',
      link_preview_options: { is_disabled: true },
    });
  });

  it('treats a blocked bot and an unknown chat as a chat that is gone', async () => {
    const telegram = await fake();
    const sender = createTelegramSender({ token: telegram.token, apiRoot: telegram.apiRoot });
    expect(await sender.send('7', 'hi')).toEqual({ kind: 'blocked', reason: '400 Bad Request: chat not found' });
    telegram.blockChat(7);
    expect(await sender.send('7', 'hi')).toEqual({
      kind: 'blocked',
      reason: '403 Forbidden: bot was blocked by the user',
    });
  });

  it('answers 429 as a wait of retry_after, a refused request as permanent, 5xx and the network as transient', async () => {
    const telegram = await fake();
    telegram.addChat(1);
    const sender = createTelegramSender({ token: telegram.token, apiRoot: telegram.apiRoot });
    telegram.fault({ method: 'sendMessage', kind: '429', retryAfter: 3 });
    expect(await sender.send('1', 'hi')).toEqual({ kind: 'rate-limited', retryAfterMs: 3000 });
    expect(await sender.send('1', 'a <b')).toMatchObject({ kind: 'failed', permanent: true });
    telegram.fault({ method: 'sendMessage', kind: '500' });
    expect(await sender.send('1', 'hi')).toMatchObject({ kind: 'failed', permanent: false });
    telegram.fault({ method: 'sendMessage', kind: 'reset' });
    expect(await sender.send('1', 'hi')).toMatchObject({ kind: 'failed', permanent: false });
    expect(telegram.messages()).toEqual([]);
  });

  it('never puts the token in a reason', async () => {
    const telegram = await fake();
    const token = `${telegram.botId}:wrong-token-value`;
    const sender = createTelegramSender({ token, apiRoot: telegram.apiRoot });
    const unauthorized = await sender.send('1', 'hi');
    expect(unauthorized).toMatchObject({ kind: 'failed', permanent: false });
    const closed = createTelegramSender({ token, apiRoot: 'http://127.0.0.1:9' });
    const refused = await closed.send('1', 'hi');
    expect(refused).toMatchObject({ kind: 'failed', permanent: false });
    expect(JSON.stringify([unauthorized, refused])).not.toContain('wrong-token-value');
  });
});
