/**
 * The service's neighbours misbehaving: the university's API flapping (errors, resets, timeouts) while its
 * timetables change, and Google answering storms of 5xx and rate limits while pushes run.
 */
import { afterEach, expect, it } from 'vitest';
import { Cleanup, rawRequest, sleep } from '../../testkit/processes.ts';
import { calls } from '../google/push-harness.ts';
import { converge, googleErrors, outcome, storedCounts } from './support/checks.ts';
import { Rig } from './support/rig.ts';

let cleanup: Cleanup;
afterEach(() => cleanup.run());

it('upstream flapping while timetables change: feeds stay served, then equal the upstream', async () => {
  cleanup = new Cleanup();
  const rig = await Rig.start(cleanup, { groups: 3, targets: 1, personal: 2 });
  expect((await converge(rig)).verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
  const before = await storedCounts(rig);
  await rig.dropOneClassEach();
  await rig.sim.clearStats();
  // Half the timetable requests fail: 503s, dropped connections, answers slower than a test's patience.
  await rig.sim.fault({ kind: 'status', status: 503, probability: 0.3 });
  await rig.sim.fault({ kind: 'reset', probability: 0.15 });
  await rig.sim.fault({ kind: 'malformed-json', probability: 0.05 });
  await rig.sim.fault({ kind: 'latency', latencyMs: 300, probability: 0.5 });
  let served = 0;
  let notServed = 0;
  for (let round = 0; round < 8; round += 1) {
    await rig.resyncAll();
    for (const source of rig.allSources()) {
      const answer = await rawRequest(rig.feedUrl(source));
      if (answer.status === 200) served += 1;
      else notServed += 1;
    }
    await sleep(1_500);
  }
  await rig.sim.clearFaults();
  const calmAt = Date.now();
  const { verdict } = await converge(rig, 150_000);
  const upstream = await rig.sim.stats();
  outcome('upstream-flapping', {
    feedAnswers200: served,
    feedAnswersOther: notServed,
    upstreamRequests: upstream.total,
    exactAfterMs: Date.now() - calmAt,
    exact: verdict,
  });
  expect(notServed).toBe(0);
  expect(verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
  expect(await storedCounts(rig)).toEqual(before);
});

it('Google 5xx and rate-limit storm during pushes: calendars exact afterwards, nothing written twice', async () => {
  cleanup = new Cleanup();
  const rig = await Rig.start(cleanup, { groups: 3, targets: 2, personal: 1 });
  expect((await converge(rig)).verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
  const before = await storedCounts(rig);
  rig.fake.resetCounts();
  const methods = ['events.insert', 'events.list', 'events.patch', 'events.update', 'events.delete', 'events.get'];
  rig.fake.inject({ kind: '500', probability: 0.15, methods });
  rig.fake.inject({ kind: '503', probability: 0.15, methods });
  rig.fake.inject({ kind: '429', probability: 0.2, methods });
  rig.fake.inject({ kind: '403-user-rate', probability: 0.1, methods });
  rig.fake.inject({ kind: 'reset', probability: 0.05, methods });
  // Changes to push (a class gone from every group) and a new calendar to fill, all inside the storm.
  await rig.dropOneClassEach();
  await rig.resyncAll();
  await rig.connect(rig.sources[2] ?? '');
  await sleep(20_000);
  const stormCounts = rig.fake.counts();
  rig.fake.clearFaults();
  const calmAt = Date.now();
  const { verdict } = await converge(rig, 150_000);
  const google = googleErrors(rig);
  outcome('google-storm', {
    faultedDuringStorm: stormCounts.faulted,
    requestsDuringStorm: stormCounts.total,
    exactAfterCalmMs: Date.now() - calmAt,
    inserts: calls(rig.fake, 'events.insert'),
    duplicates: google.duplicates,
    exact: verdict,
  });
  expect(verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
  expect(google.duplicates).toBe(0);
  expect(await storedCounts(rig)).toEqual({ ...before, targets: before.targets + 1 });
});
