/**
 * Telegram through `TELEGRAM_PROXY`: a real CONNECT proxy with Basic authentication (and a SOCKS5 one) on loopback
 * between the service's code and the fake Bot API. A change message and a command's whole round (the bot's long
 * poll, the reply job's send) tunnel through the proxy with its credentials; without the setting nothing does; a
 * send's timeout still fires through it and ends the tunnel; a proxy refusing the credentials makes a transient
 * failure whose reason holds no password; the log names the proxy's host once, never its password; the process's
 * stop closes the proxy's agents and their tunnels.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import { startWorkers } from '../../src/jobs/workers.ts';
import { createLogger } from '../../src/logger.ts';
import { closeProxyAgents, proxyHost } from '../../src/notify/telegram/proxy-fetch.ts';
import { createTelegramSender } from '../../src/notify/telegram/sender.ts';
import { Shutdown } from '../../src/runtime/shutdown.ts';
import { openTelegram, startTelegram } from '../../src/runtime/telegram.ts';
import { type FakeTelegram, startFakeTelegram } from '../../testkit/fake-telegram/index.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { testContext } from '../support/service.ts';
import { startConnectProxy, startSocks5Proxy, type TunnelProxy } from '../support/tunnel-proxies.ts';

const USER = 'tg-relay';
const PASSWORD = 'proxy-pass-6f1d2c';

let fake: FakeTelegram;
/** The fake's `host:port`, as a tunnel to it is asked for. */
let target: string;

beforeAll(async () => {
  fake = await startFakeTelegram();
  target = new URL(fake.apiRoot).host;
});

afterAll(async () => {
  await fake?.close();
});

async function connectProxy(password = PASSWORD): Promise<TunnelProxy> {
  const proxy = await startConnectProxy(USER, PASSWORD);
  onTestFinished(() => proxy.close());
  if (password === PASSWORD) return proxy;
  return { ...proxy, url: proxy.url.replace(`:${PASSWORD}@`, `:${password}@`) };
}

