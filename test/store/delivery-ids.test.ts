/**
 * Delivery ids and the keys derived from them, pinned byte for byte: Telegram's predate the other channels, and a
 * delivery in flight (its lease, its outcome), a set held for the morning and a queued job's id must be the same
 * after an upgrade, or a chat would be told twice (or a held set never told). Other channels get ids of their own.
 */
import { describe, expect, it } from 'vitest';
import { DELIVERY_PREFIX } from '../../src/notify/channel.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { deliveryHash, deliveryId, heldDeliveryId } from '../../src/store/notify-outbox.ts';

const ref = { source: 'group:4242', stamp: 1_900_000_000_000 };

describe("Telegram's delivery ids", () => {
  it('are what earlier releases wrote', () => {
    expect(DELIVERY_PREFIX.telegram).toBe('tg');
    const id = deliveryId(DELIVERY_PREFIX.telegram, '123456789', ref);
    expect(id).toBe('tg:123456789:group:4242:1900000000000');
    expect(deliveryHash(id)).toBe('yOXw42Ti2I3WZiQmvKEPKT');
    const held = heldDeliveryId(DELIVERY_PREFIX.telegram, '123456789', 'group:4242');
    expect(held).toBe('tg:123456789:group:4242:held');
    expect(deliveryHash(held)).toBe('uK4JtjckWlhT_Y79O_TKyP');
  });

  it('name the same Redis keys and pace as before', () => {
    const keys = redisKeys('tts');
    expect(keys.notifyDelivery(deliveryHash('tg:123456789:group:4242:1900000000000'))).toBe(
      'tts:notify:dlv:yOXw42Ti2I3WZiQmvKEPKT',
    );
    expect(keys.notifyHeld(deliveryHash('tg:123456789:group:4242:held'))).toBe(
      'tts:notify:held:uK4JtjckWlhT_Y79O_TKyP',
    );
    // The change messages' pace is the one the bot's replies take.
    expect(keys.channelPace(DELIVERY_PREFIX.telegram, '123456789')).toBe(keys.tgPace('123456789'));
    expect(keys.tgPace('123456789')).toBe('tts:tg:pace:123456789');
  });
});

describe("other channels' delivery ids", () => {
  it('are their own, so that one address number on two channels is two deliveries', () => {
    const ids = Object.values(DELIVERY_PREFIX).map((prefix) => deliveryId(prefix, '42', ref));
    expect(ids).toEqual([
      'tg:42:group:4242:1900000000000',
      'mx:42:group:4242:1900000000000',
      'em:42:group:4242:1900000000000',
    ]);
    expect(new Set(ids.map(deliveryHash)).size).toBe(3);
    expect(heldDeliveryId(DELIVERY_PREFIX.max, '42', 'group:4242')).toBe('mx:42:group:4242:held');
    expect(redisKeys('tts').channelPace(DELIVERY_PREFIX.max, '42')).toBe('tts:mx:pace:42');
  });
});
