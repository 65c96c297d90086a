import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EVENT_ID_LENGTH, eventIdFor } from '../../src/push/event-id.ts';

/** An independent base32hex: BigInt's radix-32 digits are exactly base32hex (0-9a-v); 256 bits pad to 260. */
function oracle(uid: string): string {
  const digest = BigInt(`0x${createHash('sha256').update(`timetable-sync:${uid}`).digest('hex')}`);
  return (digest << 4n).toString(32).padStart(52, '0');
}

describe('eventIdFor', () => {
  it('answers 52 base32hex characters, which Google accepts as an event id', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), (uid) => {
        const id = eventIdFor(uid);
        expect(id).toHaveLength(EVENT_ID_LENGTH);
        expect(id).toMatch(/^[0-9a-v]{5,1024}$/);
      }),
      { numRuns: 500 },
    );
  });

  it('is base32hex of SHA-256("timetable-sync:" + uid), most significant bits first', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (uid) => {
        expect(eventIdFor(uid)).toBe(oracle(uid));
      }),
      { numRuns: 500 },
    );
    expect(eventIdFor('123-2025-10-01')).toBe(oracle('123-2025-10-01'));
  });

  it('is deterministic and tells different uids apart', () => {
    expect(eventIdFor('4711-2025-10-01')).toBe(eventIdFor('4711-2025-10-01'));
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ maxLength: 20 }), { minLength: 2, maxLength: 200 }), (uids) => {
        expect(new Set(uids.map(eventIdFor)).size).toBe(uids.length);
      }),
      { numRuns: 100 },
    );
  });
});
