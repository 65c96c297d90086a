/**
 * Connection caps on a real loopback socket: per client address and over the process, which connection a
 * newcomer at a cap replaces (one that sent nothing, then one kept alive between requests, then one still
 * sending its request; never one being answered), and the shorter keep-alive and silence of a nearly full
 * server. Loopback answers on all of 127.0.0.0/8, so sockets bound to 127.0.0.2, .3, … are different clients.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BUSY_KEEP_ALIVE_MS, BUSY_SHARE, BUSY_SILENT_TIMEOUT_MS } from '../../src/http/connection-limits.ts';
import { eventually, waitUntil } from '../../testkit/poll.ts';
import { startTestApp, type TestApp } from './helpers.ts';

const MAX = 48;
const PER_ADDRESS = 8;
/** Addresses that together fill the process cap, PER_ADDRESS connections each. */
const CROWD = ['127.0.1.1', '127.0.1.2', '127.0.1.3', '127.0.1.4', '127.0.1.5', '127.0.1.6'];

/** A test server: the app, plus a route whose answers wait until the test lets them go. */
interface Server {
  app: TestApp;
  port: number;
  /** Requests of the hold route received so far. */
  holding: number;
  /** The server's side of each connection, by the client's `address:port`. */
  accepted: Map<string, Socket>;
  release(): void;
}

async function startServer(env: Record<string, string>): Promise<Server> {
  const app = await startTestApp({ env });
  const holds: (() => void)[] = [];
  const server: Server = {
    app,
    port: 0,
    holding: 0,
    accepted: new Map(),
    release: () => {
      for (const answer of holds.splice(0)) answer();
    },
  };
  // A request being answered: its handler waits (as one waiting for the university would).
  app.app.get('/test/hold', async () => {
    server.holding += 1;
    await new Promise<void>((resolve) => holds.push(resolve));
    return { held: true };
  });
  app.app.server.on('connection', (socket: Socket) => {
    const key = `${socket.remoteAddress}:${socket.remotePort}`;
    server.accepted.set(key, socket);
    socket.once('close', () => server.accepted.delete(key));
  });
  await app.app.listen({ port: 0, host: '127.0.0.1' });
  server.port = (app.app.server.address() as { port: number }).port;
  return server;
}

let s: Server;
const sockets: Socket[] = [];

beforeAll(async () => {
  s = await startServer({
    HTTP_MAX_CONNECTIONS: String(MAX),
    HTTP_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
    HTTP_KEEP_ALIVE_TIMEOUT: '72s',
    // Far longer than the silence allowed near the cap: a connection closed within seconds was closed for that.
    HTTP_HEADERS_TIMEOUT: '10s',
  });
});
afterAll(() => s.app.close());
afterEach(async () => {
  s.release();
  for (const socket of sockets.splice(0)) socket.destroy();
  await waitUntil(() => openConnections(s).then((count) => count === 0), 'every connection to close');
  s.holding = 0;
});

function openConnections(server: Server): Promise<number> {
  return new Promise((resolve, reject) =>
    server.app.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );
}

/** True once the server closed the client's socket. */
const closed = (socket: Socket) => socket.destroyed || socket.readableEnded;

