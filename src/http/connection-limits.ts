/**
 * How many connections the HTTP server holds, and for whom. A global cap alone let one client open every
 * connection the process accepts, so connections are also capped per client address. A newcomer at a cap is
 * not turned away while a connection it can replace is open: the oldest that has sent nothing goes first,
 * then the oldest kept alive between requests, then the oldest still sending its request (a client that
 * sends its request at once is past that in milliseconds). Sockets opened and left silent, or sent a byte at
 * a time, therefore cannot lock other clients out, nor other people behind the same address; only requests
 * being answered hold their slot. Near the global cap, kept-alive connections wait for less and a connection
 * that has sent nothing is closed after a few seconds. On the public internet a reverse proxy in front is
 * still expected: one client can own many addresses (IPv6).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import { clientOf } from './client-address.ts';
import { trustedProxyMatcher } from './trusted-proxies.ts';

/** The config fields the connection limits are read from. */
export type ConnectionLimits = Pick<
  Config,
  | 'httpMaxConnections'
  | 'httpMaxConnectionsPerAddress'
  | 'httpKeepAliveTimeoutMs'
  | 'httpHeadersTimeoutMs'
  | 'httpIdleTimeoutMs'
  | 'trustProxy'
>;

/** From this share of the global cap on, the server counts as busy (see {@link applyConnectionLimits}). */
export const BUSY_SHARE = 0.75;
/** Node's own default keep-alive: long enough for a client's next request, short enough to free a slot soon. */
export const BUSY_KEEP_ALIVE_MS = 5_000;
/**
 * How long a connection may stay silent while the server is busy: a client connects to send a request, and
 * sends it within a round trip; one that sent nothing in seconds only holds a slot.
 */
export const BUSY_SILENT_TIMEOUT_MS = 3_000;
/** How often silent connections are looked for while the server is busy. */
const SILENT_SWEEP_MS = 250;
/**
 * Idle connections are looked for every eighth of the idle timeout, at most this often: one is closed never early,
 * and at most a quarter of the timeout late (of a timeout of 2 s or more).
 */
const MIN_IDLE_SWEEP_MS = 250;

/** What a connection is doing, from the cheapest to close to the dearest. */
type Phase = 'silent' | 'waiting' | 'sending' | 'answering';

/** What the server knows of one connection. */
interface Tracked {
  readonly openedAt: number;
  /** Requests received and not yet answered. */
  inFlight: number;
  /** The last request received (whether its body has arrived). */
  last?: IncomingMessage;
  /** Bytes read when its last answer finished; more since means a next request is on its way. */
  answeredAt?: number;
  /** Bytes read and written when last looked at for idleness, and since when (epoch ms) that count stands. */
  traffic: number;
  quietSince: number;
  /** Its client (undefined for a trusted proxy), and that client's connections. */
  readonly client: string | undefined;
  readonly own: Pool | undefined;
  /**
   * Listener of each answer's `close` on this connection, made once per connection: a request costs the table a
   * few field writes and set moves, with no closure or `once` wrapper made per request.
   */
  readonly answered: () => void;
}

/** A set of connections (the process's, or one address's) and those among them that can be closed cheaply. */
class Pool {
  readonly all = new Set<Socket>();
  /** Connections that had sent nothing when last seen, oldest first (checked again when used). */
  readonly silent = new Set<Socket>();
  /** Connections waiting between requests, longest waiting first (checked again when used). */
  readonly waiting = new Set<Socket>();

  add(socket: Socket): void {
    this.all.add(socket);
    this.silent.add(socket);
  }

  delete(socket: Socket): void {
    this.all.delete(socket);
    this.silent.delete(socket);
    this.waiting.delete(socket);
  }

  /** The connection a newcomer replaces: cheapest first, oldest first within a phase; undefined: none. */
  replaceable(phase: (socket: Socket) => Phase): Socket | undefined {
    // Stale entries are dropped on the way: a connection leaves `silent` for good once it sent a byte, and
    // re-enters `waiting` when its next answer finishes. Each entry is skipped once, so this is cheap.
    for (const socket of this.silent) {
      if (phase(socket) === 'silent') return socket;
      this.silent.delete(socket);
    }
    for (const socket of this.waiting) {
      if (phase(socket) === 'waiting') return socket;
      this.waiting.delete(socket);
    }
    for (const socket of this.all) if (phase(socket) === 'sending') return socket;
    return undefined;
  }
}

