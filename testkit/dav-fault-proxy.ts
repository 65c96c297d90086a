/**
 * A CalDAV fault proxy (node:http) in front of a real server (Radicale in the tests): it forwards every request
 * and, at a seeded rate, answers an error instead. `when: 'before'` answers without forwarding (the server saw
 * nothing); `when: 'after'` forwards, lets the server apply the request, and then answers the error, so the
 * write happened but the client does not know: the case a push must survive without duplicating anything.
 *
 * It also counts requests per method, can slow every PUT (so that a test can kill a worker mid-push), and can
 * rewrite the hrefs of multistatus answers as absolute URLs, on its own origin or on a second listening port
 * (iCloud answers absolute hrefs on a partition host, `https://p62-caldav.icloud.com:443/…`).
 */
import { Agent, createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRandom, type Random } from '../src/simulator/random.ts';

/** When an injected fault strikes: before forwarding, after the server answered, or either (half each). */
export type ProxyFaultWhen = 'before' | 'after' | 'both';

/** What the proxy does; every field can be changed while it runs ({@link DavFaultProxy.configure}). */
export interface DavFaultProxyOptions {
  /** Share of matching requests answered with {@link status} (0..1); default 0. */
  rate?: number;
  /** The status of an injected fault; default 503. */
  status?: number;
  /** `Retry-After` sent with a fault (seconds, as a string), or none. */
  retryAfter?: string | undefined;
  /** Default `before`. */
  when?: ProxyFaultWhen;
  /** Methods faults apply to (upper case); default every method. */
  methods?: readonly string[] | undefined;
  /** Milliseconds every PUT waits before it is forwarded; default 0. */
  putDelayMs?: number;
  /**
   * Rewrites `<href>` values of XML answers as absolute URLs: on the proxy's own origin (`self`), or on the
   * origin of a second port of the proxy (`partition`), which forwards to the same server.
   */
  absoluteHrefs?: 'self' | 'partition' | undefined;
}

/** A running proxy. */
export interface DavFaultProxy {
  /** `http://127.0.0.1:<port>/`: give this to the client instead of the server's URL. */
  url: string;
  /** The second origin (`http://127.0.0.1:<port2>/`), the "partition host" hrefs point to with `partition`. */
  partitionUrl: string;
  /** Requests seen, per method (faulted ones included). */
  readonly requests: Map<string, number>;
  /** Faults injected, per method. */
  readonly faults: Map<string, number>;
  /** Requests the server answered (forwarded), per method and status, `PUT 201`. */
  readonly answered: Map<string, number>;
  /** Called as each request arrives (before any fault or delay). */
  onRequest: ((method: string, path: string) => void) | undefined;
  /** Changes the options (unset fields keep their value). */
  configure(options: DavFaultProxyOptions): void;
  /** Requests of a method seen so far. */
  seen(method: string): number;
  close(): Promise<void>;
}

