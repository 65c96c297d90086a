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

  it('redacts a CalDAV app password, alone or with its login', () => {
    const out = memory();
    const logger = createLogger({ level: 'info', destination: out.stream });
    logger.info({ password: 'APP-1', credentials: { username: 'student', password: 'APP-2' } }, 'connecting');
    expect(out.text()).not.toMatch(/APP-\d/);
    expect(out.text()).toContain('student');
  });

  it('writes human-readable lines when pretty', () => {
    const out = memory();
    const logger = createLogger({ level: 'info', destination: out.stream, pretty: true });
    logger.info({ credential: 'CRED-X' }, 'hello people');
    expect(out.text()).toMatch(/INFO.*hello people/);
    expect(() => JSON.parse(out.text())).toThrow();
    expect(out.text()).not.toContain('CRED-X');
  });

  it('prints one pretty line per event, its context first and the other fields inline', () => {
    const out = memory();
    const logger = createLogger({ level: 'info', destination: out.stream, pretty: true, base: { role: 'worker' } });
    logger
      .child({ source: 'group:1', jobId: 'group-1-x', attempt: 1 })
      .info({ changes: { added: 3, removed: 1 }, occurrences: 120, pushJobs: 2 }, 'feed published');
    logger.child({ component: 'upstream' }).warn({ err: new Error('boom\nsecond line') }, 'fetch failed');
    const lines = out.text().trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /INFO: worker group:1 feed published \{"jobId":"group-1-x","attempt":1,"changes":\{"added":3,/,
    );
    expect(lines[0]).not.toMatch(/"pid"|"role"|"source"/);
    expect(lines[1]).toMatch(/WARN: worker upstream fetch failed: Error: boom second line$/);
  });

  it('keeps headline fields that are not strings in the JSON tail of a pretty line', () => {
    const out = memory();
    const logger = createLogger({ level: 'info', destination: out.stream, pretty: true, base: { role: 'worker' } });
    logger.child({ source: { kind: 'group', id: 7 }, component: 42 }).info('odd bindings');
    logger.child({ source: '' }).info('empty source');
    const lines = out.text().trimEnd().split('\n');
    expect(lines[0]).toMatch(/INFO: worker odd bindings \{.*"source":\{"kind":"group","id":7\}/);
    expect(lines[0]).toContain('"component":42');
    expect(lines[0]).not.toContain('"role"');
    expect(lines[1]).toMatch(/INFO: worker empty source \{"source":""\}$/);
  });

  it('keeps an error stack in pretty lines at debug only', () => {
    const out = memory();
    createLogger({ level: 'debug', destination: out.stream, pretty: true }).error({ err: new Error('boom') }, 'x');
    expect(out.text()).toMatch(/at .*logger\.test\.ts/);
  });

  it('respects the level', () => {
    const out = memory();
    createLogger({ level: 'warn', destination: out.stream }).info('quiet');
    expect(out.text()).toBe('');
  });
});