/**
 * Applies the caps to the app's server; call right after building the instance. Connections from the proxies
 * `TRUST_PROXY` names are not capped per address (each carries many clients, which the proxy limits itself).
 */
export function applyConnectionLimits(app: FastifyInstance, limits: ConnectionLimits): void {
  const server = app.server;
  // The caps are kept here rather than by Node's maxConnections, which closes a newcomer before anyone sees it.
  server.maxConnections = Number.POSITIVE_INFINITY;
  // The idle timeout (HTTP_IDLE_TIMEOUT) is the table's too: it looks at each connection's traffic every eighth of
  // it. As a socket timeout (fastify's connectionTimeout), each request armed a timer of its own and every read
  // and write re-armed it.
  server.setTimeout(0);
  const table = new ConnectionTable(server, limits);
  server.on('connection', (socket: Socket) => table.admit(socket));
  server.on('request', (request: IncomingMessage, response: ServerResponse) => table.received(request, response));
  server.on('close', () => table.shutDown());
}

/** Every open connection of one server, by client, with what each is doing. */
class ConnectionTable {
  private readonly server: Server;
  private readonly limits: ConnectionLimits;
  private readonly isProxy: (address: string) => boolean;
  private readonly busyFrom: number;
  private readonly silentTimeoutMs: number;
  private readonly tracked = new Map<Socket, Tracked>();
  private readonly all = new Pool();
  private readonly perAddress = new Map<string, Pool>();
  private sweep: NodeJS.Timeout | undefined;
  private readonly idleSweep: NodeJS.Timeout;

  constructor(server: Server, limits: ConnectionLimits) {
    this.server = server;
    this.limits = limits;
    this.isProxy = trustedProxyMatcher(limits.trustProxy);
    this.busyFrom = Math.max(1, Math.floor(limits.httpMaxConnections * BUSY_SHARE));
    this.silentTimeoutMs = Math.min(BUSY_SILENT_TIMEOUT_MS, limits.httpHeadersTimeoutMs);
    const idleSweepMs = Math.max(MIN_IDLE_SWEEP_MS, Math.floor(limits.httpIdleTimeoutMs / 8));
    this.idleSweep = setInterval(() => this.closeIdle(), idleSweepMs);
    this.idleSweep.unref();
  }

  /** A new connection: kept if there is room, or room can be made; else closed at once. */
  admit(socket: Socket): void {
    const address = socket.remoteAddress;
    // The rate limits' notion of a client: an IPv6 client is its /64.
    const client = address === undefined || this.isProxy(address) ? undefined : clientOf(address);
    const existing = client === undefined ? undefined : this.perAddress.get(client);
    if (
      (existing !== undefined && !this.makeRoom(existing, this.limits.httpMaxConnectionsPerAddress)) ||
      !this.makeRoom(this.all, this.limits.httpMaxConnections)
    ) {
      socket.destroy();
      return;
    }
    let own: Pool | undefined;
    if (client !== undefined) {
      // Looked up again: making room may have closed the address's last connection, and with it its pool.
      own = this.perAddress.get(client) ?? new Pool();
      this.perAddress.set(client, own);
      own.add(socket);
    }
    const now = Date.now();
    const state: Tracked = {
      openedAt: now,
      inFlight: 0,
      traffic: 0,
      quietSince: now,
      client,
      own,
      answered: () => this.answered(socket, state),
    };
    this.tracked.set(socket, state);
    this.all.add(socket);
    socket.once('close', () => this.forget(socket));
    this.tune();
  }

