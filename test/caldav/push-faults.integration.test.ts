/**
 * CalDAV push end to end when things go wrong: 30 % of requests answered 503 before or after Radicale applied
 * them, and a worker process killed with SIGKILL in the middle of a push. Real workers, Redis, client and
 * Radicale; the fault proxy in between. The end state is read from Radicale's own folder.
 */

import type { ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { caldavDetailFields } from '../../src/caldav/caldav-targets.ts';
import { enqueuePush } from '../../src/jobs/queues.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { startWorkerProcess, type WorkerProcess } from '../support/spawn-worker.ts';
import { CalDavHarness, type Connected, caldavEnv, type CalDavHarness as Harness } from './caldav-harness.ts';

let h: Harness;
const children: ChildProcess[] = [];

beforeAll(async () => {
  h = await CalDavHarness.start();
});
afterAll(async () => {
  await h?.close();
});
afterEach(async () => {
  h.proxy.configure({ rate: 0, putDelayMs: 0, retryAfter: undefined });
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await new Promise((done) => child.once('exit', done));
    }
  await h.startWorkers();
});

/** A worker process on the harness's Redis prefix, simulator and CalDAV settings. */
function startWorker(): Promise<WorkerProcess> {
  return startWorkerProcess(
    { REDIS_PREFIX: h.ctx.config.redisPrefix, UNIVERSITY_API_URL: h.simUrl, ...caldavEnv() },
    (child) => children.push(child),
  );
}

/** Successful PUTs Radicale answered so far (201: created or replaced). */
const stored = () => h.proxy.answered.get('PUT 201') ?? 0;

describe('CalDAV push under faults', () => {
  it('30 % of requests answered 503, half before and half after Radicale applied them: exact, no UID twice', async () => {
    const source = await h.smallGroup(2);
    await h.refresh(source);
    h.proxy.configure({ rate: 0.3, when: 'both', retryAfter: '0' });
    const faultsBefore = h.proxy.faults.get('PUT') ?? 0;
    const { target, push } = await h.connect(source);
    expect(push).toMatchObject({ state: 'completed' });
    // held() throws on a UID stored twice in the folder.
    expect(await h.held(target)).toEqual(await h.expected(source));
    expect((await h.files(target)).size).toBe((await h.expected(source)).length);
    expect((h.proxy.faults.get('PUT') ?? 0) - faultsBefore).toBeGreaterThan(0);

    // A change under the same faults.
    for (const entry of await h.entries(source)) await h.patchEntry(entry.id, { num_auditorium_schedule: '303' });
    await h.refresh(source);
    const [, second] = await h.settled(target.id, 2, 60_000);
    expect(second).toMatchObject({ state: 'completed' });
    expect(await h.held(target)).toEqual(await h.expected(source));

    // Faults over: a reconcile finds nothing left to write.
    h.proxy.configure({ rate: 0 });
    const before = h.requests();
    expect((await h.push(target, 'reconcile')).result).toMatchObject({ writes: 0 });
    expect(h.writesSince(before)).toEqual({ PUT: 0, DELETE: 0 });
  }, 90_000);

  it('a worker killed with SIGKILL mid-push: a second worker finishes the job, exact, no UID twice', async () => {
    const source = await h.smallGroup(3);
    await h.refresh(source);
    await h.stopWorkers();
    const first = await startWorker();
    // 100 ms per PUT, 4 in flight: the first push of a few dozen resources takes about a second.
    h.proxy.configure({ putDelayMs: 100 });
    const { client, home, user } = await h.account();
    const calendar = await client.makeCalendar(home, 'timetable', source, '#1E88E5');
    const { id } = await h.ctx.caldav.targets.create({
      source,
      calendarId: calendar.url,
      calendarOwned: true,
      calendarName: source,
      secret: 'app-password-1',
      details: caldavDetailFields(calendar.url, {
        serverUrl: h.proxy.url,
        homeUrl: home,
        username: user,
        supportsSync: true,
      }),
      now: h.clock.now,
    });
    const target: Connected = {
      id,
      source,
      user,
      calendarUrl: calendar.url,
      folder: h.radicale.collectionDir(user, 'timetable'),
    };
    const putsBefore = h.proxy.seen('PUT');
    const storedBefore = stored();
    const jobId = await enqueuePush(h.ctx.queues, 'caldav', id, source, 'connect');
    await waitUntil(() => h.proxy.seen('PUT') - putsBefore >= 8, 'some PUTs');
    const [job] = (await h.ctx.queues.pushQueue('caldav').getJobs(['active'])).filter(
      (each) => each.data.target === id,
    );
    expect(job?.processedBy).toBe(first.id);
    first.child.kill('SIGKILL');
    await new Promise((done) => first.child.once('exit', done));
    // The PUTs the killed worker had in flight still reach Radicale: the totals below hold however many do.
    h.proxy.configure({ putDelayMs: 0 });
    const expected = await h.expected(source);
    expect(stored() - storedBefore).toBeLessThan(expected.length);

    const second = await startWorker();
    const push = await h.waitForPush(jobId, 60_000);
    expect(push).toMatchObject({ state: 'completed', processedBy: second.id });
    expect(await h.held(target)).toEqual(expected);
    expect((await h.files(target)).size).toBe(expected.length);
    // Each resource stored exactly once: the second run found the first run's resources (it reconciles, and a
    // create of a name already taken answers 412 and is resolved by reading it back), none written twice.
    expect(stored() - storedBefore).toBe(expected.length);
    const index = await h.ctx.caldav.targets.index(id).read();
    expect(index.size).toBe(expected.length);
  }, 90_000);
});
