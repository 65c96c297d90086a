/** Quiet hours: held messages wait for the morning in the university's zone, unless a class comes first. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { deliverAt, heldUntil, MORNING_SPREAD_MS, minuteOfClock, quietUntil } from '../../src/notify/quiet-hours.ts';

const ZONE = 'Europe/Moscow';
const msk = (local: string) => Date.parse(`${local}+03:00`);
const NIGHT = { fromMinute: 23 * 60, toMinute: 7 * 60 };

describe('deliverAt', () => {
  it('sends at once outside the quiet hours, and with none', () => {
    const now = msk('2025-10-15T12:00');
    expect(deliverAt([{ startsAt: msk('2025-10-20T10:10') }], now, NIGHT, ZONE)).toBe(now);
    expect(deliverAt([], msk('2025-10-15T23:30'), undefined, ZONE)).toBe(msk('2025-10-15T23:30'));
  });

  it('holds a message until 07:00 local, before and after midnight', () => {
    const item = [{ startsAt: msk('2025-10-20T10:10') }];
    expect(deliverAt(item, msk('2025-10-15T23:00'), NIGHT, ZONE)).toBe(msk('2025-10-16T07:00'));
    expect(deliverAt(item, msk('2025-10-16T03:15'), NIGHT, ZONE)).toBe(msk('2025-10-16T07:00'));
    expect(deliverAt(item, msk('2025-10-16T07:00'), NIGHT, ZONE)).toBe(msk('2025-10-16T07:00'));
  });

  it('sends at once when a class it tells of starts before the morning', () => {
    const now = msk('2025-10-16T01:00');
    const items = [{ startsAt: msk('2025-10-20T10:10') }, { startsAt: msk('2025-10-16T06:30') }];
    expect(deliverAt(items, now, NIGHT, ZONE)).toBe(now);
  });

  it('spreads held messages over a few minutes, the same for one chat every time', () => {
    const now = msk('2025-10-16T01:00');
    const item = [{ startsAt: msk('2025-10-20T10:10') }];
    const times = ['1', '2', '3', '4', '5'].map((chat) => deliverAt(item, now, NIGHT, ZONE, chat));
    for (const time of times) {
      expect(time).toBeGreaterThanOrEqual(msk('2025-10-16T07:00'));
      expect(time).toBeLessThan(msk('2025-10-16T07:00') + MORNING_SPREAD_MS);
    }
    expect(new Set(times).size).toBeGreaterThan(1);
    expect(deliverAt(item, now, NIGHT, ZONE, '3')).toBe(times[2]);
  });

  it('reads daytime windows and the zone', () => {
    const lunch = { fromMinute: 13 * 60, toMinute: 14 * 60 + 30 };
    expect(quietUntil(msk('2025-10-15T13:10'), lunch, ZONE)).toBe(msk('2025-10-15T14:30'));
    expect(quietUntil(msk('2025-10-15T14:30'), lunch, ZONE)).toBeUndefined();
    // 23:30 in Yekaterinburg (UTC+5) is 21:30 in Moscow.
    expect(quietUntil(msk('2025-10-15T21:30'), NIGHT, 'Asia/Yekaterinburg')).toBe(msk('2025-10-16T05:00'));
  });
});

describe('NOTIFY_QUIET_HOURS', () => {
  it('defaults to 23-07 and reads minutes and off', () => {
    expect(loadConfig({}).notifyQuietHours).toEqual(NIGHT);
    expect(loadConfig({ NOTIFY_QUIET_HOURS: '22:30-08:15' }).notifyQuietHours).toEqual({
      fromMinute: 22 * 60 + 30,
      toMinute: 8 * 60 + 15,
    });
    expect(loadConfig({ NOTIFY_QUIET_HOURS: 'off' }).notifyQuietHours).toBeUndefined();
  });

  it.each(['24-07', '23', '7-7', 'night'])('refuses %j', (value) => {
    expect(() => loadConfig({ NOTIFY_QUIET_HOURS: value })).toThrow(/NOTIFY_QUIET_HOURS: must be off or two/);
  });
});

describe('the daily digest', () => {
  const SEVEN_PM = 19 * 60;
  const item = [{ startsAt: msk('2025-10-20T10:10') }];

  it('holds a digest subscriber until the next digest time, today or tomorrow', () => {
    expect(deliverAt(item, msk('2025-10-16T10:00'), NIGHT, ZONE, undefined, SEVEN_PM)).toBe(msk('2025-10-16T19:00'));
    expect(deliverAt(item, msk('2025-10-16T19:00'), NIGHT, ZONE, undefined, SEVEN_PM)).toBe(msk('2025-10-17T19:00'));
    expect(deliverAt(item, msk('2025-10-16T21:30'), NIGHT, ZONE, undefined, SEVEN_PM)).toBe(msk('2025-10-17T19:00'));
    // In the quiet hours too: the digest, not the morning.
    expect(deliverAt(item, msk('2025-10-16T02:00'), NIGHT, ZONE, undefined, SEVEN_PM)).toBe(msk('2025-10-16T19:00'));
  });

  it('sends at once a change to a class that starts before the digest', () => {
    const now = msk('2025-10-16T10:00');
    expect(deliverAt([{ startsAt: msk('2025-10-16T14:00') }], now, NIGHT, ZONE, 'box', SEVEN_PM)).toBe(now);
  });

  it('keeps the quiet hours for a change that cannot wait for the digest', () => {
    // 02:00, a class at 10:00: before the digest, so not held for it; but not mailed in the night either.
    const night = msk('2025-10-16T02:00');
    const class10 = [{ startsAt: msk('2025-10-16T10:00') }];
    expect(deliverAt(class10, night, NIGHT, ZONE, undefined, SEVEN_PM)).toBe(msk('2025-10-16T07:00'));
    // The same as a subscriber of a mail per change, spread included.
    expect(deliverAt(class10, night, NIGHT, ZONE, 'box', SEVEN_PM)).toBe(deliverAt(class10, night, NIGHT, ZONE, 'box'));
    // A class before the quiet hours end still goes at once.
    expect(deliverAt([{ startsAt: msk('2025-10-16T06:30') }], night, NIGHT, ZONE, 'box', SEVEN_PM)).toBe(night);
    // Without quiet hours, at once.
    expect(deliverAt(class10, night, undefined, ZONE, 'box', SEVEN_PM)).toBe(night);
  });

  it('puts a digest time inside the quiet hours off to their end', () => {
    expect(heldUntil(msk('2025-10-16T10:00'), NIGHT, ZONE, 3 * 60)).toBe(msk('2025-10-17T07:00'));
    expect(heldUntil(msk('2025-10-16T10:00'), undefined, ZONE, 3 * 60)).toBe(msk('2025-10-17T03:00'));
  });

  it('reads MAIL_DIGEST_TIME as a minute of the day', () => {
    expect(minuteOfClock('19:00')).toBe(SEVEN_PM);
    expect(minuteOfClock('07:30')).toBe(450);
    expect(minuteOfClock('24:00')).toBeUndefined();
  });
});
