import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { createUniversityClient } from '../../src/upstream/client.ts';

let server: Server | undefined;

/** A server that answers an empty timetable after `delayMs`, counting the TCP connections it accepts. */
async function countingServer(
  delayMs: number,
): Promise<{ url: string; connections: () => number; peak: () => number }> {
  let connections = 0;
  let open = 0;
  let peak = 0;
  server = createServer((_req, res) => {
    setTimeout(
      () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"success":true,"subjects":[]}'),
      delayMs,
    );
  });
  server.on('connection', (socket) => {
    connections += 1;
    open += 1;
    peak = Math.max(peak, open);
    socket.once('close', () => (open -= 1));
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, connections: () => connections, peak: () => peak };
}

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

describe("the client's connection pool", () => {
  it('keeps connections alive across sequential calls', async () => {
    const upstream = await countingServer(0);
    const client = createUniversityClient({ baseUrl: upstream.url, logger: silentLogger() });
    for (let i = 1; i <= 20; i += 1) await client.groupSchedule(i);
    // undici may open a second socket while the first is still being released; never one per call.
    expect(upstream.connections()).toBeLessThanOrEqual(2);
    await client.close();
  });

  it('never opens more than maxConnections to the upstream, however many calls are in flight', async () => {
    const upstream = await countingServer(30);
    const client = createUniversityClient({ baseUrl: upstream.url, logger: silentLogger(), maxConnections: 2 });
    await Promise.all(Array.from({ length: 12 }, (_, i) => client.groupSchedule(i + 1)));
    expect(upstream.peak()).toBe(2);
    await client.close();
  });
});
