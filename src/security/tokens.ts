import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Bytes in a default secret token: 256 bits, far above the 128-bit floor for unguessable URLs. */
export const TOKEN_BYTES = 32;

/** A fresh random secret (feed token, id) as base64url text, `bytes` of entropy. */
export function randomToken(bytes: number = TOKEN_BYTES): string {
  return randomBytes(bytes).toString('base64url');
}

/** SHA-256 of a token as lowercase hex: what we store instead of the token itself. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * HMAC-SHA256 of `value` under `key` for one `purpose`, as lowercase hex: lets equal secrets be recognised
 * without storing them, and, unlike a plain hash, cannot be checked against guesses without the key. The
 * purpose keeps digests made for one use from matching those of another.
 */
export function keyedDigest(key: Buffer, purpose: string, value: string): string {
  return createHmac('sha256', key).update(purpose, 'utf8').update('\0').update(value, 'utf8').digest('hex');
}

/**
 * Compares two secrets without leaking, through timing, where they differ or how long the expected one is.
 * Both sides are hashed first because timingSafeEqual needs equal lengths and would otherwise throw (and
 * an early length check would leak the length).
 */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a, 'utf8').digest();
  const right = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(left, right);
}
