/**
 * Bytes of a source's stored state besides its feed (`node scripts/state-bytes.ts [--sample N]`): publishes a
 * sample of the bundled simulator's groups and teachers (seed 1, default sizes, N of each spread evenly over
 * the groups ranked by their number of entries, and the first N teachers with classes) through a real worker on
 * a private redis-server, stores the study plans of N simulated students, then prints for each kind of
 * source the median `STRLEN` (the stored value's bytes; a change log's items summed) and `MEMORY USAGE` of its
 * snapshot, published state, change log and study plan keys, and the median number of published occurrences.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { enqueueRefresh } from '../src/jobs/queues.ts';
import { startWorkers } from '../src/jobs/workers.ts';
import { silentLogger } from '../src/logger.ts';
import type { ServiceContext } from '../src/runtime/context.ts';
import { startEmbeddedRedis } from '../src/runtime/embedded-redis.ts';
import { openServiceContext } from '../src/runtime/service-context.ts';
import { startSimulator } from '../src/simulator/index.ts';
import { StudyPlanStore } from '../src/store/study-plan-store.ts';
import type { SourceKey } from '../src/timetable/source.ts';

const { values } = parseArgs({ options: { sample: { type: 'string', default: '15' } } });
const SAMPLE = Number(values.sample);

/** Reads a simulator control endpoint. */
async function control<T>(url: string, path: string): Promise<T> {
  return (await (await fetch(`${url}${path}`)).json()) as T;
}

async function publish(ctx: ServiceContext, source: SourceKey): Promise<void> {
  const id = await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'resync', now: ctx.now() });
  for (;;) {
    const state = await ctx.queues.refresh.getJobState(id);
    if (state === 'completed') return;
    if (state === 'failed') throw new Error(`refresh of ${source} failed`);
    await sleep(20);
  }
}

/** Sizes of one source's keys: value bytes and Redis's own accounting. */
async function sizes(ctx: ServiceContext, source: SourceKey): Promise<Record<string, number>> {
  const { redis, keys } = ctx;
  const changes = await redis.lrangeBuffer(keys.changes(source), 0, -1);
  const { published } = await ctx.snapshots.load(source);
  return {
    occurrences: Object.keys(published?.occurrences ?? {}).length,
    'snapshot bytes': await redis.strlen(keys.snapshot(source)),
    'snapshot memory': Number(await redis.memory('USAGE', keys.snapshot(source))),
    'published bytes': await redis.strlen(keys.published(source)),
    'published memory': Number(await redis.memory('USAGE', keys.published(source))),
    'change log bytes': changes.reduce((sum, item) => sum + item.length, 0),
    'change log memory': Number(await redis.memory('USAGE', keys.changes(source))),
  };
}

function median(numbers: number[]): number {
  const sorted = [...numbers].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function report(kind: string, rows: Record<string, number>[]): void {
  const names = Object.keys(rows[0] ?? {});
  console.log(`${kind} (median of ${rows.length}):`);
  for (const name of names) console.log(`  ${name.padEnd(20)} ${median(rows.map((row) => row[name] ?? 0))}`);
}

const dataDir = await mkdtemp(join(tmpdir(), 'state-bytes-'));
const redis = await startEmbeddedRedis({ dataDir, logger: silentLogger(), persistence: false, shared: false });
const simulator = await startSimulator({ port: 0, seed: 1 });
const config = loadConfig({
  REDIS_URL: redis.url,
  REDIS_PREFIX: 'state-bytes',
  UNIVERSITY_API_URL: simulator.url,
  ADMIN_TOKEN: 'state-bytes-admin-token-0123456789',
  SECRET_KEY: '8f32551effa4f0bc84471877166934d9e65899db6a4a94b7ba256f9b0f567865',
  UPSTREAM_RATE_LIMIT: '1000',
  LOG_LEVEL: 'silent',
});
const opened = openServiceContext({ config, logger: silentLogger(), redis: redis.url, role: 'state-bytes' });
const ctx = opened.context;
const workers = await startWorkers(ctx, redis.url);
try {
  const { groups } = await control<{ groups: { id: number; entryCount: number }[] }>(simulator.url, '/_sim/groups');
  const ranked = [...groups].sort((a, b) => a.entryCount - b.entryCount);
  const groupRows: Record<string, number>[] = [];
  for (let index = 0; index < SAMPLE; index += 1) {
    const group = ranked[Math.floor(((index + 0.5) * ranked.length) / SAMPLE)];
    if (group === undefined) continue;
    const source: SourceKey = `group:${group.id}`;
    await publish(ctx, source);
    groupRows.push(await sizes(ctx, source));
  }
  const { employees } = await control<{ employees: { id: number }[] }>(simulator.url, '/_sim/employees');
  const teacherRows: Record<string, number>[] = [];
  for (const employee of employees) {
    if (teacherRows.length === SAMPLE) break;
    if ((await ctx.upstream.employeeSchedule(employee.id)).entries.length === 0) continue;
    const source: SourceKey = `employee:${employee.id}`;
    await publish(ctx, source);
    teacherRows.push(await sizes(ctx, source));
  }
  const { users } = await control<{ users: { id: number; token: string }[] }>(simulator.url, '/_sim/users');
  const plans = new StudyPlanStore(ctx.redis, ctx.keys);
  const planRows: Record<string, number>[] = [];
  for (const [index, user] of users.slice(0, SAMPLE).entries()) {
    const source: SourceKey = `personal:state-bytes-${String(index).padStart(8, '0')}`;
    await plans.saveFetched(source, await ctx.upstream.myPlan(user.token), ctx.now());
    planRows.push({
      'study plan bytes': await ctx.redis.strlen(ctx.keys.studyPlan(source)),
      'study plan memory': Number(await ctx.redis.memory('USAGE', ctx.keys.studyPlan(source))),
    });
  }
  report('groups', groupRows);
  report('teachers', teacherRows);
  report('study plans', planRows);
} finally {
  await workers.close();
  await opened.close();
  await simulator.close();
  await redis.stop();
  await rm(dataDir, { recursive: true, force: true });
}
