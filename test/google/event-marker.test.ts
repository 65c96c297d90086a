import { describe, expect, it } from 'vitest';
import { HASH_KEY, MARKER_KEY, markerFor } from '../../src/google/event-marker.ts';

describe('markerFor', () => {
  it('marks events with the source key under our private property', () => {
    expect(markerFor('group:4242')).toEqual({ key: 'timetableSync', value: 'group:4242' });
    expect([MARKER_KEY, HASH_KEY]).toEqual(['timetableSync', 'timetableSyncHash']);
  });
});
