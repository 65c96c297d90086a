import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { desiredEvents, fieldsHash, ownedFields } from '../../src/push/desired-events.ts';
import { eventIdFor } from '../../src/push/event-id.ts';
import type { Occurrence } from '../../src/timetable/types.ts';

function occurrence(overrides: Partial<Occurrence> = {}): Occurrence {
  return {
    uid: '4711-2025-10-01',
    entryId: 4711,
    date: '2025-10-01',
    beginTime: '09:00',
    endTime: '10:35',
    timezone: 'Europe/Moscow',
    startUtc: Date.UTC(2025, 9, 1, 6),
    endUtc: Date.UTC(2025, 9, 1, 7, 35),
    summary: 'Математика (лекция)',
    location: 'ауд. 101',
    description: 'Иванов И. И.',
    categories: ['лекция'],
    status: 'CONFIRMED',
    hash: 'occurrence-hash',
    sequence: 0,
    ...overrides,
  };
}

describe('ownedFields', () => {
  it('carries the text and local wall-clock start and end in the timetable zone, without an offset', () => {
    expect(ownedFields(occurrence())).toEqual({
      summary: 'Математика (лекция)',
      location: 'ауд. 101',
      description: 'Иванов И. И.',
      start: { dateTime: '2025-10-01T09:00:00', timeZone: 'Europe/Moscow' },
      end: { dateTime: '2025-10-01T10:35:00', timeZone: 'Europe/Moscow' },
    });
  });
});

describe('fieldsHash', () => {
  it('is 22 base64url characters and the same for the same fields', () => {
    const hash = fieldsHash(ownedFields(occurrence()));
    expect(hash).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(fieldsHash(ownedFields(occurrence({ sequence: 3, hash: 'other', categories: [] })))).toBe(hash);
  });

  it('changes with every owned field', () => {
    const base = fieldsHash(ownedFields(occurrence()));
    const changes: Partial<Occurrence>[] = [
      { summary: 'Физика' },
      { location: 'ауд. 102' },
      { description: '' },
      { beginTime: '09:05' },
      { endTime: '10:40' },
      { date: '2025-10-02' },
      { timezone: 'Europe/Berlin' },
    ];
    for (const change of changes) expect(fieldsHash(ownedFields(occurrence(change)))).not.toBe(base);
  });

  it('does not confuse text moved from one field to the next', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (a, b, c) => {
        fc.pre(c !== '');
        expect(fieldsHash(ownedFields(occurrence({ summary: a + c, location: b })))).not.toBe(
          fieldsHash(ownedFields(occurrence({ summary: a, location: c + b }))),
        );
      }),
    );
  });
});

describe('desiredEvents', () => {
  const cancelled = occurrence({ uid: '4711-2025-10-08', date: '2025-10-08', status: 'CANCELLED' });

  it('without a cancelled-title prefix keeps confirmed occurrences only, ids from uids, digests of their fields', () => {
    const events = desiredEvents([occurrence(), cancelled, occurrence({ uid: '4712-2025-10-01' })], '');
    expect(events.map((event) => event.id)).toEqual([eventIdFor('4711-2025-10-01'), eventIdFor('4712-2025-10-01')]);
    expect(events[0]?.hash).toBe(fieldsHash(ownedFields(occurrence())));
    expect(events[0]?.fields).toEqual(ownedFields(occurrence()));
  });

  it('with a prefix keeps a cancelled occurrence, titled with the prefix once, under another digest', () => {
    const events = desiredEvents([occurrence(), cancelled], 'Отменено: ');
    expect(events.map((event) => event.id)).toEqual([eventIdFor('4711-2025-10-01'), eventIdFor('4711-2025-10-08')]);
    expect(events[0]?.fields.summary).toBe('Математика (лекция)');
    expect(events[1]?.fields.summary).toBe('Отменено: Математика (лекция)');
    const live = desiredEvents([{ ...cancelled, status: 'CONFIRMED' }], 'Отменено: ')[0];
    expect(events[1]?.hash).not.toBe(live?.hash);
    // Rendering again what was rendered once never doubles the prefix.
    const again = desiredEvents([{ ...cancelled, summary: 'Отменено: Математика (лекция)' }], 'Отменено: ');
    expect(again[0]?.fields.summary).toBe('Отменено: Математика (лекция)');
  });

  it('a uid seen twice gives one event', () => {
    expect(desiredEvents([occurrence(), occurrence({ summary: 'again' })], '')).toHaveLength(1);
  });

  it('with reminders of ours carries the alarm, or the default, and a cancelled class rings for nobody', () => {
    const [alarmed, off] = desiredEvents([occurrence(), cancelled], 'Отменено: ', { alarmMinutes: 15 });
    expect(alarmed?.fields.reminder).toBe(15);
    expect(off?.fields.reminder).toBe('none');
    expect(desiredEvents([cancelled], 'Отменено: ', {})[0]?.fields.reminder).toBe('none');
    expect(desiredEvents([occurrence()], '', {})[0]?.fields.reminder).toBe('default');
    expect(desiredEvents([occurrence()], '')[0]?.fields).not.toHaveProperty('reminder');
  });

  it('keeps the digest of today without an alarm, options or not, and changes it with the alarm', () => {
    // The digest pushed before targets followed options: a fixed value, so that no upgrade re-pushes.
    const before = 'h4AOQW4svCbLVsem4g21qg';
    expect(desiredEvents([occurrence()], '')[0]?.hash).toBe(before);
    expect(desiredEvents([occurrence()], '', {})[0]?.hash).toBe(before);
    const fifteen = desiredEvents([occurrence()], '', { alarmMinutes: 15 })[0]?.hash;
    const thirty = desiredEvents([occurrence()], '', { alarmMinutes: 30 })[0]?.hash;
    expect(new Set([before, fifteen, thirty]).size).toBe(3);
  });

  it('gives a cancelled class of a target with options another digest, so that its reminder is cleared once', () => {
    const old = desiredEvents([cancelled], 'Отменено: ')[0]?.hash;
    const ours = desiredEvents([cancelled], 'Отменено: ', {})[0]?.hash;
    expect(desiredEvents([cancelled], 'Отменено: ', { alarmMinutes: 15 })[0]?.hash).toBe(ours);
    expect(ours).not.toBe(old);
  });
});
