import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RefreshReason } from '../../src/jobs/contract.ts';
import { enqueueRefresh, REFRESH_PRIORITY, type RefreshRequest } from '../../src/jobs/queues.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { eventually, waitUntil } from '../../testkit/poll.ts';
import { type HeldWorker, holdingWorker } from '../admin/admin-app.ts';
import { testContext } from '../support/service.ts';

const SOURCE = 'group:7';

describe('follow-up refreshes queued behind a running one', () => {
  let ctx: ServiceContext;
  let close: () => Promise<void>;
  let worker: HeldWorker | undefined;

  beforeEach(async () => {
    ({ context: ctx, close } = await testContext());
  });

  afterEach(async () => {
    await worker?.close();
    worker = undefined;
    await close();
  });

  const ask = (reason: RefreshReason, extra: Partial<RefreshRequest> = {}) =>
    enqueueRefresh(ctx.queues, ctx.config, SOURCE, { reason, now: Date.now(), followUp: true, ...extra });
  // How term starts ask for a re-render (src/jobs/term-starts.ts): a stable id per version of the counts.
  const rerender = () => ask('rerender', { jobId: 'group-7-rerender-3' });

  /** A refresh of the source that runs until the test releases it. */
  async function running(): Promise<string> {
    const id = await enqueueRefresh(ctx.queues, ctx.config, SOURCE, { reason: 'schedule', now: Date.now() });
    worker = holdingWorker(ctx);
    await waitUntil(async () => (await ctx.queues.refresh.getJobState(id)) === 'active', 'the refresh to run');
    return id;
  }

  /** Lets the running refresh end; resolves to the follow-up job BullMQ queued behind it. */
  async function followUpAfterRelease(id: string) {
    worker?.release();
    return eventually(() => ctx.queues.refresh.getJob(id), `the follow-up ${id} to be queued`);
  }

  it("keeps an admin's resync when a re-render is asked for after it", async () => {
    await running();
    const resync = await ask('resync');
    expect(await rerender()).toBe(resync);
    const job = await followUpAfterRelease(resync);
    // Before the merge, BullMQ kept the last caller's: a re-render (no fetch) at background priority.
    expect(job.data.reason).toBe('resync');
    expect(job.priority).toBe(REFRESH_PRIORITY.resync);
  });

  it("keeps a re-sign-up's fetch with the new credential when a re-render is asked for after it", async () => {
    await running();
    const signUp = await ask('subscription');
    expect(await rerender()).toBe(signUp);
    const job = await followUpAfterRelease(signUp);
    expect(job.data.reason).toBe('subscription');
    expect(job.priority).toBe(REFRESH_PRIORITY.subscription);
  });

  it('lets a later resync take over a re-render and lends the most urgent priority', async () => {
    await running();
    const first = await rerender();
    expect(await ask('subscription')).toBe(first);
    expect(await ask('resync')).toBe(first);
    expect(await ask('rerender')).toBe(first);
    const job = await followUpAfterRelease(first);
    expect(job.data.reason).toBe('resync');
    expect(job.priority).toBe(REFRESH_PRIORITY.resync);
  });

  it('reaches the same merge whatever order concurrent callers arrive in', async () => {
    await running();
    const ids = await Promise.all([rerender(), ask('resync'), rerender(), ask('subscription'), rerender()]);
    expect(new Set(ids).size).toBe(1);
    const job = await followUpAfterRelease(ids[0] as string);
    expect(job.data.reason).toBe('resync');
    expect(job.priority).toBe(REFRESH_PRIORITY.resync);
  });

  it('never pulls a confirming re-fetch forward: the merge keeps its delay', async () => {
    await running();
    const confirm = await ask('confirm', { delayMs: 60_000 });
    expect(await ask('resync')).toBe(confirm);
    const job = await followUpAfterRelease(confirm);
    expect(job.data.reason).toBe('resync');
    expect(job.priority).toBe(REFRESH_PRIORITY.resync);
    expect(job.opts.delay).toBe(60_000);
    expect(await job.getState()).toBe('delayed');
  });
});
