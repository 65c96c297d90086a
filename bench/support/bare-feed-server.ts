/**
 * The floor of Node for the feed-serving benchmark: a bare `node:http` server that sends the very bytes and
 * headers the api sent for one feed, prebuilt once, with no routing, negotiation or bookkeeping beyond
 * "gzip or not" and an exact If-None-Match. What the api costs above it is the service's own work; what it costs
 * below nginx is Node's HTTP parser and response objects, which no change of ours removes.
 *
 * Run as its own process (so that it can be pinned and its CPU counted apart):
 * `node bench/support/bare-feed-server.ts ANSWERS.json`, where the file is a {@link BareAnswers}; it prints
 * `bare node:http is running on http://127.0.0.1:PORT` and serves until SIGTERM or SIGINT.
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

if (import.meta.main) serve(process.argv[2] ?? '');
