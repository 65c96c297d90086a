/**
 * Two small forward proxies on loopback that tunnel TCP and count what went through them, for the tests of
 * `TELEGRAM_PROXY`: an HTTP proxy that answers `CONNECT host:port` (RFC 9110 §9.3.6) after Basic proxy
 * authentication (407 without it), and a SOCKS5 proxy (RFC 1928) with username/password authentication
 * (RFC 1929). Both refuse anything else: a plain forwarded request (`GET http://…`) is counted and answered 405,
 * so a test sees a client that forwards instead of tunnelling.
 */
import { once } from 'node:events';
import { createServer as createHttpServer } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';

/** A running proxy. */
export interface TunnelProxy {
  /** The proxy's URL with its credentials (`http://user:pass@127.0.0.1:PORT`, `socks5://…`). */
  readonly url: string;
  /** Tunnels opened, each with the target it asked for (`host:port`). */
  tunnels(): string[];
  /** Tunnels still open. */
  openTunnels(): number;
  /** Requests refused: bad or missing credentials, a plain forwarded request, a malformed greeting. */
  refusals(): string[];
  /**
   * The Bot API methods of the plain-http requests seen inside the tunnels (`sendMessage`, `getUpdates`), read
   * from their request lines (`POST /bot<token>/<method>`), the token left out.
   */
  methods(): string[];
  /** Closes the proxy and every tunnel. */
  close(): Promise<void>;
}

interface Tracking {
  tunnels: string[];
  refusals: string[];
  methods: string[];
  open: Set<Socket>;
  sockets: Set<Socket>;
}

function tracking(): Tracking {
  return { tunnels: [], refusals: [], methods: [], open: new Set(), sockets: new Set() };
}

/** A Bot API request line: `POST /bot<token>/<method> HTTP/1.1`. */
const REQUEST_LINE = /(?:GET|POST) \/bot[^/\s]+\/(\w+) HTTP\/1\.1\r\n/g;

/** Pipes `client` to a new connection to `host:port`; `ready` writes the proxy's answer once connected. */
function tunnel(track: Tracking, client: Socket, host: string, port: number, ready: () => void, head?: Buffer): void {
  const upstream = connect(port, host, () => {
    track.tunnels.push(`${host}:${port}`);
    track.open.add(upstream);
    ready();
    if (head !== undefined && head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
    // The unread end of what came so far: a request line split across two chunks is still read whole.
    let tail = '';
    client.on('data', (chunk: Buffer) => {
      const text = tail + chunk.toString('latin1');
      for (const match of text.matchAll(REQUEST_LINE)) track.methods.push(match[1] as string);
      tail = text.slice(text.lastIndexOf('\n') + 1).slice(-200);
    });
  });
  track.sockets.add(upstream);
  const end = () => {
    track.open.delete(upstream);
    upstream.destroy();
    client.destroy();
  };
  upstream.on('error', end).on('close', end);
  client.on('error', end).on('close', end);
}

function handle(server: Server, track: Tracking, url: string): TunnelProxy {
  server.on('connection', (socket: Socket) => {
    track.sockets.add(socket);
    socket.on('close', () => track.sockets.delete(socket));
  });
  return {
    url,
    tunnels: () => [...track.tunnels],
    openTunnels: () => track.open.size,
    refusals: () => [...track.refusals],
    methods: () => [...track.methods],
    close: async () => {
      for (const socket of track.sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** An HTTP CONNECT proxy that wants `Proxy-Authorization: Basic` of `user:pass`. */
export async function startConnectProxy(user: string, pass: string): Promise<TunnelProxy> {
  const track = tracking();
  const expected = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  const server = createHttpServer((request, response) => {
    track.refusals.push(`forwarded ${request.method} ${request.url}`);
    response.writeHead(405, { connection: 'close' }).end();
  });
  server.on('connect', (request, client: Socket, head: Buffer) => {
    if (request.headers['proxy-authorization'] !== expected) {
      track.refusals.push(`CONNECT ${request.url} without the credentials`);
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\n\r\n');
      return;
    }
    const target = new URL(`http://${request.url}`);
    tunnel(
      track,
      client,
      target.hostname,
      Number(target.port),
      () => client.write('HTTP/1.1 200 Connection Established\r\n\r\n'),
      head,
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return handle(server, track, `http://${user}:${pass}@127.0.0.1:${port}`);
}

/** A SOCKS5 proxy that wants username/password authentication with `user` and `pass`. */
export async function startSocks5Proxy(user: string, pass: string): Promise<TunnelProxy> {
  const track = tracking();
  const server = createServer((client) => {
    socks5Session(track, client, user, pass).catch((error: unknown) => {
      track.refusals.push(`socks5: ${error instanceof Error ? error.message : String(error)}`);
      client.destroy();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return handle(server, track, `socks5://${user}:${pass}@127.0.0.1:${port}`);
}

/** Reads exactly `length` bytes from `socket`. */
async function read(socket: Socket, length: number): Promise<Buffer> {
  for (;;) {
    const chunk = socket.read(length) as Buffer | null;
    if (chunk !== null) return chunk;
    if (socket.destroyed || socket.readableEnded) throw new Error('the client went away');
    await Promise.race([once(socket, 'readable'), once(socket, 'close')]);
  }
}

/** One SOCKS5 exchange: greeting, username/password, CONNECT; then the tunnel. */
async function socks5Session(track: Tracking, client: Socket, user: string, pass: string): Promise<void> {
  const [version, count] = await read(client, 2);
  if (version !== 5) throw new Error(`version ${String(version)}`);
  const methods = await read(client, count ?? 0);
  if (!methods.includes(0x02)) {
    client.end(Buffer.from([5, 0xff]));
    throw new Error('no username/password method offered');
  }
  client.write(Buffer.from([5, 0x02]));
  const [, userLength] = await read(client, 2);
  const givenUser = (await read(client, userLength ?? 0)).toString();
  const [passLength] = await read(client, 1);
  const givenPass = (await read(client, passLength ?? 0)).toString();
  if (givenUser !== user || givenPass !== pass) {
    client.end(Buffer.from([1, 1]));
    throw new Error('wrong credentials');
  }
  client.write(Buffer.from([1, 0]));
  const [, command, , type] = await read(client, 4);
  if (command !== 1) throw new Error(`command ${String(command)}`);
  let host: string;
  if (type === 1) host = [...(await read(client, 4))].join('.');
  else if (type === 3) host = (await read(client, (await read(client, 1))[0] ?? 0)).toString();
  else throw new Error(`address type ${String(type)}`);
  const port = (await read(client, 2)).readUInt16BE(0);
  // Succeeded, bound to 0.0.0.0:0 (clients do not use it).
  tunnel(track, client, host, port, () => client.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0])));
}
