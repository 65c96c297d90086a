/**
 * The notify outbox on a real Redis: a change set is stored by the publication's own transaction (with it or
 * not at all), listed until its fan-out takes it out; a delivery is leased to one owner at a time and, once
 * done, never claimed again.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { deliveryHash, deliveryId, NotifyOutbox } from '../../src/store/notify-outbox.ts';
import type { ChangeSet } from '../../src/timetable/notify-change.ts';
import { testContext } from '../support/service.ts';

let ctx: ServiceContext;
let close: () => Promise<void>;
let outbox: NotifyOutbox;

beforeAll(async () => {
  ({ context: ctx, close } = await testContext());
  outbox = new NotifyOutbox(ctx.redis, ctx.keys);
});
afterAll(async () => close?.());

function changeSet(source: string, stamp: number): ChangeSet {
  const side = {
    date: '2025-10-20',
    begin: '10:10',
    end: '11:40',
    startUtc: stamp + 86_400_000,
    summary: 'Физика (практика)',
    location: 'ауд. 1008',
    teacher: 'Иванов Иван Иванович',
  };
  return {
    source,
    name: 'ИВТ-21',
    stamp,
    items: [
      {
        kind: 'moved',
        uid: '101-20251020@timetable-sync',
        before: side,
        after: { ...side, location: 'ауд. 2207' },
        startsAt: side.startUtc,
        lessonKind: 'практика',
        note: '',
      },
    ],
    omitted: 0,
  };
}

describe('the outbox', () => {
  it('is written with the publication, in its transaction, or not at all', async () => {
    const set = changeSet('group:1', 1_000);
    const multi = ctx.redis.multi();
    ctx.snapshots.writePublished(multi, 'group:1', {
      stamp: 1_000,
      snapshotHash: 'a',
      settingsHash: 'b',
      occurrences: {},
      tombstones: [],
    });
    outbox.write(multi, set);
    expect(await outbox.load({ source: 'group:1', stamp: 1_000 })).toBeUndefined();
    await multi.exec();
    expect(await outbox.load({ source: 'group:1', stamp: 1_000 })).toEqual(set);
    expect(await ctx.redis.ttl(ctx.keys.notifyOutboxItem('group:1', 1_000))).toBeGreaterThan(2 * 86_400);

    // A process that dies before EXEC published nothing and left nothing to tell.
    const abandoned = ctx.redis.multi();
    abandoned.set(ctx.keys.published('group:2'), 'x');
    outbox.write(abandoned, changeSet('group:2', 2_000));
    abandoned.discard();
    expect(await outbox.load({ source: 'group:2', stamp: 2_000 })).toBeUndefined();
    expect(await ctx.redis.exists(ctx.keys.published('group:2'))).toBe(0);
    expect(await outbox.due(Number.POSITIVE_INFINITY, 10)).toEqual([{ source: 'group:1', stamp: 1_000 }]);
  });

  it('lists change sets by age until they are done', async () => {
    const multi = ctx.redis.multi();
    outbox.write(multi, changeSet('group:3', 5_000));
    outbox.write(multi, changeSet('employee:7', 6_000));
    await multi.exec();
    expect(await outbox.due(5_500, 10)).toEqual([
      { source: 'group:1', stamp: 1_000 },
      { source: 'group:3', stamp: 5_000 },
    ]);
    expect(await outbox.due(Number.POSITIVE_INFINITY, 10)).toContainEqual({ source: 'employee:7', stamp: 6_000 });
    await outbox.done({ source: 'group:3', stamp: 5_000 });
    expect(await outbox.load({ source: 'group:3', stamp: 5_000 })).toBeUndefined();
    expect(await outbox.due(Number.POSITIVE_INFINITY, 10)).not.toContainEqual({ source: 'group:3', stamp: 5_000 });
  });
});

describe('deliveries', () => {
  const id = deliveryId('tg', '12345', { source: 'group:1', stamp: 1_000 });

  it('are named without colons, the same way every time', () => {
    expect(id).toBe('tg:12345:group:1:1000');
    expect(deliveryHash(id)).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(deliveryHash(id)).toBe(deliveryHash('tg:12345:group:1:1000'));
  });

  it('are leased to one owner at a time, and told once', async () => {
    expect(await outbox.claim(id, 'job-a', 60_000)).toBe('claimed');
    expect(await outbox.claim(id, 'job-b', 60_000)).toBe('busy');
    // The owner itself may claim again (a retry of the same job).
    expect(await outbox.claim(id, 'job-a', 60_000)).toBe('claimed');
    expect(await outbox.state(id)).toBe('leased');
    await outbox.markDone(id, 'job-a', 'sent');
    expect(await outbox.claim(id, 'job-b', 60_000)).toBe('sent');
    expect(await outbox.claim(id, 'job-a', 60_000)).toBe('sent');
    expect(await ctx.redis.ttl(ctx.keys.notifyDelivery(deliveryHash(id)))).toBeGreaterThan(2 * 86_400);
  });

  it('go to another owner once a lease expires, or is released', async () => {
    const other = deliveryId('tg', '777', { source: 'group:1', stamp: 1_000 });
    expect(await outbox.claim(other, 'dead-worker', 150)).toBe('claimed');
    expect(await outbox.claim(other, 'job-b', 60_000)).toBe('busy');
    await sleep(400);
    expect(await outbox.claim(other, 'job-b', 60_000)).toBe('claimed');
    // Only the owner releases its lease.
    expect(await outbox.release(other, 'job-c')).toBe(false);
    expect(await outbox.release(other, 'job-b')).toBe(true);
    expect(await outbox.state(other)).toBeUndefined();
    expect(await outbox.claim(other, 'job-c', 60_000)).toBe('claimed');
    await outbox.markDone(other, 'job-c', 'dropped');
    expect(await outbox.release(other, 'job-c')).toBe(false);
    expect(await outbox.state(other)).toBe('dropped');
    expect(await outbox.claim(other, 'job-d', 60_000)).toBe('sent');
  });
});
