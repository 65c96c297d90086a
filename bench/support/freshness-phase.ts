/**
 * One phase of the freshness benchmark: a fresh service (private Redis, two workers, an api) under one refresh
 * policy, its 2,000 sources activated, signed up and published, the refreshes left to settle, then the planned
 * changes made on time while the ledger records when each affected feed serves its change. Requests to the
 * university are counted over the change window only.
 */
import { join } from 'node:path';
import { activateSource } from '../../src/jobs/activation.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { signUp } from '../../src/subscriptions/personal.ts';
import {
  Cleanup,
  privateRedis,
  rawRequest,
  serviceEnvironment,
  sleep,
  spawnRole,
  tempDir,
} from '../../testkit/processes.ts';
import { openBenchContext } from './bench-context.ts';
import type { AffectedFeed, PlannedChange, World } from './freshness-changes.ts';
import { ChangeLedger, type PairRecord } from './freshness-ledger.ts';
import type { University } from './freshness-population.ts';
import { watchFeeds } from './freshness-watch.ts';
import { simulatorControl } from './soak-setup.ts';

/** Settings of one phase. */
export interface PhaseSettings {
  policy: 'fixed' | 'adaptive';
  simulatorUrl: string;
  university: University;
  world: World;
  plan: readonly PlannedChange[];
  /** Service settings both phases share (rate limit, interval, max wait). */
  serviceEnv: Record<string, string>;
  settleMs: number;
  phaseMs: number;
  /** How long after the last change the phase waits for the changes still on their way. */
  graceMs: number;
  log: (line: string) => void;
}

/** What a phase measured. */
export interface PhaseResult {
  policy: 'fixed' | 'adaptive';
  records: readonly PairRecord[];
  changesMade: number;
  /** Requests the university answered during the change window, and per second. */
  upstreamRequests: number;
  requestsPerSecond: number;
  byEndpoint: Record<string, number>;
  /** Seconds from the first sign-up until every source was published. */
  warmUpSeconds: number;
  stderr: string;
}

/** Runs one phase; every child it started is stopped when it returns or throws (and on Ctrl-C). */
export async function runPhase(settings: PhaseSettings): Promise<PhaseResult> {
  const cleanup = new Cleanup();
  try {
    return await phase(cleanup, settings);
  } finally {
    await cleanup.run();
  }
}

async function phase(cleanup: Cleanup, settings: PhaseSettings): Promise<PhaseResult> {
  const { policy, log } = settings;
  const dir = await tempDir(cleanup, `freshness-${policy}`);
  const redisUrl = await privateRedis(cleanup, join(dir, 'redis'));
  const env = {
    ...serviceEnvironment(redisUrl, settings.simulatorUrl),
    ...settings.serviceEnv,
    REFRESH_POLICY: policy,
  };
  const workers = [await spawnRole(cleanup, 'worker', env, dir), await spawnRole(cleanup, 'worker', env, dir)];
  const api = await spawnRole(cleanup, 'api', env, dir);
  const ctx = openBenchContext(cleanup, env, redisUrl);
  const warmStart = Date.now();
  const personal = await warmUp(ctx, api.url, env.ADMIN_TOKEN, settings);
  const warmUpSeconds = (Date.now() - warmStart) / 1000;
  log(
    `${policy}: ${personal.size + settings.university.groups.length + settings.university.teachers.length} sources published in ${warmUpSeconds.toFixed(0)} s; settling ${settings.settleMs / 1000} s`,
  );
  await sleep(settings.settleMs);
  const ledger = new ChangeLedger();
  let started = performance.now();
  const watch = await watchFeeds(ctx, ledger, () => performance.now() - started);
  cleanup.add('feed watch', watch.close);
  const sourceOf = (feed: AffectedFeed): string =>
    feed.kind === 'group'
      ? `group:${feed.id}`
      : feed.kind === 'teacher'
        ? `employee:${feed.id}`
        : (personal.get(feed.id) ?? `personal:unknown-${feed.id}`);
  await simulatorControl(settings.simulatorUrl, 'DELETE', '/_sim/stats');
  started = performance.now();
  const progress = setInterval(() => {
    const elapsed = (performance.now() - started) / 1000;
    const made = settings.plan.filter((change) => change.atMs <= elapsed * 1000).length;
    log(
      `${policy}: ${elapsed.toFixed(0)}/${(settings.phaseMs + settings.graceMs) / 1000} s, ${made} changes made, ` +
        `${ledger.records().length - ledger.pendingPairs()}/${ledger.records().length} feed arrivals`,
    );
  }, 15_000);
  cleanup.add('progress', async () => clearInterval(progress));
  let made = 0;
  for (const change of settings.plan) {
    if (change.atMs >= settings.phaseMs) break;
    const wait = change.atMs - (performance.now() - started);
    if (wait > 0) await sleep(wait);
    ledger.register(change, performance.now() - started, sourceOf);
    await simulatorControl(settings.simulatorUrl, 'PATCH', `/_sim/entries/${change.entryId}`, {
      num_auditorium_schedule: change.room,
    });
    made += 1;
  }
  const rest = settings.phaseMs - (performance.now() - started);
  if (rest > 0) await sleep(rest);
  const windowSeconds = (performance.now() - started) / 1000;
  const stats = (await simulatorControl(settings.simulatorUrl, 'GET', '/_sim/stats')) as {
    requests: { total: number; byEndpoint: Record<string, number> };
  };
  const graceEnd = performance.now() + settings.graceMs;
  while (ledger.pendingPairs() > 0 && performance.now() < graceEnd) await sleep(500);
  clearInterval(progress);
  await watch.close();
  return {
    policy,
    records: ledger.records(),
    changesMade: made,
    upstreamRequests: stats.requests.total,
    requestsPerSecond: stats.requests.total / windowSeconds,
    byEndpoint: stats.requests.byEndpoint,
    warmUpSeconds,
    stderr: [api, ...workers]
      .map((child) => child.stderr().trim())
      .filter((text) => text !== '')
      .join('\n'),
  };
}

/**
 * Activates the public sources (as a first feed request would), signs every student up (their first refreshes
 * are queued by the sign-up), asks an admin resync of all, and waits until every source is published. Answers
 * the personal source of each student.
 */
async function warmUp(
  ctx: ServiceContext,
  apiUrl: string,
  adminToken: string,
  settings: PhaseSettings,
): Promise<Map<number, string>> {
  const { university } = settings;
  const publicSources = [
    ...university.groups.map((id) => `group:${id}`),
    ...university.teachers.map((id) => `employee:${id}`),
  ];
  for (let start = 0; start < publicSources.length; start += 100)
    await Promise.all(publicSources.slice(start, start + 100).map((source) => activateSource(ctx, source)));
  const personal = new Map<number, string>();
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let index = next++; index < university.users.length; index = next++) {
      const user = university.users[index] as University['users'][number];
      const { subscription } = await signUp(ctx, user.token);
      personal.set(user.id, `personal:${subscription.id}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, lane));
  const answer = await rawRequest(`${apiUrl}/admin/resync`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ all: true }),
  });
  if (answer.status !== 202) throw new Error(`POST /admin/resync answered ${answer.status}`);
  const sources = [...publicSources, ...personal.values()];
  const deadline = Date.now() + 600_000;
  for (;;) {
    const records = await Promise.all(sources.map((source) => ctx.registry.get(source)));
    const left = records.filter((record) => record?.lastSuccess === undefined).length;
    if (left === 0) return personal;
    if (Date.now() > deadline) throw new Error(`${left} sources still unpublished after 10 minutes`);
    await sleep(1_000);
  }
}
