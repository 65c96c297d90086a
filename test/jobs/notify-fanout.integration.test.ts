/**
 * From a refresh to send jobs, on a real Redis with the simulator: a change publishes one change set into the
 * outbox with the feed, its fan-out adds one send job per subscriber that its options keep, under ids derived
 * from the delivery (so a repeated fan-out adds nothing); a refresh without change writes nothing to tell.
 * The send queues are paused: what is queued is looked at, not sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RefreshJobResult, TELEGRAM_JOB, type TelegramSendJobData } from '../../src/jobs/contract.ts';
import { fanOutChangeSet, sweepOutbox } from '../../src/jobs/notify-fanout.ts';
import { notifyFanoutJobId } from '../../src/jobs/queues.ts';
import { deliveryHash, deliveryId } from '../../src/store/notify-outbox.ts';
import type { TimetableEntry } from '../../src/timetable/types.ts';
import { jobEnded } from '../support/jobs.ts';
import { type Pipeline, startPipeline } from './helpers.ts';

let pipeline: Pipeline;
let source: string;
let lesson: TimetableEntry;

beforeAll(async () => {
  pipeline = await startPipeline({
    TELEGRAM_BOT_TOKEN: '123456:test-token-not-real',
    TELEGRAM_API_ROOT: 'http://127.0.0.1:9',
    NOTIFY_QUIET_HOURS: 'off',
  });
  const { ctx } = pipeline;
  await Promise.all([ctx.queues.notify.pause(), ctx.queues.telegram.pause(), ctx.queues.webhook.pause()]);
  const groups = await pipeline.sim.groups();
  const today = new Date(pipeline.clock.now).toISOString().slice(0, 10);
  for (const group of groups) {
    const { entries } = await ctx.upstream.groupSchedule(group.id);
    // A weekly class still to come this term, with a class in the next week (within NOTIFY_HORIZON).
    const found = entries.find(
      (entry) =>
        entry.startDate <= today && entry.finishDate > '2025-10-20' && entry.weekType === 0 && entry.note === '',
    );
    if (found) {
      source = `group:${group.id}`;
      lesson = found;
      break;
    }
  }
  if (!lesson) throw new Error('no weekly class in the simulated timetables');
});
afterAll(async () => {
  await pipeline?.close();
});

describe('notify fan-out', () => {
  it('writes a change set with the publication and queues one send job per chat, once', async () => {
    const { ctx } = pipeline;
    expect((await pipeline.refresh(source)).state).toBe('completed');
    await ctx.notify.chats.subscribe({ chatId: '1001', source, options: {} });
    await ctx.notify.chats.subscribe({ chatId: '1002', source, options: { excludeKinds: [lesson.kind] } });

    // A refresh of an unchanged timetable tells nothing.
    pipeline.clock.now += 60_000;
    expect(((await pipeline.refresh(source)).result as RefreshJobResult).outcome).toBe('unchanged');
    expect(await ctx.notify.outbox.due(Number.POSITIVE_INFINITY, 10)).toEqual([]);

    await pipeline.sim.raw(`/_sim/entries/${lesson.id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ num_auditorium_schedule: '2207' }),
    });
    pipeline.clock.now += 60_000;
    const stamp = pipeline.clock.now;
    expect(((await pipeline.refresh(source)).result as RefreshJobResult).outcome).toBe('published');

    // One change set, stored with the publication, and its fan-out queued under its own id.
    expect(await ctx.notify.outbox.due(Number.POSITIVE_INFINITY, 10)).toEqual([{ source, stamp }]);
    const set = await ctx.notify.outbox.load({ source, stamp });
    expect(set?.items.length).toBeGreaterThan(0);
    expect(set?.items.every((item) => item.kind === 'moved' && item.after?.location.endsWith('2207'))).toBe(true);
    const fanoutId = notifyFanoutJobId(source, stamp);
    expect((await ctx.queues.notify.getJob(fanoutId))?.data).toEqual({ source, stamp });

    // The sweeper finds it too, and adds no second fan-out.
    expect(await sweepOutbox(ctx, Number.POSITIVE_INFINITY)).toBe(1);
    // (Jobs of a paused queue wait; the delayed one is the sweeper's own next run.)
    expect((await ctx.queues.notify.getJobs(['waiting'])).map((each) => each.id)).toEqual([fanoutId]);

    await ctx.queues.notify.resume();
    const { state } = await jobEnded(ctx.queues.notify, fanoutId, 10_000);
    expect(state).toBe('completed');
    expect(await ctx.notify.outbox.due(Number.POSITIVE_INFINITY, 10)).toEqual([]);

    // Chat 1001 keeps every kind; chat 1002 hides this class's kind and gets nothing.
    const id = deliveryId('tg', '1001', { source, stamp });
    const job = await ctx.queues.telegram.getJob(`tg-${deliveryHash(id)}`);
    expect(job?.data).toMatchObject({
      deliveryId: id,
      chatId: '1001',
      pageUrl: `${ctx.config.publicUrl}/timetables/groups/${source.slice('group:'.length)}`,
    });
    expect(job?.name).toBe(TELEGRAM_JOB.send);
    expect((job?.data as TelegramSendJobData | undefined)?.set.items).toEqual(set?.items);
    const queued = await ctx.queues.telegram.getJobs(['waiting', 'delayed']);
    expect(queued.map((each) => each.data.chatId)).toEqual(['1001']);

    // A fan-out run again (its outbox entry written again, as after a crash before `done`) adds nothing.
    const multi = ctx.redis.multi();
    if (set) ctx.notify.outbox.write(multi, set);
    await multi.exec();
    expect(await fanOutChangeSet(ctx, { source, stamp })).toEqual({ telegram: 1, webhook: 0 });
    expect(await ctx.queues.telegram.getJobs(['waiting', 'delayed'])).toHaveLength(1);
    expect(await ctx.notify.outbox.due(Number.POSITIVE_INFINITY, 10)).toEqual([]);
  });
});
