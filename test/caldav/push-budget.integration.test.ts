/**
 * A push job's budget of time over all its requests: a server answering every PUT slowly, each well within the
 * request's deadline, no longer holds a worker's slot for as long as the push would take. The job stops at its
 * budget, fails for now (transient), its host rests, and a later attempt finishes what is left. Real workers,
 * Redis, client and Radicale behind the fault proxy; small settings.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueuePush } from '../../src/jobs/queues.ts';
import { until } from '../../testkit/poll.ts';
import { CalDavHarness } from './caldav-harness.ts';

let h: CalDavHarness;

beforeAll(async () => {
  h = await CalDavHarness.start({ CALDAV_PUSH_JOB_TIMEOUT: '1s', CALDAV_REQUEST_TIMEOUT: '2s' });
});
afterAll(async () => {
  await h?.close();
});

describe('the budget of a CalDAV push job', () => {
  it('stops a push slowed to 0.6 s per PUT at 1 s, cools the host, and a later attempt completes it', async () => {
    const source = await h.smallGroup(3);
    const { target } = await h.connect(source);
    // Every resource changes: the next push writes them all, at 0.6 s a PUT (4 in flight): many seconds.
    for (const entry of await h.entries(source)) await h.patchEntry(entry.id, { num_auditorium_schedule: '404' });
    await h.refresh(source);
    const host = new URL(target.calendarUrl).host;
    h.proxy.configure({ putDelayMs: 600 });
    const started = Date.now();
    const jobId = await enqueuePush(h.ctx.queues, 'caldav', target.id, source, 'connect');
    const queue = h.ctx.queues.pushQueue('caldav');
    const first = await until(
      async () => (await queue.getJob(jobId))?.attemptsMade ?? 0,
      (made) => made >= 1,
      10_000,
    );
    expect(first).toBeGreaterThanOrEqual(1);
    // Without the budget the first attempt ran until every PUT was done (about 0.6 s × resources / 4).
    expect(Date.now() - started).toBeLessThan(3_000);
    const job = await queue.getJob(jobId);
    expect(`${job?.failedReason} ${(job?.stacktrace ?? []).join(' ')}`).toMatch(/took longer than 1000 ms/);
    expect(await h.ctx.caldav.budget.coolDownLeft(host)).toBeGreaterThan(0);

    h.proxy.configure({ putDelayMs: 0 });
    const push = await h.waitForPush(jobId, 60_000);
    expect(push).toMatchObject({ state: 'completed' });
    expect(push.attemptsMade).toBeGreaterThanOrEqual(1);
    expect(await h.held(target)).toEqual(await h.expected(source));
  }, 90_000);
});
