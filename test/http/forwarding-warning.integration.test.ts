/** X-Forwarded-For from a peer TRUST_PROXY does not trust is warned about once per process, naming the peer. */
import { afterEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../upstream/local-server.ts';
import { startTestApp, type TestApp } from './helpers.ts';

let app: TestApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** An app logging into memory; answers it and the warn lines about forwarding logged so far. */
async function appWith(env: Record<string, string>) {
  const { logger, output } = memoryLogger();
  app = await startTestApp({ env, logger });
  const warnings = () =>
    output()
      .split('\n')
      .filter((line) => line.includes('X-Forwarded-For'))
      .map((line) => JSON.parse(line) as { level: number; peer: string; msg: string });
  return { app, warnings };
}

function healthz(t: TestApp, remoteAddress: string, forwarded?: string) {
  const headers = forwarded === undefined ? {} : { 'x-forwarded-for': forwarded };
  return t.app.inject({ method: 'GET', url: '/healthz', remoteAddress, headers });
}

describe('X-Forwarded-For from an untrusted peer', () => {
  it('is warned about once, at warn level, with the peer address, when TRUST_PROXY is unset', async () => {
    const { app: t, warnings } = await appWith({});
    await healthz(t, '192.0.2.5');
    expect(warnings()).toEqual([]);
    await healthz(t, '::ffff:192.0.2.5', '198.51.100.7');
    await healthz(t, '192.0.2.6', '198.51.100.8');
    const logged = warnings();
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ level: 40, peer: '192.0.2.5' });
    expect(logged[0]?.msg).toMatch(/set TRUST_PROXY/);
  });

  it('is not warned about from a proxy TRUST_PROXY names, and is from any other peer', async () => {
    const { app: t, warnings } = await appWith({ TRUST_PROXY: '10.0.0.0/8,2001:db8::1' });
    await healthz(t, '10.1.2.3', '198.51.100.7');
    await healthz(t, '2001:db8::1', '198.51.100.7');
    expect(warnings()).toEqual([]);
    await healthz(t, '203.0.113.9', '198.51.100.7');
    expect(warnings().map((line) => line.peer)).toEqual(['203.0.113.9']);
  });

  it('is never warned about when TRUST_PROXY trusts every peer', async () => {
    const { app: t, warnings } = await appWith({ TRUST_PROXY: 'true' });
    await healthz(t, '203.0.113.9', '198.51.100.7');
    expect(warnings()).toEqual([]);
  });
});
