/**
 * Deleting a personal timetable forgets everybody told of its changes, on every channel: a mailbox that followed
 * only it is deleted with its sealed address (no mail with an unsubscribe link would ever come again), one that
 * follows other timetables too only leaves it, and Telegram chats and MAX dialogs no longer follow it. A sign-up
 * for it still waiting for its confirmation can no longer be confirmed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { MaxChats } from '../../src/store/max-chats.ts';
import { confirmEmailSubscription } from '../../src/subscriptions/email-sign-up.ts';
import { deleteSubscription } from '../../src/subscriptions/personal.ts';
import { testContext } from '../support/service.ts';

let ctx: ServiceContext;
let closeContext: () => Promise<void>;

beforeAll(async () => {
  const opened = await testContext();
  ctx = opened.context;
  closeContext = opened.close;
});

afterAll(async () => {
  await closeContext?.();
});

/** Every key of the test's prefix under `pattern` (`mail:box:*`). */
async function keysOf(pattern: string): Promise<string[]> {
  return (await ctx.redis.keys(`${ctx.config.redisPrefix}:${pattern}`)).sort();
}

/** Signs `address` up for `source` and confirms it; resolves to its mailbox id. */
async function mailbox(address: string, source: string): Promise<string> {
  const pending = await ctx.mailboxes.createPending({ address, source, options: {}, digest: false, now: Date.now() });
  const confirmed = await ctx.mailboxes.confirm(pending, Date.now());
  if (confirmed.kind !== 'added') throw new Error(`not added: ${confirmed.kind}`);
  return confirmed.mailboxId;
}

describe('deleting a personal timetable', () => {
  it('unsubscribes every mailbox, chat and dialog from it, deleting a mailbox left with nothing', async () => {
    const { subscription } = await ctx.subscriptions.create({
      credential: 'student-7:secret',
      name: 'Сидоров С. С.',
      upstreamUserId: 9007,
      now: Date.now(),
    });
    const personal = subscription.source;
    const only = await mailbox('only.personal@example.edu', personal);
    const both = await mailbox('both@example.edu', personal);
    expect(await mailbox('both@example.edu', 'group:4242')).toBe(both);
    await ctx.notify.chats.subscribe({ chatId: '7001', source: personal, options: {} });
    await ctx.notify.chats.subscribe({ chatId: '7002', source: personal, options: {} });
    await ctx.notify.chats.subscribe({ chatId: '7002', source: 'group:4242', options: {} });
    const max = new MaxChats(ctx.redis, ctx.keys);
    await max.subscribe({ chatId: '-72000001', source: personal, options: {} });
    // Waiting for its confirmation when the timetable goes.
    const waiting = await ctx.mailboxes.createPending({
      address: 'late@example.edu',
      source: personal,
      options: {},
      digest: false,
      now: Date.now(),
    });
    const onlyHash = ctx.mailboxes.addressHash('only.personal@example.edu');
    expect(await ctx.redis.exists(ctx.keys.mailbox(only), ctx.keys.mailboxOfAddress(onlyHash))).toBe(2);

    await deleteSubscription(ctx, subscription);

    // The mailbox that followed only it: nothing of it is left.
    expect(await keysOf(`mail:box:${only}*`)).toEqual([]);
    expect(await ctx.redis.exists(ctx.keys.mailboxOfAddress(onlyHash))).toBe(0);
    expect(await ctx.mailboxes.addressOf(only)).toBeUndefined();
    // The one that follows a group too keeps it, and its address.
    expect(await ctx.mailboxes.subscriptionsOf(both)).toEqual([{ source: 'group:4242', options: {}, digest: false }]);
    expect(await ctx.mailboxes.addressOf(both)).toBe('both@example.edu');
    expect(await ctx.mailboxes.hasAny(personal)).toBe(false);
    // Chats and dialogs.
    expect(await ctx.notify.chats.follows('7001', personal)).toBe(false);
    expect(await ctx.notify.chats.ofChat('7001')).toEqual([]);
    expect(await ctx.notify.chats.ofChat('7002')).toEqual([{ source: 'group:4242', options: {} }]);
    expect(await max.follows('-72000001', personal)).toBe(false);
    expect(await max.ofChat('-72000001')).toEqual([]);
    for (const pattern of [
      `mail:source-boxes:${personal}`,
      `tg:source-chats:${personal}`,
      `mx:source-chats:${personal}`,
    ])
      expect(await keysOf(pattern)).toEqual([]);

    // The late confirmation finds nothing to subscribe to, and forgets the sign-up with its address.
    const outcome = await confirmEmailSubscription(ctx, ctx.mailboxes.confirmToken(waiting));
    expect(outcome).toEqual({ kind: 'expired' });
    expect(await ctx.mailboxes.pending(waiting)).toBeUndefined();
    expect(await keysOf('mail:address:*')).toEqual([
      `${ctx.config.redisPrefix}:mail:address:${ctx.mailboxes.addressHash('both@example.edu')}`,
    ]);
    expect(await ctx.registry.isActive(personal)).toBe(false);
  });
});
