/**
 * The population of the soak: public sources activated and published, personal subscriptions signed up
 * through the API with the simulator's credentials, Google targets connected to the fake Google, the
 * timetable changes made every interval, and the faults injected once all of that stands.
 */
import { activateSource } from '../../src/jobs/activation.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { connectGoogleTarget } from '../../src/subscriptions/google-connect.ts';
import type { FakeGoogle } from '../../testkit/fake-google/index.ts';
import { rawRequest, sleep } from '../../testkit/processes.ts';

/** A simulator control call; throws on an error answer. */
export async function simulatorControl(url: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await rawRequest(`${url}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (response.status >= 300)
    throw new Error(`simulator ${method} ${path}: ${response.status} ${response.body.toString().slice(0, 300)}`);
  return response.body.length > 0 ? JSON.parse(response.body.toString()) : undefined;
}

/** `groups` groups and `employees` employees of the simulator, the lowest ids: `group:<id>`, `employee:<id>`. */
export async function publicSources(simulatorUrl: string, groups: number, employees: number): Promise<string[]> {
  const listed = (await simulatorControl(simulatorUrl, 'GET', '/_sim/groups')) as { groups: { id: number }[] };
  const staff = (await simulatorControl(simulatorUrl, 'GET', '/_sim/employees')) as { employees: { id: number }[] };
  const ids = (list: { id: number }[], n: number) =>
    list
      .map((item) => item.id)
      .sort((a, b) => a - b)
      .slice(0, n);
  return [
    ...ids(listed.groups, groups).map((id) => `group:${id}`),
    ...ids(staff.employees, employees).map((id) => `employee:${id}`),
  ];
}

/** The feed path of a public source. */
export function feedPath(source: string): string {
  return source.replace(/^group:(\d+)$/, '/feeds/groups/$1.ics').replace(/^employee:(\d+)$/, '/feeds/employees/$1.ics');
}

/**
 * Activates every source (as a first request does) and waits for the reconciler's job schedulers, one per
 * source: from then on each source is refreshed every REFRESH_INTERVAL. Then an admin resync of all sources
 * publishes every feed, so that subscribers are served from the start.
 */
export async function activateAndPublish(
  ctx: ServiceContext,
  apiUrl: string,
  adminToken: string,
  sources: readonly string[],
): Promise<void> {
  for (let start = 0; start < sources.length; start += 100)
    await Promise.all(sources.slice(start, start + 100).map((source) => activateSource(ctx, source)));
  await until('the reconciler created a job scheduler per source', 180_000, async () => {
    return (await ctx.queues.schedule.getJobSchedulersCount()) >= sources.length + 1;
  });
  const answer = await rawRequest(`${apiUrl}/admin/resync`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ all: true }),
  });
  if (answer.status !== 202) throw new Error(`POST /admin/resync answered ${answer.status}`);
  await until('every source was published', 600_000, async () => {
    const published = await Promise.all(sources.map((source) => ctx.registry.get(source)));
    return published.every((record) => record?.lastSuccess !== undefined);
  });
}

/** Signs `count` simulator users up (`POST /api/subscriptions`); answers their personal feed paths. */
export async function signUps(simulatorUrl: string, apiUrl: string, count: number): Promise<string[]> {
  const { users } = (await simulatorControl(simulatorUrl, 'GET', '/_sim/users')) as { users: { token: string }[] };
  if (users.length < count) throw new Error(`the simulator has ${users.length} users, ${count} needed`);
  const paths: string[] = [];
  for (const user of users.slice(0, count)) {
    const answer = await rawRequest(`${apiUrl}/api/subscriptions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ credential: user.token }),
    });
    if (answer.status !== 201 && answer.status !== 200)
      throw new Error(`sign-up answered ${answer.status}: ${answer.body.toString().slice(0, 300)}`);
    paths.push(`/feeds/personal/${(JSON.parse(answer.body.toString()) as { token: string }).token}.ics`);
  }
  return paths;
}

/** Connects one fake Google user's calendar to each source and waits for the first pushes to end. */
export async function connectTargets(ctx: ServiceContext, fake: FakeGoogle, sources: readonly string[]): Promise<void> {
  for (const source of sources) await connectGoogleTarget(ctx, { source, refreshToken: fake.addUser().refreshToken });
  await until('the first pushes ended', 600_000, async () => {
    const counts = await ctx.queues.pushQueue('google').getJobCounts('waiting', 'prioritized', 'active', 'delayed');
    return Object.values(counts).every((count) => count === 0);
  });
}

/** Entries changed per group and interval. */
const CHURN_ENTRIES = 3;

/**
 * Timetable changes, {@link CHURN_ENTRIES} entries per changed group: each call moves them to the other of two
 * rooms, so that every interval republishes these feeds and pushes their changes, while the timetables keep
 * their size.
 */
export class RoomChurn {
  private readonly simulatorUrl: string;
  private readonly entries: number[];
  private turn = 0;

  private constructor(simulatorUrl: string, entries: number[]) {
    this.simulatorUrl = simulatorUrl;
    this.entries = entries;
  }

  /** Picks the first entries of each group (before any fault is injected). */
  static async forGroups(simulatorUrl: string, sources: readonly string[]): Promise<RoomChurn> {
    const entries: number[] = [];
    for (const source of sources) {
      const id = Number(source.replace('group:', ''));
      const found = (await rawRequest(`${simulatorUrl}/groups/${id}/schedule`)).body.toString();
      const subjects = (JSON.parse(found) as { subjects: { id: number | string }[] }).subjects;
      entries.push(...subjects.slice(0, CHURN_ENTRIES).map((subject) => Number(subject.id)));
    }
    return new RoomChurn(simulatorUrl, entries);
  }

  /** Moves every entry to the other room; answers how many entries changed. */
  async change(): Promise<number> {
    this.turn += 1;
    const room = this.turn % 2 === 0 ? 'SOAK-A' : 'SOAK-B';
    for (const id of this.entries)
      await simulatorControl(this.simulatorUrl, 'PATCH', `/_sim/entries/${id}`, { num_auditorium_schedule: room });
    return this.entries.length;
  }
}

/** Rates of the faults injected for the whole measured run. */
export const FAULTS = {
  /** Upstream answers 3 s late, answers 500, or never answers (the service's UPSTREAM_TIMEOUT ends it). */
  upstreamSlow: 0.02,
  upstream500: 0.01,
  upstreamTimeout: 0.002,
  /** Google answers 503 or 429. */
  google503: 0.01,
  google429: 0.01,
} as const;

/** Injects {@link FAULTS} into the simulator and the fake Google. */
export async function injectFaults(simulatorUrl: string, fake: FakeGoogle): Promise<void> {
  const rule = (body: object) => simulatorControl(simulatorUrl, 'POST', '/_sim/faults', body);
  await rule({ kind: 'latency', latencyMs: 3_000, probability: FAULTS.upstreamSlow });
  await rule({ kind: 'status', status: 500, probability: FAULTS.upstream500 });
  await rule({ kind: 'timeout', probability: FAULTS.upstreamTimeout });
  fake.inject({ kind: '503', probability: FAULTS.google503 });
  fake.inject({ kind: '429', probability: FAULTS.google429 });
}

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`soak setup: not done within ${timeoutMs / 1000} s: ${what}`);
    await sleep(500);
  }
}
