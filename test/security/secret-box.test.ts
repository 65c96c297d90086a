import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DecryptionError, SecretKeyMissingError } from '../../src/security/errors.ts';
import { SecretBox } from '../../src/security/secret-box.ts';

const key = randomBytes(32);
const box = new SecretBox(key);
const CONTEXT = 'subscription:AAAAAAAAAAAAAAAAAAAAAA:credential';

/** Flips one bit of one decoded part (1 = iv, 2 = tag, 3 = ciphertext) and re-encodes it canonically. */
function flip(sealed: string, part: 1 | 2 | 3, byte = 0): string {
  const parts = sealed.split('.');
  const bytes = Buffer.from(parts[part] ?? '', 'base64url');
  bytes[byte] = (bytes[byte] ?? 0) ^ 0x01;
  parts[part] = bytes.toString('base64url');
  return parts.join('.');
}

describe('SecretBox', () => {
  it('round-trips text, empty and non-ASCII included', () => {
    for (const secret of ['university-token-123', '', 'пароль ✓ 🔑', 'x'.repeat(4096)]) {
      expect(box.open(box.seal(secret, CONTEXT), CONTEXT)).toBe(secret);
    }
  });

  it('writes v1.<iv>.<tag>.<ciphertext> in base64url, with a fresh IV every time', () => {
    const first = box.seal('same secret', CONTEXT);
    const second = box.seal('same secret', CONTEXT);
    expect(first).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/);
    expect(first).not.toBe(second);
    expect(first).not.toContain('same secret');
    expect(Buffer.from(first.split('.')[3] ?? '', 'base64url').toString('utf8')).not.toContain('same');
  });

  it.each([
    ['iv', 1],
    ['tag', 2],
    ['ciphertext', 3],
  ] as const)('detects a changed %s', (_name, part) => {
    const sealed = box.seal('university-token-123', CONTEXT);
    expect(() => box.open(flip(sealed, part), CONTEXT)).toThrow(DecryptionError);
  });

  it('refuses a ciphertext moved to another record (associated data)', () => {
    const sealed = box.seal('university-token-123', CONTEXT);
    expect(() => box.open(sealed, 'subscription:BBBBBBBBBBBBBBBBBBBBBB:credential')).toThrow(DecryptionError);
    expect(() => box.open(sealed, 'google-target:x:refresh-token')).toThrow(DecryptionError);
  });

  it('refuses to open with another key', () => {
    const sealed = box.seal('university-token-123', CONTEXT);
    expect(() => new SecretBox(randomBytes(32)).open(sealed, CONTEXT)).toThrow(DecryptionError);
  });

  it('refuses malformed text: other versions, wrong part counts, truncated tags, non-canonical base64url', () => {
    const sealed = box.seal('university-token-123', CONTEXT);
    const [, iv = '', tag = '', ciphertext = ''] = sealed.split('.');
    const shortTag = Buffer.from(tag, 'base64url').subarray(0, 12).toString('base64url');
    for (const bad of [
      `v2.${iv}.${tag}.${ciphertext}`,
      `${iv}.${tag}.${ciphertext}`,
      `v1.${iv}.${shortTag}.${ciphertext}`,
      `${sealed}.x`,
      `v1.${iv}.${tag}.${ciphertext}=`,
      `v1.${iv}.${tag}.${ciphertext}+`,
      '',
    ]) {
      expect(() => box.open(bad, CONTEXT), bad).toThrow(DecryptionError);
    }
  });

  it('never puts the secret into an error message', () => {
    const sealed = box.seal('university-token-123', CONTEXT);
    try {
      box.open(sealed, 'other');
      expect.unreachable();
    } catch (error) {
      expect(String((error as Error).message)).not.toContain('university-token-123');
      expect(String((error as Error).message)).not.toContain(sealed);
    }
  });

  it('throws SecretKeyMissingError without a key, and rejects keys that are not 32 bytes', () => {
    const keyless = new SecretBox(undefined);
    expect(keyless.available).toBe(false);
    expect(() => keyless.seal('x', CONTEXT)).toThrow(SecretKeyMissingError);
    expect(() => keyless.open(box.seal('x', CONTEXT), CONTEXT)).toThrow(SecretKeyMissingError);
    expect(() => new SecretBox(randomBytes(16))).toThrow(RangeError);
  });

  it('keeps its own copy of the key', () => {
    const buffer = Buffer.from(key);
    const own = new SecretBox(buffer);
    const sealed = own.seal('x', CONTEXT);
    buffer.fill(0);
    expect(own.open(sealed, CONTEXT)).toBe('x');
  });
});
