/**
 * The service's own processes killed (`kill -9`): a worker in the middle of a Google push, and the api while
 * subscribers fetch feeds. Another process takes over; nothing is written twice or lost.
 */
import { afterEach, expect, it } from 'vitest';
import { waitUntil } from '../../testkit/poll.ts';
import { Cleanup, getUntilOk, rawRequest } from '../../testkit/processes.ts';
import { calls } from '../google/push-harness.ts';
import { converge, googleErrors, outcome, storedCounts } from './support/checks.ts';
import { Rig } from './support/rig.ts';

let cleanup: Cleanup;
afterEach(() => cleanup.run());

it('worker kill -9 mid-push: the next worker finishes it, no Google event twice, none missing', async () => {
  cleanup = new Cleanup();
  const rig = await Rig.start(cleanup, { groups: 3, targets: 1, personal: 1 });
  expect((await converge(rig)).verdict.calendars).toEqual([]);
  const before = await storedCounts(rig);
  // A slow Google (about 150 ms a request): the first push of a new calendar takes several seconds.
  rig.fake.latency(150);
  rig.fake.resetCounts();
  const source = rig.sources[1] ?? rig.sources[0];
  if (source === undefined) throw new Error('no source');
  await rig.connect(source);
  await waitUntil(() => calls(rig.fake, 'events.insert') >= 10, 'inserts of the new target', 60_000);
  await rig.worker.kill();
  const killedAt = Date.now();
  const insertedBeforeKill = calls(rig.fake, 'events.insert');
  rig.fake.latency(0);
  rig.worker = await rig.spawn('worker');
  const { verdict, ms } = await converge(rig, 150_000);
  const google = googleErrors(rig);
  const desired = rig.fake.events(rig.targets.at(-1)?.calendarId ?? '').length;
  outcome('worker-kill-mid-push', {
    recoveredMs: Date.now() - killedAt,
    checkMs: ms,
    insertedBeforeKill,
    inserts: calls(rig.fake, 'events.insert'),
    calendarEvents: desired,
    duplicates: google.duplicates,
    exact: verdict,
  });
  expect(verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
  expect(insertedBeforeKill).toBeLessThan(desired);
  expect(await storedCounts(rig)).toEqual({ ...before, targets: before.targets + 1 });
});

it('api kill -9 while subscribers fetch: a new api serves every feed at once, nothing lost', async () => {
  cleanup = new Cleanup();
  const rig = await Rig.start(cleanup, { groups: 3, targets: 1, personal: 2 });
  expect((await converge(rig)).verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
  const before = await storedCounts(rig);
  let answered = 0;
  let failed = 0;
  let fetching = true;
  const subscribers = (async () => {
    while (fetching) {
      for (const source of rig.allSources()) {
        const answer = await rawRequest(rig.feedUrl(source)).catch(() => ({ status: 0 }));
        if (answer.status === 200) answered += 1;
        else {
          failed += 1;
          await new Promise((wake) => setTimeout(wake, 50));
        }
      }
    }
  })();
  await waitUntil(() => answered >= 20, 'feeds answered before the kill', 30_000);
  await rig.api.kill();
  const killedAt = Date.now();
  rig.api = await rig.spawn('api');
  const firstAnswer = await getUntilOk(rig.feedUrl(rig.allSources()[0] ?? 'group:0'));
  const servingMs = Date.now() - killedAt;
  fetching = false;
  await subscribers;
  // A repeated sign-up on the new api finds its subscription (a new feed token, no new subscription).
  const signUp = await rawRequest(`${rig.api.url}/api/subscriptions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ credential: rig.subscriptions[0]?.credential }),
  });
  const { verdict, ms } = await converge(rig);
  outcome('api-kill', {
    servingAgainMs: servingMs,
    answeredBefore: answered,
    refusedWhileDown: failed,
    signUpAfter: signUp.status,
    checkMs: ms,
    exact: verdict,
  });
  expect(firstAnswer.status).toBe(200);
  expect(signUp.status).toBe(200);
  expect(verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
  expect(await storedCounts(rig)).toEqual({ ...before, feedTokens: before.feedTokens + 1 });
});
