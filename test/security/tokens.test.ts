import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { constantTimeEqual, hashToken, keyedDigest, randomToken } from '../../src/security/tokens.ts';

describe('tokens', () => {
  it('makes 256-bit base64url tokens by default, all different', () => {
    const tokens = new Set(Array.from({ length: 1000 }, () => randomToken()));
    expect(tokens.size).toBe(1000);
    for (const token of tokens) expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(randomToken(16)).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it('hashes with SHA-256 as hex', () => {
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('compares strings of any lengths', () => {
    expect(constantTimeEqual('secret-token', 'secret-token')).toBe(true);
    expect(constantTimeEqual('secret-token', 'secret-tokem')).toBe(false);
    expect(constantTimeEqual('secret-token', 'secret-token-longer')).toBe(false);
    expect(constantTimeEqual('', '')).toBe(true);
    expect(constantTimeEqual('', 'x')).toBe(false);
    expect(constantTimeEqual('ключ', 'ключ')).toBe(true);
  });

  it('digests under a key and a purpose: HMAC-SHA256 hex, different for another key or purpose', () => {
    const key = Buffer.alloc(32, 7);
    const digest = keyedDigest(key, 'subscription-credential', 'token-1');
    expect(digest).toBe(createHmac('sha256', key).update('subscription-credential\0token-1').digest('hex'));
    expect(keyedDigest(key, 'subscription-credential', 'token-1')).toBe(digest);
    expect(keyedDigest(key, 'subscription-credential', 'token-2')).not.toBe(digest);
    expect(keyedDigest(Buffer.alloc(32, 8), 'subscription-credential', 'token-1')).not.toBe(digest);
    expect(keyedDigest(key, 'other-purpose', 'token-1')).not.toBe(digest);
    // The purpose and the value are kept apart: moving a character across the boundary changes the digest.
    expect(keyedDigest(key, 'a', 'bc')).not.toBe(keyedDigest(key, 'ab', 'c'));
    expect(digest).not.toBe(hashToken('token-1'));
  });
});
