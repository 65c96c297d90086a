/** Listening for the fakes we serve over HTTP (the university simulator, the fake Google in `test/`). */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** A listening server and how to stop it. */
export interface ClosableServer {
  /** The port it listens on (the one chosen when asked for port 0). */
  port: number;
  /**
   * Aborts the server's signal, stops listening and destroys every open socket; later calls answer the same promise.
   */
  close(): Promise<void>;
}

/**
 * Makes `server` listen on `host`:`port` (0: any free port). Its sockets are tracked, so that `close()` can
 * destroy them: a request the server holds on purpose (a fake timeout) cannot delay it. `abort` is aborted by
 * `close()`, so that such requests stop waiting too. A malformed request gets its socket destroyed.
 */
export async function listenClosable(
  server: Server,
  host: string,
  port: number,
  abort: AbortController,
): Promise<ClosableServer> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((resolve) => {
      abort.abort();
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
    return closed;
  };
  return { port: typeof address === 'object' && address ? address.port : port, close };
}