/** Starts a proxy to `target` (a server URL such as Radicale's `http://127.0.0.1:<port>/`). */
export async function startDavFaultProxy(
  target: string,
  options: DavFaultProxyOptions & { seed?: number | string } = {},
): Promise<DavFaultProxy> {
  const upstream = new URL(target);
  const random: Random = createRandom(options.seed ?? 1, 'dav-fault-proxy');
  const settings: Required<Omit<DavFaultProxyOptions, 'retryAfter' | 'methods' | 'absoluteHrefs'>> &
    Pick<DavFaultProxyOptions, 'retryAfter' | 'methods' | 'absoluteHrefs'> = {
    rate: 0,
    status: 503,
    when: 'before',
    putDelayMs: 0,
    retryAfter: undefined,
    methods: undefined,
    absoluteHrefs: undefined,
  };
  const configure = (next: DavFaultProxyOptions) => {
    for (const [key, value] of Object.entries(next))
      if (value !== undefined || key === 'retryAfter') (settings as Record<string, unknown>)[key] = value;
    if (!(settings.rate >= 0 && settings.rate <= 1)) throw new RangeError('fault rate must be within 0..1');
  };
  const { seed: _seed, ...initial } = options;
  configure(initial);
  // Radicale speaks HTTP/1.0, one connection per request: no keep-alive towards it.
  const agent = new Agent({ keepAlive: false });
  const counts = { requests: new Map<string, number>(), faults: new Map<string, number>(), answered: new Map() };
  const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const origins = { self: '', partition: '' };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method ?? 'GET';
    bump(counts.requests, method);
    proxy.onRequest?.(method, req.url ?? '/');
    const body = await readAll(req);
    if (method === 'PUT' && settings.putDelayMs > 0) await new Promise((r) => setTimeout(r, settings.putDelayMs));
    const faulted =
      (settings.methods === undefined || settings.methods.includes(method)) &&
      settings.rate > 0 &&
      random.chance(settings.rate);
    const when = settings.when === 'both' ? (random.chance(0.5) ? 'before' : 'after') : settings.when;
    if (faulted && when === 'before') return fault(res, method);
    let answer: { status: number; headers: Record<string, string | string[]>; body: Buffer };
    try {
      answer = await forward(req, body);
    } catch {
      res.writeHead(502).end();
      return;
    }
    bump(counts.answered, `${method} ${answer.status}`);
    if (faulted) return fault(res, method);
    let out = answer.body;
    const type = String(answer.headers['content-type'] ?? '');
    if (settings.absoluteHrefs !== undefined && /xml/.test(type)) {
      const origin = settings.absoluteHrefs === 'self' ? origins.self : origins.partition;
      out = Buffer.from(
        out
          .toString('utf8')
          .replace(/(<(?:[A-Za-z0-9_-]+:)?href>)\s*(\/[^<]*)</g, (_, open, path) => `${open}${origin}${path}<`),
      );
    }
    const headers = { ...answer.headers };
    delete headers['content-length'];
    delete headers['transfer-encoding'];
    delete headers.connection;
    res.writeHead(answer.status, { ...headers, 'content-length': String(out.length) });
    res.end(out);
  };

  const fault = (res: ServerResponse, method: string) => {
    bump(counts.faults, method);
    const headers: Record<string, string> = { 'content-type': 'text/plain' };
    if (settings.retryAfter !== undefined) headers['retry-after'] = settings.retryAfter;
    res.writeHead(settings.status, headers).end('injected fault\n');
  };

  const forward = (req: IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: Record<string, string | string[]>; body: Buffer }>((resolve, reject) => {
      const headers = { ...req.headers, host: upstream.host, 'content-length': String(body.length) };
      delete headers.connection;
      delete headers['transfer-encoding'];
      const outgoing = request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent },
        (answer) => {
          readAll(answer).then(
            (all) =>
              resolve({
                status: answer.statusCode ?? 502,
                headers: answer.headers as Record<string, string | string[]>,
                body: all,
              }),
            reject,
          );
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });

  const listen = (server: Server) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
  };
  const servers = [createServer(onRequest), createServer(onRequest)];
  const [port, partitionPort] = [await listen(servers[0] as Server), await listen(servers[1] as Server)];
  origins.self = `http://127.0.0.1:${port}`;
  origins.partition = `http://127.0.0.1:${partitionPort}`;

  const proxy: DavFaultProxy = {
    url: `${origins.self}/`,
    partitionUrl: `${origins.partition}/`,
    requests: counts.requests,
    faults: counts.faults,
    answered: counts.answered,
    onRequest: undefined,
    configure,
    seen: (method) => counts.requests.get(method) ?? 0,
    close: async () => {
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
              server.closeAllConnections();
            }),
        ),
      );
      agent.destroy();
    },
  };
  return proxy;
}

/** A stream's whole body. */
async function readAll(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}
