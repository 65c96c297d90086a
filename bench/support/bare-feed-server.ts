/**
 * The floor of Node for the feed-serving benchmark: a bare `node:http` server that sends the very bytes and
 * headers the api sent for one feed, prebuilt once, with no routing, negotiation or bookkeeping beyond
 * "gzip or not" and an exact If-None-Match. What the api costs above it is the service's own work; what it costs
 * below nginx is Node's HTTP parser and response objects, which no change of ours removes.
 *
 * Run as its own process (so that it can be pinned and its CPU counted apart):
 * `node bench/support/bare-feed-server.ts ANSWERS.json [--warm REDIS_URL]`, where the file is a {@link BareAnswers}; it
 * prints `bare node:http is running on http://127.0.0.1:PORT` and serves until SIGTERM or SIGINT.
 *
 * With `--warm REDIS_URL` it first does what a running api does besides serving feeds, with the api's own
 * libraries: loads the api's whole module graph, sends Redis commands with ioredis and queues BullMQ jobs (under a
 * prefix of its own, removed before it serves), and answers HTTP requests through fastify from undici. Then it
 * serves as above. Node's shared functions (events, streams, the HTTP parser's callbacks) have by then met the
 * shapes of every library's objects, as in the api: api / this floor is what the service's own code costs, this
 * floor / bare node what the process's other work costs every request it serves.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

/** One answer as the api sent it: status, `[name, value, …]` headers (without Date and connection ones), body file. */
export interface BareAnswer {
  headers: string[];
  /** Path of the body's bytes; absent for a 304. */
  bodyFile?: string;
}

/** Everything the bare server sends: 200 and 304 per coding, and the ETag of each coding. */
export interface BareAnswers {
  plain: { ok: BareAnswer; notModified: BareAnswer; etag: string };
  gzip: { ok: BareAnswer; notModified: BareAnswer; etag: string };
}

/** Headers node:http writes itself, or that describe the connection rather than the answer. */
const OWN_HEADERS = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);

/** `headers` of a received answer as a `writeHead` list, without the ones node:http writes itself. */
export function answerHeaders(headers: Record<string, string | string[] | undefined>): string[] {
  const list: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (OWN_HEADERS.has(name) || value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) list.push(name, one);
  }
  return list;
}

function serve(file: string): void {
  const answers = JSON.parse(readFileSync(file, 'utf8')) as BareAnswers;
  const made = (answer: BareAnswer) => ({
    headers: answer.headers,
    body: answer.bodyFile === undefined ? undefined : readFileSync(answer.bodyFile),
  });
  const plain = { ok: made(answers.plain.ok), notModified: made(answers.plain.notModified), etag: answers.plain.etag };
  const gzip = { ok: made(answers.gzip.ok), notModified: made(answers.gzip.notModified), etag: answers.gzip.etag };
  const server = createServer({ keepAliveTimeout: 72_000 }, (request, response) => {
    const coded = request.headers['accept-encoding']?.includes('gzip') ? gzip : plain;
    if (request.headers['if-none-match'] === coded.etag) {
      response.writeHead(304, coded.notModified.headers);
      response.end();
      return;
    }
    response.writeHead(200, coded.ok.headers);
    response.end(request.method === 'HEAD' ? undefined : coded.ok.body);
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    process.stdout.write(`bare node:http is running on http://127.0.0.1:${port}\n`);
  });
  const stop = () => {
    server.close();
    server.closeAllConnections();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

/** The module the command runs roles from: it imports the api's whole module graph, and loading it runs nothing. */
const API_ENTRY = '../../src/runtime/roles.ts';
/**
 * Rounds of the warm-up: each sends two Redis commands and one HTTP request, every tenth also queues a BullMQ job
 * (4,000 commands, 200 jobs, 2,000 requests): enough for every call site's inline caches to settle.
 */
const WARM_UP_ROUNDS = 2_000;
/** Keys of the warm-up's own commands, apart from the service's (under REDIS_PREFIX) in the same Redis. */
const WARM_UP_KEYS = 'bench-bare-warm-up';

/** What a running api does besides serving feeds, with its own libraries; see the module comment. */
async function warmUp(redisUrl: string): Promise<void> {
  if (!/^rediss?:\/\//.test(redisUrl)) throw new Error(`--warm needs a redis:// URL; got "${redisUrl}"`);
  await import(API_ENTRY);
  const { Redis } = await import('ioredis');
  const { Queue } = await import('bullmq');
  const { default: Fastify } = await import('fastify');
  const { request } = await import('undici');
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  // BullMQ leaves a connection it was given open at close: it is closed here with the other one.
  const queueConnection = redis.duplicate();
  const queue = new Queue('warm-up', { connection: queueConnection, prefix: WARM_UP_KEYS });
  const app = Fastify();
  app.get('/items/:id', async (req, reply) => {
    reply.header('cache-control', 'no-store');
    return { id: (req.params as { id: string }).id };
  });
  try {
    for (let round = 0; round < WARM_UP_ROUNDS; round += 1) {
      await redis.set(`${WARM_UP_KEYS}:${round % 50}`, String(round));
      await redis.get(`${WARM_UP_KEYS}:${round % 50}`);
      if (round % 10 === 0) await queue.add('item', { round });
    }
    await queue.obliterate({ force: true });
    await redis.del(...Array.from({ length: 50 }, (_, index) => `${WARM_UP_KEYS}:${index}`));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    for (let round = 0; round < WARM_UP_ROUNDS; round += 1)
      await (await request(`http://127.0.0.1:${port}/items/${round}`)).body.text();
  } finally {
    await app.close();
    await queue.close();
    queueConnection.disconnect();
    redis.disconnect();
  }
}

if (import.meta.main) {
  if (process.argv[3] === '--warm') await warmUp(process.argv[4] ?? '');
  serve(process.argv[2] ?? '');
}
