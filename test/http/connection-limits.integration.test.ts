/**
 * Connection caps on a real loopback socket: per client address, over the process, the shorter keep-alive of
 * a nearly full server, and idle connections closed for a newcomer. Loopback answers on all of 127.0.0.0/8,
 * so sockets bound to 127.0.0.2, .3, … are different clients.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BUSY_KEEP_ALIVE_MS } from '../../src/http/connection-limits.ts';
import { eventually, waitUntil } from '../support/poll.ts';
import { startTestApp, type TestApp } from './helpers.ts';

const MAX = 6;
const PER_ADDRESS = 3;

let t: TestApp;
let port: number;
const sockets: Socket[] = [];

beforeAll(async () => {
  t = await startTestApp({
    env: {
      HTTP_MAX_CONNECTIONS: String(MAX),
      HTTP_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
      HTTP_KEEP_ALIVE_TIMEOUT: '72s',
    },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as { port: number }).port;
});
afterAll(() => t.close());
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await waitUntil(() => openConnections().then((count) => count === 0), 'every connection to close');
});

function openConnections(): Promise<number> {
  return new Promise((resolve, reject) =>
    t.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );
}

/** What became of a connection that sent a request: answered (with its headers), or closed without a word. */
type Outcome = { answered: true; socket: Socket; headers: string } | { answered: false };

/** Connects from `from` and asks for /healthz on a kept-alive connection; resolves once answered or closed. */
function healthz(from: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress: from });
    sockets.push(socket);
    let received = '';
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      received += chunk.toString('utf8');
      const end = received.indexOf('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(received)?.[1]);
      if (end >= 0 && received.length >= end + 4 + length) resolve({ answered: true, socket, headers: received });
    });
    socket.on('close', () => resolve({ answered: false }));
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
  });
}

/** A connection from `from` whose request headers never finish: busy, not idle. */
async function busy(from: string): Promise<Socket> {
  const socket = connect({ port, host: '127.0.0.1', localAddress: from });
  sockets.push(socket);
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
  return socket;
}

async function answered(from: string): Promise<Extract<Outcome, { answered: true }>> {
  const outcome = await healthz(from);
  if (!outcome.answered) throw new Error(`a connection from ${from} was closed without an answer`);
  return outcome;
}

describe('connection caps', () => {
  it('closes connections of one address beyond its cap, while other addresses are served', async () => {
    const first: Socket[] = [];
    for (let i = 0; i < PER_ADDRESS; i++) first.push(await busy('127.0.0.1'));
    expect(await healthz('127.0.0.1')).toEqual({ answered: false });
    expect((await healthz('127.0.0.2')).answered).toBe(true);
    // Once one of its connections closes, the address is served again.
    first[0]?.destroy();
    await eventually(async () => ((await healthz('127.0.0.1')).answered ? true : undefined), 'a freed slot');
  });

  it('lets an address at its cap replace a connection that only waits with a new one', async () => {
    // Behind a NAT, many clients each keep a connection alive after their request: a newcomer from that
    // address is served, and one of the waiting connections is closed to make room.
    const waiting = await Promise.all(Array.from({ length: PER_ADDRESS }, () => answered('127.0.0.6')));
    const closed = Promise.race(waiting.map(({ socket }) => new Promise((resolve) => socket.once('close', resolve))));
    expect((await healthz('127.0.0.6')).answered).toBe(true);
    await closed;
    const open = waiting.filter(({ socket }) => !socket.destroyed && socket.readyState === 'open');
    expect(open.length).toBe(PER_ADDRESS - 1);
  });

  it('closes connections beyond the process cap, from any address, until one closes', async () => {
    const held: Socket[] = [];
    for (const from of ['127.0.0.3', '127.0.0.4']) {
      for (let i = 0; i < PER_ADDRESS; i++) held.push(await busy(from));
    }
    await waitUntil(() => openConnections().then((count) => count === MAX), 'the process cap to be reached');
    expect(await healthz('127.0.0.5')).toEqual({ answered: false });
    // Busy connections are not idle: the newcomer's sweep left them open.
    expect(await openConnections()).toBe(MAX);
    held[0]?.destroy();
    await eventually(async () => ((await healthz('127.0.0.5')).answered ? true : undefined), 'a freed slot');
  });

  it('closes idle kept-alive connections when a newcomer is turned away at the process cap', async () => {
    const idle: Extract<Outcome, { answered: true }>[] = [];
    for (const from of ['127.0.0.6', '127.0.0.7']) {
      for (let i = 0; i < PER_ADDRESS; i++) idle.push(await answered(from));
    }
    const served = await eventually(async () => {
      const outcome = await healthz('127.0.0.8');
      return outcome.answered ? outcome : undefined;
    }, 'a newcomer served once idle connections were closed');
    expect(served.answered).toBe(true);
    await waitUntil(() => idle.every(({ socket }) => socket.destroyed || socket.readableEnded), 'idle ones closed');
  });

  it('keeps connections alive for less when the process is nearly full', async () => {
    const calm = await answered('127.0.0.9');
    expect(calm.headers).toMatch(/\r\nKeep-Alive: timeout=72\r\n/i);
    // 4 of 6 is three quarters of the cap.
    await busy('127.0.0.10');
    await busy('127.0.0.10');
    const crowded = await answered('127.0.0.11');
    expect(crowded.headers).toMatch(new RegExp(`\\r\\nKeep-Alive: timeout=${BUSY_KEEP_ALIVE_MS / 1000}\\r\\n`, 'i'));
  });
});

describe('behind a trusted proxy', () => {
  let proxied: TestApp;
  let proxiedPort: number;
  beforeAll(async () => {
    proxied = await startTestApp({
      env: { HTTP_MAX_CONNECTIONS_PER_ADDRESS: '1', TRUST_PROXY: '127.0.0.20/32' },
    });
    await proxied.app.listen({ port: 0, host: '127.0.0.1' });
    proxiedPort = (proxied.app.server.address() as { port: number }).port;
  });
  afterAll(() => proxied.close());

  it('does not cap the proxy per address, which carries many clients, but caps everyone else', async () => {
    const viaProxy = async (from: string) => {
      const socket = connect({ port: proxiedPort, host: '127.0.0.1', localAddress: from });
      sockets.push(socket);
      socket.on('error', () => undefined);
      const closed = new Promise((resolve) => socket.once('close', () => resolve('closed')));
      const data = new Promise((resolve) => socket.once('data', () => resolve('answered')));
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      return Promise.race([closed, data]);
    };
    expect([await viaProxy('127.0.0.20'), await viaProxy('127.0.0.20')]).toEqual(['answered', 'answered']);
    // Another address is capped: with its one connection still sending a request, a second is turned away.
    const held = connect({ port: proxiedPort, host: '127.0.0.1', localAddress: '127.0.0.21' });
    sockets.push(held);
    held.on('error', () => undefined);
    await new Promise((resolve) => held.once('connect', resolve));
    held.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    expect(await viaProxy('127.0.0.21')).toBe('closed');
  });
});
