import { describe, expect, it } from 'vitest';
import type { RemoteEvent } from '../../src/google/calendar-client.ts';
import { markerFor } from '../../src/google/event-marker.ts';
import { indexFromRemote } from '../../src/google/remote-index.ts';
import type { DesiredEvent } from '../../src/push/desired-events.ts';
import { CANCELLED, diffPush } from '../../src/push/push-diff.ts';

const FIELDS = {
  summary: 's',
  location: '',
  description: '',
  start: { dateTime: '2025-10-01T09:00:00', timeZone: 'UTC' },
  end: { dateTime: '2025-10-01T10:00:00', timeZone: 'UTC' },
};
const event = (id: string, hash: string): DesiredEvent => ({ id, hash, fields: FIELDS });
/** The planning clock (epoch ms). */
const NOW = 1_760_000_000_000;

describe('indexFromRemote', () => {
  const marker = markerFor('group:1');
  it('keeps our live events (an empty digest when one lacks it) and our deleted ones as cancelled, and drops foreign ones', () => {
    const remote: RemoteEvent[] = [
      { id: 'a1', cancelled: false, markerValue: 'group:1', hash: 'h1' },
      { id: 'a2', cancelled: false, markerValue: 'group:1' },
      { id: 'a3', cancelled: true, markerValue: 'group:1', hash: 'h3' },
      { id: 'a4', cancelled: false, markerValue: 'group:2', hash: 'h4' },
      { id: 'a5', cancelled: false, hash: 'h5' },
    ];
    expect([...indexFromRemote(remote, marker)]).toEqual([
      ['a1', 'h1'],
      ['a2', ''],
      ['a3', CANCELLED],
    ]);
  });

  it('an event of ours without a digest is patched by the next plan', () => {
    const index = indexFromRemote([{ id: 'a2', cancelled: false, markerValue: 'group:1' }], marker);
    expect(diffPush([event('a2', 'h2')], index, NOW).patch.map((item) => item.id)).toEqual(['a2']);
  });
});
