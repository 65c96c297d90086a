import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../src/logger.ts';

function memory(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { stream, text: () => chunks.join('') };
}

describe('createLogger', () => {
  it('writes JSON lines with the bound fields when not pretty', () => {
    const out = memory();
    const logger = createLogger({ level: 'info', destination: out.stream, base: { role: 'worker' } });
    logger.child({ source: 'group:1' }).info({ attempt: 2 }, 'refreshed');
    const line = JSON.parse(out.text().trim()) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 30, role: 'worker', source: 'group:1', attempt: 2, msg: 'refreshed' });
  });

  it('redacts credentials, tokens and authorization headers by path', () => {
    const out = memory();
    const logger = createLogger({ level: 'info', destination: out.stream });
    logger.info(
      {
        credential: 'CRED-1',
        token: 'TOKEN-2',
        refreshToken: 'REFRESH-3',
        headers: { authorization: 'Bearer AUTH-4', cookie: 'sid=COOKIE-5' },
        req: { headers: { authorization: 'Bearer AUTH-6' } },
        subscription: { credential: 'CRED-7', accessToken: 'ACCESS-8', id: 'sub-1' },
        config: { SECRET_KEY: 'KEY-9', ADMIN_TOKEN: 'ADMIN-10' },
      },
      'with secrets',
    );
    const text = out.text();
    for (const secret of [
      'CRED-1',
      'TOKEN-2',
      'REFRESH-3',
      'AUTH-4',
      'COOKIE-5',
      'AUTH-6',
      'CRED-7',
      'ACCESS-8',
      'KEY-9',
      'ADMIN-10',
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain('[redacted]');
    expect(text).toContain('sub-1');
  });

  it('writes human-readable lines when pretty', () => {
    const out = memory();
    const logger = createLogger({ level: 'info', destination: out.stream, pretty: true });
    logger.info({ credential: 'CRED-X' }, 'hello people');
    expect(out.text()).toMatch(/INFO.*hello people/);
    expect(() => JSON.parse(out.text())).toThrow();
    expect(out.text()).not.toContain('CRED-X');
  });

  it('respects the level', () => {
    const out = memory();
    createLogger({ level: 'warn', destination: out.stream }).info('quiet');
    expect(out.text()).toBe('');
  });
});
