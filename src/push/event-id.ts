/**
 * Event ids derived from occurrence UIDs (pure): the same class always gets the same id, in every calendar kind
 * (a Google event id; a CalDAV resource's name after its prefix).
 */
import { createHash } from 'node:crypto';

/** The id alphabet: base32hex, lowercase (RFC 4648 §7), which Google's event ids require. */
export const EVENT_ID_ALPHABET = '0123456789abcdefghijklmnopqrstuv';

/** Length of every id {@link eventIdFor} answers: 256 bits in 5-bit digits, no padding. */
export const EVENT_ID_LENGTH = 52;

/**
 * The event id of an occurrence: base32hex of SHA-256(`timetable-sync:` + uid). Deterministic, so a
 * retried or repeated insert meets its own earlier event (409) instead of creating a duplicate; the prefix
 * keeps our ids apart from other tools hashing the same UIDs.
 */
export function eventIdFor(uid: string): string {
  return base32hex(createHash('sha256').update(`timetable-sync:${uid}`).digest());
}

/** Base32hex without padding, most significant bits first. */
function base32hex(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = ((buffer << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += EVENT_ID_ALPHABET[(buffer >> bits) & 31];
    }
  }
  if (bits > 0) out += EVENT_ID_ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}