  /** A request arrived on a connection: busy until its answer is done, then waiting for the next one. */
  received(request: IncomingMessage, response: ServerResponse): void {
    const socket = request.socket as Socket;
    const state = this.tracked.get(socket);
    if (state === undefined) return;
    state.inFlight += 1;
    state.last = request;
    this.all.waiting.delete(socket);
    state.own?.waiting.delete(socket);
    // `close`, not `finish`: it also comes when the answer was cut short. A response closes once, so `on` does
    // what `once` would, without a wrapper per request.
    response.on('close', state.answered);
  }

  /** An answer on `socket` is done (sent or cut short): the connection waits for its next request, if any. */
  private answered(socket: Socket, state: Tracked): void {
    state.inFlight -= 1;
    if (state.inFlight > 0 || socket.destroyed || this.tracked.get(socket) !== state) return;
    state.answeredAt = socket.bytesRead;
    this.all.waiting.add(socket);
    state.own?.waiting.add(socket);
  }

  /** The server closed: no more sweeps. */
  shutDown(): void {
    this.stop();
    clearInterval(this.idleSweep);
  }

  private stop(): void {
    if (this.sweep !== undefined) clearInterval(this.sweep);
    this.sweep = undefined;
  }

  private phase(socket: Socket): Phase {
    const state = this.tracked.get(socket);
    if (state === undefined || state.inFlight > 0) return state?.last?.complete === false ? 'sending' : 'answering';
    if (socket.bytesRead === 0) return 'silent';
    return state.answeredAt === socket.bytesRead ? 'waiting' : 'sending';
  }

  /** Makes room in `pool` for a newcomer; false when every connection in it is being answered. */
  private makeRoom(pool: Pool, cap: number): boolean {
    if (pool.all.size < cap) return true;
    const replaced = pool.replaceable((socket) => this.phase(socket));
    if (replaced === undefined) return false;
    this.close(replaced);
    return true;
  }

  /** Closes a connection and frees its slot now (its `close` event comes a tick later). */
  private close(socket: Socket): void {
    this.forget(socket);
    socket.destroy();
  }

  private forget(socket: Socket): void {
    const state = this.tracked.get(socket);
    if (state === undefined) return;
    this.tracked.delete(socket);
    this.all.delete(socket);
    const { client, own } = state;
    own?.delete(socket);
    if (client !== undefined && own?.all.size === 0 && this.perAddress.get(client) === own)
      this.perAddress.delete(client);
    this.tune();
  }

  /** From {@link BUSY_SHARE} of the cap on: a shorter keep-alive, and silent connections looked for. */
  private tune(): void {
    const busy = this.all.all.size >= this.busyFrom;
    const keepAlive = this.limits.httpKeepAliveTimeoutMs;
    this.server.keepAliveTimeout = busy ? Math.min(BUSY_KEEP_ALIVE_MS, keepAlive) : keepAlive;
    if (busy && this.sweep === undefined) {
      this.sweep = setInterval(() => this.closeSilent(), SILENT_SWEEP_MS);
      this.sweep.unref();
    } else if (!busy) this.stop();
  }

  /**
   * Closes the connections without traffic either way for the idle timeout, as Node's socket timeout did: a
   * client that stopped reading its answer, or one whose answer never comes. A connection kept alive between
   * requests is left to the keep-alive timeout, as Node leaves it (HTTP_KEEP_ALIVE_TIMEOUT is the longer one, so
   * that a proxy in front closes its idle connections first).
   */
  private closeIdle(): void {
    const now = Date.now();
    const before = now - this.limits.httpIdleTimeoutMs;
    for (const [socket, state] of this.tracked) {
      const traffic = socket.bytesRead + socket.bytesWritten;
      if (traffic !== state.traffic) {
        state.traffic = traffic;
        state.quietSince = now;
      } else if (state.quietSince <= before && this.phase(socket) !== 'waiting') this.close(socket);
    }
  }

  /** Closes the connections silent for {@link BUSY_SILENT_TIMEOUT_MS} (`silent` is oldest first). */
  private closeSilent(): void {
    const before = Date.now() - this.silentTimeoutMs;
    for (const socket of this.all.silent) {
      if (this.phase(socket) !== 'silent') this.all.silent.delete(socket);
      else if ((this.tracked.get(socket)?.openedAt ?? 0) > before) return;
      else this.close(socket);
    }
  }
}
