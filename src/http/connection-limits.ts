/**
 * How many connections the HTTP server holds, and for whom. A global cap alone let one client open every
 * connection the process accepts (4,100 kept-alive connections with one `/healthz` each locked everybody
 * out for 30 s and more), so connections are also capped per client address, kept-alive connections wait
 * for less when the server is nearly full, and idle ones are closed when a newcomer is turned away. On the
 * public internet a reverse proxy in front is still expected: one client can own many addresses (IPv6).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import { clientOf } from './client-address.ts';
import { trustedProxyMatcher } from './trusted-proxies.ts';

/** The config fields the connection limits are read from. */
export type ConnectionLimits = Pick<
  Config,
  'httpMaxConnections' | 'httpMaxConnectionsPerAddress' | 'httpKeepAliveTimeoutMs' | 'trustProxy'
>;

/** From this share of the global cap on, kept-alive connections wait {@link BUSY_KEEP_ALIVE_MS} at most. */
export const BUSY_SHARE = 0.75;
/** Node's own default keep-alive: long enough for a client's next request, short enough to free a slot soon. */
export const BUSY_KEEP_ALIVE_MS = 5_000;
/** Idle connections are closed for a turned-away newcomer at most this often (each close walks every connection). */
const IDLE_SWEEP_INTERVAL_MS = 1_000;

/**
 * Applies the caps to the app's server; call right after building the instance. Connections from the proxies
 * `TRUST_PROXY` names are not capped per address (each carries many clients, which the proxy limits itself).
 */
export function applyConnectionLimits(app: FastifyInstance, limits: ConnectionLimits): void {
  const server = app.server;
  server.maxConnections = limits.httpMaxConnections;
  const isProxy = trustedProxyMatcher(limits.trustProxy);
  const busyFrom = Math.max(1, Math.floor(limits.httpMaxConnections * BUSY_SHARE));
  // Each client's open sockets, and which of them wait between requests (kept alive, nothing in flight).
  const perAddress = new Map<string, Set<Socket>>();
  const idle = new WeakSet<Socket>();
  let open = 0;

  const tuneKeepAlive = () => {
    server.keepAliveTimeout =
      open >= busyFrom ? Math.min(BUSY_KEEP_ALIVE_MS, limits.httpKeepAliveTimeoutMs) : limits.httpKeepAliveTimeoutMs;
  };

  server.on('connection', (socket: Socket) => {
    open += 1;
    socket.once('close', () => {
      open -= 1;
      tuneKeepAlive();
    });
    tuneKeepAlive();
    const address = socket.remoteAddress;
    if (address === undefined || isProxy(address)) return;
    // The rate limits' notion of a client: an IPv6 client is its /64.
    const client = clientOf(address);
    let sockets = perAddress.get(client);
    if (sockets === undefined) {
      sockets = new Set();
      perAddress.set(client, sockets);
    }
    if (sockets.size >= limits.httpMaxConnectionsPerAddress) {
      // At its cap, a client's waiting connection makes room for its new one (behind a NAT, many people's
      // browsers and calendar apps each keep one alive); with none waiting, the newcomer is turned away.
      const waiting = [...sockets].find((open) => idle.has(open));
      if (waiting === undefined) {
        socket.destroy();
        return;
      }
      sockets.delete(waiting);
      waiting.destroy();
    }
    // Not idle until it has been answered: a connection still sending its first request is busy.
    sockets.add(socket);
    const own = sockets;
    socket.once('close', () => {
      own.delete(socket);
      if (own.size === 0 && perAddress.get(client) === own) perAddress.delete(client);
    });
  });
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket as Socket;
    idle.delete(socket);
    response.once('finish', () => idle.add(socket));
  });

  // Node closes a connection beyond maxConnections before anyone sees it; make room for the next one instead
  // of leaving the slots to connections that only wait.
  let lastSweep = 0;
  server.on('drop', () => {
    const now = Date.now();
    if (now - lastSweep < IDLE_SWEEP_INTERVAL_MS) return;
    lastSweep = now;
    server.closeIdleConnections();
  });
}