/** A connected socket from `from` that has sent nothing (yet). */
async function silent(from: string, server = s): Promise<Socket> {
  const socket = connect({ port: server.port, host: '127.0.0.1', localAddress: from });
  sockets.push(socket);
  socket.on('error', () => undefined);
  socket.on('data', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  return socket;
}

/** A connection from `from` whose request headers never finish (the server has read what it sent). */
async function sending(from: string, server = s): Promise<Socket> {
  const socket = await silent(from, server);
  socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
  const key = `${socket.localAddress}:${socket.localPort}`;
  await waitUntil(() => (server.accepted.get(key)?.bytesRead ?? 0) > 0 || closed(socket), 'the bytes to arrive');
  return socket;
}

/** A connection from `from` whose request body never finishes (the server has read its headers). */
async function sendingBody(from: string, server = s): Promise<Socket> {
  const socket = await silent(from, server);
  socket.write(
    'POST /api/subscriptions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"cre',
  );
  const key = `${socket.localAddress}:${socket.localPort}`;
  await waitUntil(() => (server.accepted.get(key)?.bytesRead ?? 0) > 0 || closed(socket), 'the bytes to arrive');
  return socket;
}

/** A connection from `from` whose request is being answered (it waits until released). */
async function answering(from: string, server = s): Promise<Socket> {
  const before = server.holding;
  const socket = await silent(from, server);
  socket.write('GET /test/hold HTTP/1.1\r\nHost: x\r\n\r\n');
  await waitUntil(() => server.holding > before || closed(socket), 'the held request to arrive');
  return socket;
}

/** What became of a connection that sent a request: answered (with its headers), or closed without a word. */
type Outcome = { answered: true; socket: Socket; headers: string } | { answered: false };

/** Connects from `from` and asks for /healthz on a kept-alive connection; resolves once answered or closed. */
function healthz(from: string, server = s): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = connect({ port: server.port, host: '127.0.0.1', localAddress: from });
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

/** A kept-alive connection from `from` that was answered and waits for its next request. */
async function waiting(from: string, server = s): Promise<Socket> {
  const outcome = await healthz(from, server);
  if (!outcome.answered) throw new Error(`a connection from ${from} was closed without an answer`);
  return outcome.socket;
}

/** Opens `count` connections of one kind from `from`, one after the other (the first is the oldest). */
async function several(count: number, open: (from: string) => Promise<Socket>, from: string): Promise<Socket[]> {
  const opened: Socket[] = [];
  for (let i = 0; i < count; i++) opened.push(await open(from));
  return opened;
}

/** Fills the process cap with connections of one kind, PER_ADDRESS from each address of CROWD. */
async function fillProcess(open: (from: string) => Promise<Socket>): Promise<Socket[]> {
  const opened: Socket[] = [];
  for (const from of CROWD) opened.push(...(await several(PER_ADDRESS, open, from)));
  await waitUntil(() => openConnections(s).then((count) => count === MAX), 'the process cap to be reached');
  return opened;
}

describe('at the process cap', () => {
  it('serves a newcomer by closing the oldest connection that sent nothing', async () => {
    const idle = await fillProcess(silent);
    expect((await healthz('127.0.0.9')).answered).toBe(true);
    await waitUntil(() => closed(idle[0] as Socket), 'the oldest silent connection to close');
    expect(idle.slice(1).filter(closed)).toEqual([]);
    expect(await openConnections(s)).toBeLessThanOrEqual(MAX);
  });

  it('serves a newcomer by closing the connection kept alive the longest', async () => {
    const kept = await fillProcess(waiting);
    expect((await healthz('127.0.0.9')).answered).toBe(true);
    await waitUntil(() => closed(kept[0] as Socket), 'the longest-waiting connection to close');
    expect(kept.slice(1).filter(closed)).toEqual([]);
  });

  it('serves a newcomer by closing the oldest connection still sending its request', async () => {
    const slow = await fillProcess(sending);
    expect((await healthz('127.0.0.9')).answered).toBe(true);
    await waitUntil(() => closed(slow[0] as Socket), 'the oldest slow connection to close');
    expect(slow.slice(1).filter(closed)).toEqual([]);
  });

  it('turns a newcomer away while every connection is being answered, until one is', async () => {
    const busy = await fillProcess(answering);
    expect(await healthz('127.0.0.9')).toEqual({ answered: false });
    expect(busy.filter(closed)).toEqual([]);
    busy[0]?.destroy();
    await eventually(async () => ((await healthz('127.0.0.9')).answered ? true : undefined), 'a freed slot');
  });

  it('closes connections that sent nothing after a few seconds once it is nearly full, not before', async () => {
    const early = await silent('127.0.0.9');
    // A calm server leaves a silent connection to the headers timeout.
    await new Promise((resolve) => setTimeout(resolve, BUSY_SILENT_TIMEOUT_MS + 500));
    expect(closed(early)).toBe(false);
    // Requests being answered make the server busy (three quarters of its cap), and keep it so.
    const busy: Socket[] = [];
    for (let i = 0; busy.length < Math.ceil(MAX * BUSY_SHARE); i++) {
      busy.push(await answering(CROWD[i % CROWD.length] as string));
    }
    // The early one has been silent long enough already.
    await waitUntil(() => closed(early), 'the early silent connection to close', 2_000);
    const slow = await sending('127.0.0.9');
    const crowdedAt = Date.now();
    const crowd = await Promise.all(CROWD.map((from) => silent(from)));
    // The crowd goes a few seconds from now, far from the 10 s headers timeout.
    await new Promise((resolve) => setTimeout(resolve, BUSY_SILENT_TIMEOUT_MS - 500));
    expect(crowd.filter(closed)).toEqual([]);
    await waitUntil(() => crowd.every(closed), 'the silent crowd to close', 7_000 - (Date.now() - crowdedAt));
    // One that sent part of its request has the whole headers timeout, and those answered are left alone.
    expect(closed(slow)).toBe(false);
    expect(busy.filter(closed)).toEqual([]);
  }, 20_000);

  it('keeps connections alive for less when it is nearly full', async () => {
    const calm = await healthz('127.0.0.9');
    expect(calm.answered && calm.headers).toMatch(/\r\nKeep-Alive: timeout=72\r\n/i);
    for (let i = 1; i < Math.ceil(MAX * BUSY_SHARE) - 1; i++) await silent(CROWD[i % CROWD.length] as string);
    const crowded = await healthz('127.0.0.10');
    expect(crowded.answered && crowded.headers).toMatch(
      new RegExp(`\\r\\nKeep-Alive: timeout=${BUSY_KEEP_ALIVE_MS / 1000}\\r\\n`, 'i'),
    );
  });
});

describe('at an address cap', () => {
  it('serves other addresses as they were', async () => {
    await several(PER_ADDRESS, answering, '127.0.0.1');
    expect((await healthz('127.0.0.2')).answered).toBe(true);
  });

  it('lets slow connections not lock their address out: a newcomer replaces the oldest', async () => {
    // Behind a NAT, one client's half-sent requests must not keep everyone else out for the headers timeout
    // (slow headers) or the request timeout (slow bodies).
    const slow: Socket[] = [];
    for (let i = 0; i < PER_ADDRESS; i++) slow.push(await (i % 2 === 0 ? sendingBody : sending)('127.0.0.3'));
    expect((await healthz('127.0.0.3')).answered).toBe(true);
    // The oldest is one whose body is still coming.
    await waitUntil(() => closed(slow[0] as Socket), 'the oldest slow connection to close');
    expect(slow.slice(1).filter(closed)).toEqual([]);
  });

  it('closes one that sent nothing before one kept alive, and one kept alive before one sending', async () => {
    const slow = await several(PER_ADDRESS - 2, sending, '127.0.0.4');
    const kept = await waiting('127.0.0.4');
    const quiet = await silent('127.0.0.4');
    // Each newcomer is answered and then kept alive: the newest of those waiting.
    expect((await healthz('127.0.0.4')).answered).toBe(true);
    await waitUntil(() => closed(quiet), 'the silent connection to close');
    expect(closed(kept)).toBe(false);
    expect((await healthz('127.0.0.4')).answered).toBe(true);
    await waitUntil(() => closed(kept), 'the kept-alive connection to close');
    expect(slow.filter(closed)).toEqual([]);
  });

  it('turns a newcomer away while all of its connections are being answered, until one is', async () => {
    const busy = await several(PER_ADDRESS, answering, '127.0.0.5');
    expect(await healthz('127.0.0.5')).toEqual({ answered: false });
    busy[0]?.destroy();
    await eventually(async () => ((await healthz('127.0.0.5')).answered ? true : undefined), 'a freed slot');
  });
});

describe('behind a trusted proxy', () => {
  let proxied: Server;
  beforeAll(async () => {
    proxied = await startServer({ HTTP_MAX_CONNECTIONS_PER_ADDRESS: '1', TRUST_PROXY: '127.0.0.20/32' });
  });
  afterEach(() => proxied.release());
  afterAll(() => proxied.app.close());

  it('does not cap the proxy per address, which carries many clients, but caps everyone else', async () => {
    await answering('127.0.0.20', proxied);
    expect((await healthz('127.0.0.20', proxied)).answered).toBe(true);
    await answering('127.0.0.21', proxied);
    expect(await healthz('127.0.0.21', proxied)).toEqual({ answered: false });
  });
});

describe('the idle timeout', () => {
  const IDLE_MS = 2_000;
  let idle: Server;
  beforeAll(async () => {
    idle = await startServer({ HTTP_IDLE_TIMEOUT: `${IDLE_MS}ms` });
  });
  afterEach(() => idle.release());
  afterAll(() => idle.app.close());

  it('closes a connection without traffic either way for that long, not before, and leaves a busy one', async () => {
    // Held: the request arrived and nothing moves either way (an answer that never comes, or is never read).
    const held = await answering('127.0.0.30', idle);
    const heldAt = Date.now();
    let closedAt: number | undefined;
    held.once('close', () => (closedAt = Date.now()));
    const talking = await silent('127.0.0.31', idle);
    // Kept alive between requests: the keep-alive timeout's (72 s), not the idle timeout's.
    const kept = await waiting('127.0.0.32', idle);
    // Until a second after the latest the held one may close (a quarter of the timeout late), a request every
    // quarter of the timeout on the other.
    while (Date.now() - heldAt < IDLE_MS * 1.25 + 1_000 && (closedAt === undefined || Date.now() - closedAt < 1_000)) {
      talking.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await new Promise((resolve) => setTimeout(resolve, IDLE_MS / 4));
    }
    expect(closedAt, 'the idle connection closed').toBeDefined();
    // Its last traffic came a moment before heldAt: a little margin below the timeout.
    expect((closedAt ?? 0) - heldAt).toBeGreaterThanOrEqual(IDLE_MS - 200);
    expect(closed(talking)).toBe(false);
    expect(closed(kept)).toBe(false);
  }, 15_000);
});
