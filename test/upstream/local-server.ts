/** A tiny loopback HTTP server for the cases the simulator cannot produce (huge bodies, raw sockets…). */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/logger.ts';

/** A recorded request: method, path, headers and body text. */
export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A running local server whose handler each test sets. */
export interface LocalServer {
  url: string;
  seen: SeenRequest[];
  handle(handler: (req: SeenRequest, res: ServerResponse) => void): void;
  close(): Promise<void>;
}

/** Starts a server on an ephemeral loopback port. */
export async function startLocalServer(): Promise<LocalServer> {
  let handler: (req: SeenRequest, res: ServerResponse) => void = (_req, res) => res.end('{}');
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      seen.push(request);
      handler(request, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    handle: (next) => {
      handler = next;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Sends a JSON body with the given status and headers. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** A debug-level logger writing into memory, and the text it has written so far. */
export function memoryLogger(): { logger: Logger; output: () => string } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk.toString());
      callback();
    },
  });
  return { logger: createLogger({ level: 'debug', destination }), output: () => chunks.join('') };
}

/** Records the delays the client asked to sleep, without sleeping. */
export function sleepSpy(): { sleep: (ms: number) => Promise<void>; delays: number[] } {
  const delays: number[] = [];
  return {
    delays,
    sleep: async (ms: number) => {
      delays.push(ms);
    },
  };
}