describe('Telegram through TELEGRAM_PROXY', () => {
  it('sends a message through the proxy, by CONNECT with its credentials', async () => {
    const proxy = await connectProxy();
    fake.addChat(4101);
    const sender = createTelegramSender({ token: fake.token, apiRoot: fake.apiRoot, proxy: proxy.url });
    expect(await sender.send('4101', '<b>ИВТ-21</b>: ауд. 1008 → 2207')).toMatchObject({ kind: 'sent' });
    expect(fake.messages(4101).map((message) => message.text)).toEqual(['ИВТ-21: ауд. 1008 → 2207']);
    // A tunnel is opened only after the proxy saw the right Proxy-Authorization; nothing was forwarded in clear.
    expect(proxy.tunnels()).toEqual([target]);
    expect(proxy.methods()).toEqual(['sendMessage']);
    expect(proxy.refusals()).toEqual([]);
  });

  it("answers a command through the proxy: the service's bot polls and its reply job sends through it", async () => {
    const proxy = await connectProxy();
    const lines: string[] = [];
    const logger = createLogger({
      level: 'info',
      destination: new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    });
    const { context, close } = await testContext(
      { TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_API_ROOT: fake.apiRoot, TELEGRAM_PROXY: proxy.url },
      { logger },
    );
    const shutdown = new Shutdown(logger);
    const callsBefore = fake.calls().length;
    const workers = await startWorkers(context, inject('redisUrl'));
    try {
      const telegram = openTelegram(context);
      if (telegram === undefined) throw new Error('no bot with TELEGRAM_BOT_TOKEN set');
      startTelegram(context, telegram, { api: false, worker: true }, shutdown);
      fake.userSays(4102, '/help');
      await waitUntil(() => fake.messages(4102).length === 1, 'the reply to /help', 15_000);
    } finally {
      await shutdown.run('test');
      await workers.close();
      await close();
    }
    // Every call the fake saw meanwhile came through a tunnel: the bot's own (getMe, deleteWebhook before
    // polling, the long polls) and the reply job's send.
    const called = fake
      .calls()
      .slice(callsBefore)
      .map((call) => call.method);
    expect(proxy.methods()).toEqual(called);
    expect(called).toEqual(expect.arrayContaining(['getMe', 'getUpdates', 'sendMessage']));
    expect(new Set(proxy.tunnels())).toEqual(new Set([target]));
    expect(proxy.refusals()).toEqual([]);
    const told = lines.filter((line) => line.includes('go through a proxy'));
    expect(told).toHaveLength(1);
    expect(told[0]).toContain(`"proxy":"http://127.0.0.1:`);
    expect(lines.join('')).not.toContain(PASSWORD);
  }, 30_000);

  it('goes to Telegram directly without the setting', async () => {
    const proxy = await connectProxy();
    fake.addChat(4103);
    const sender = createTelegramSender({ token: fake.token, apiRoot: fake.apiRoot });
    expect(await sender.send('4103', 'напрямую')).toMatchObject({ kind: 'sent' });
    const { context, close } = await testContext({ TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_API_ROOT: fake.apiRoot });
    try {
      expect(await openTelegram(context)?.username()).toBe(fake.username);
    } finally {
      await close();
    }
    expect(proxy.tunnels()).toEqual([]);
  });

  it('still times out a stalled send through the proxy, and the timeout ends the tunnel', async () => {
    const proxy = await connectProxy();
    fake.addChat(4104);
    fake.fault({ method: 'sendMessage', kind: 'stall', chatId: 4104 });
    onTestFinished(() => {
      fake.clearFaults();
      fake.release();
    });
    const sender = createTelegramSender({
      token: fake.token,
      apiRoot: fake.apiRoot,
      proxy: proxy.url,
      timeoutSeconds: 1,
    });
    const outcome = await sender.send('4104', 'застрянет');
    expect(outcome).toMatchObject({ kind: 'failed', permanent: false });
    expect(proxy.tunnels()).toEqual([target]);
    // grammY's timeout aborts its polyfilled signal; only through the bridge does that reach undici and the socket.
    await waitUntil(() => proxy.openTunnels() === 0, 'the timed-out tunnel to close', 5_000);
    fake.release();
    expect(fake.messages(4104)).toEqual([]);
  });

  it('fails as transient when the proxy refuses the credentials, without the password in the reason', async () => {
    const wrong = 'not-the-password-93a1';
    const proxy = await connectProxy(wrong);
    fake.addChat(4105);
    const sender = createTelegramSender({ token: fake.token, apiRoot: fake.apiRoot, proxy: proxy.url });
    const outcome = await sender.send('4105', 'не пройдёт');
    expect(outcome).toMatchObject({ kind: 'failed', permanent: false });
    expect(JSON.stringify(outcome)).not.toContain(wrong);
    expect(proxy.tunnels()).toEqual([]);
    expect(proxy.refusals()).toEqual([`CONNECT ${target} without the credentials`]);
    expect(fake.messages(4105)).toEqual([]);
  });

  it('sends through a SOCKS5 proxy with its username and password', async () => {
    const proxy = await startSocks5Proxy(USER, PASSWORD);
    onTestFinished(() => proxy.close());
    fake.addChat(4106);
    const sender = createTelegramSender({ token: fake.token, apiRoot: fake.apiRoot, proxy: proxy.url });
    expect(await sender.send('4106', 'через SOCKS5')).toMatchObject({ kind: 'sent' });
    expect(proxy.tunnels()).toEqual([target]);
    expect(proxy.refusals()).toEqual([]);
  });
});

describe('proxyHost', () => {
  it("closes the proxy's agents, and their tunnels, at the process's stop", async () => {
    const proxy = await connectProxy();
    fake.addChat(4107);
    const sender = createTelegramSender({ token: fake.token, apiRoot: fake.apiRoot, proxy: proxy.url });
    expect(await sender.send('4107', 'до остановки')).toMatchObject({ kind: 'sent' });
    // The tunnel stays open for the next request (keep-alive) until the agent is closed.
    expect(proxy.openTunnels()).toBe(1);
    await closeProxyAgents();
    await waitUntil(() => proxy.openTunnels() === 0, 'the tunnel to close', 5_000);
    expect(await sender.send('4107', 'после остановки')).toMatchObject({ kind: 'failed', permanent: false });
    expect(proxy.tunnels()).toEqual([target]);
    expect(fake.messages(4107).map((message) => message.text)).toEqual(['до остановки']);
  });

  it('keeps the scheme, host and port of a proxy URL, never its user or password', () => {
    expect(proxyHost('socks5://user:pa%40ss@proxy.example.net:1080')).toBe('socks5://proxy.example.net:1080');
    expect(proxyHost('http://proxy.example.net:3128')).toBe('http://proxy.example.net:3128');
    expect(proxyHost('not a url user:secret')).not.toContain('secret');
  });
});
