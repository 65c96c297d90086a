/**
 * The university scale benchmark (`npm run bench -- scale [--sizes 2000,5000] [--quick] [--out PATH]`): how
 * the cost of the service grows from 2,000 to 20,000 sources, in the proportions of a whole university
 * (1,500 groups, 3,500 teachers and 15,000 personal subscriptions at 20,000), at `UPSTREAM_RATE_LIMIT=100`.
 *
 * One simulator (seed 1, 20 ms latency on every answer) in this process serves every step, sized for the
 * largest (the employees listed as teaching, the users with their credentials). Each step starts from nothing: a private redis-server, two
 * `timetable-sync worker` processes and one `timetable-sync api`, all stopped when the step ends.
 * - Personal subscriptions are signed up in this process through the sign-up use case
 *   (src/subscriptions/personal.ts: the credential checked upstream, the subscription, its owner and feed
 *   token stored, the source activated), not through `POST /api/subscriptions`: 15,000 sign-ups through the
 *   route would share the service's upstream budget of 100/s with the refreshes they queue (~450 s of setup
 *   at full size, three requests each), and the route's own rate limits would need raising. What the route
 *   adds (client limits, the form) is not what grows with the sources. This process's context takes a larger
 *   upstream budget for that, whose bucket is deleted before the workers start. The first refresh each
 *   sign-up queues is removed with the queue (no worker runs yet), so that personal sources, like the public
 *   ones (activated without fetching), are first published by the measured cycle.
 * - Cycle 1 (`POST /admin/resync {"all": true}`, then until the refresh queue drains) publishes every feed,
 *   and personal sources also fetch their study plan (due daily), so it asks the upstream sources + personal
 *   times. Cycle 2 is the steady state: nothing changed upstream, exactly 1.00 request per source, and its
 *   time is compared with the physical floor, sources ÷ limit.
 * - During both cycles simulated subscribers request feeds at a constant 200/s whatever the size (a fifth on
 *   20 hot feeds), so that their p99 latency shows what the size alone does to serving.
 * - After cycle 2 every feed is requested once, so that the api has cached all it may: its RSS is bounded by
 *   the feed cache's byte budget (256 MiB, the default of src/http/feed-cache.ts, not configurable) plus a
 *   baseline. The stored feeds' bytes (body, gzip and brotli) say whether they all fit.
 * - Redis commands: during the steady cycle (per source; subscribers' cache misses included) and over 20 s of an
 *   idle service after it (schedulers, heartbeats, polling).
 * - Redis `used_memory` (everything, the empty server's ~1 MiB included) and its breakdown by kind of key
 *   (`MEMORY USAGE` of every key: feeds, snapshots, published digests, change logs, source records, job
 *   schedulers, jobs kept, …), per source.
 * Output: a JSON line per step while it runs, then the summary; a CSV row per step and a PNG chart (cycle
 * time vs floor, Redis MiB and KB per source, api RSS, feed p99, each vs sources) at `--out` (default
 * bench/.out/scale/<date>); and a growth verdict: a cost per source that rises more than 25 % from the
 * smallest to the largest size grows faster than linearly and is flagged.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { loadConfig } from '../src/config.ts';
import { DEFAULT_FEED_CACHE_BYTES } from '../src/http/feed-cache.ts';
import { activateSource } from '../src/jobs/activation.ts';
import { silentLogger } from '../src/logger.ts';
import { openServiceContext } from '../src/runtime/service-context.ts';
import type { RunningSimulator } from '../src/simulator/index.ts';
import { type Panel, writeChart } from './support/chart.ts';
import { runCycle } from './support/cycle-run.ts';
import { findingLine, type GrowthSeries, growthVerdict } from './support/growth-verdict.ts';
import {
  Cleanup,
  privateRedis,
  privateSimulator,
  rawRequest,
  serviceEnvironment,
  sleep,
  spawnRole,
  tempDir,
} from './support/processes.ts';
import { FEED_FORMS, KEY_KINDS, type KeyKind, redisBreakdown } from './support/redis-breakdown.ts';
import { DEFAULT_SIZES, type Population, parseSizes, population, QUICK_SIZES } from './support/scale-population.ts';
import { signUpAll, simulatorSizes, stepSources } from './support/scale-setup.ts';
import { metricSum, redisCommands, redisMemory, rssMiB, scrape } from './support/soak-probes.ts';
import { feedPath, simulatorControl } from './support/soak-setup.ts';

const RATE_LIMIT = 100;
const WORKER_CONCURRENCY = 16;
const SUBSCRIBER_RATE = 200;
/** Latency of every upstream answer, as in the refresh-cycle benchmark. */
const LATENCY_MS = 20;
/** The upstream budget of this process's sign-ups (no worker runs meanwhile). */
const SETUP_RATE_LIMIT = 5_000;
const MIB = 2 ** 20;
/** Seconds of an idle service after the steady cycle over which Redis's command rate is measured. */
const IDLE_SECONDS = 20;
/** A kind of Redis key below this many KB per source is not flagged (2 % of the 25 KB per source aimed at). */
const NEGLIGIBLE_KB_PER_SOURCE = 0.5;

/** What one step measured. */
interface StepResult {
  population: Population;
  setupSeconds: number;
  publishSeconds: number;
  publishRequests: number;
  publishP99Ms: number;
  publishOtherCores: number;
  publishApiCpuSeconds: number;
  cycleSeconds: number;
  cycleRequests: number;
  cycleP99Ms: number;
  cycleOtherCores: number;
  cycleApiCpuSeconds: number;
  redisBaselineMiB: number;
  redisUsedMiB: number;
  /** Redis commands during the steady cycle, subscribers' cache misses included. */
  cycleCommands: number;
  idleCommandsPerSecond: number;
  byKind: Record<KeyKind, { bytes: number; keys: number }>;
  feedMiB: number;
  apiIdleMiB: number;
  apiCachedMiB: number;
  apiHeapMiB: number;
  apiExternalMiB: number;
  figures: Record<string, number | string>;
}

/** Runs the scale benchmark with the command line's flags (after the benchmark names). */
export async function runScaleBenchmark(argv: readonly string[] = []): Promise<Record<string, number | string>> {
  const { values } = parseArgs({
    args: [...argv],
    options: { sizes: { type: 'string' }, quick: { type: 'boolean', default: false }, out: { type: 'string' } },
  });
  const sizes = values.sizes !== undefined ? parseSizes(values.sizes) : values.quick ? QUICK_SIZES : DEFAULT_SIZES;
  const started = new Date();
  const outBase = resolve(values.out ?? join('bench/.out/scale', started.toISOString().slice(0, 16).replace(':', '-')));
  const steps = sizes.map(population);
  const cleanup = new Cleanup();
  const results: StepResult[] = [];
  try {
    const simulator = await privateSimulator(cleanup, simulatorSizes(steps[steps.length - 1] as Population));
    await simulatorControl(simulator.url, 'POST', '/_sim/faults', { kind: 'latency', latencyMs: LATENCY_MS });
    for (const step of steps) {
      const result = await measureStep(simulator, step);
      results.push(result);
      process.stdout.write(`${JSON.stringify({ benchmark: 'scale', step: step.sources, ...result.figures })}\n`);
    }
  } finally {
    await cleanup.run();
  }
  await mkdir(dirname(outBase), { recursive: true });
  await writeFile(`${outBase}.csv`, csv(results));
  await writeChart(`${outBase}.png`, {
    title: `timetable-sync at university scale: ${sizes.join(' / ')} sources, UPSTREAM_RATE_LIMIT=${RATE_LIMIT}`,
    subtitle: `${started.toISOString().slice(0, 16)}Z · upstream latency ${LATENCY_MS} ms · groups : teachers : personal = 1,500 : 3,500 : 15,000 · 2 workers × ${WORKER_CONCURRENCY} · subscribers ${SUBSCRIBER_RATE} feed requests/s`,
    xTitle: 'sources',
    panels: panels(results).map((panel) => ({ ...panel, markers: true })),
    panelHeight: 130,
  });
  const findings = growthVerdict(growthSeries(results));
  return {
    sizes: sizes.join(', '),
    'rate limit req/s': RATE_LIMIT,
    'feed cache budget MiB': DEFAULT_FEED_CACHE_BYTES / MIB,
    ...Object.fromEntries(
      results.flatMap((result) =>
        Object.entries(result.figures).map(([name, value]) => [`${result.population.sources}: ${name}`, value]),
      ),
    ),
    'growth verdict': findings.map(findingLine).join('; '),
    'faster than linear': findings.filter((finding) => finding.status === 'super-linear').length,
    // Times (and p99s) are only comparable between steps that had the machine to themselves.
    'CPU cores used by other processes, per step (publish / steady cycle)': results
      .map((r) => `${r.population.sources}: ${r.publishOtherCores} / ${r.cycleOtherCores}`)
      .join(', '),
    csv: `${outBase}.csv`,
    png: `${outBase}.png`,
  };
}

/** One step from nothing: its own Redis, workers and api, stopped at the end. */
async function measureStep(simulator: RunningSimulator, step: Population): Promise<StepResult> {
  const cleanup = new Cleanup();
  try {
    return await measureStepIn(cleanup, simulator, step);
  } finally {
    await cleanup.run();
  }
}

async function measureStepIn(cleanup: Cleanup, simulator: RunningSimulator, step: Population): Promise<StepResult> {
  const setupStarted = Date.now();
  const dir = await tempDir(cleanup, 'scale');
  const redisUrl = await privateRedis(cleanup, join(dir, 'redis'));
  const env = {
    ...serviceEnvironment(redisUrl, simulator.url),
    UPSTREAM_RATE_LIMIT: String(RATE_LIMIT),
    WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
  };
  const opened = openServiceContext({
    config: loadConfig({ ...env, PORT: '1', UPSTREAM_RATE_LIMIT: String(SETUP_RATE_LIMIT) }),
    logger: silentLogger(),
    redis: redisUrl,
    role: 'bench',
  });
  cleanup.add('bench context', opened.close);
  const ctx = opened.context;
  const redisBaselineMiB = (await redisMemory(ctx.redis)).used;
  const { publicSources, credentials } = await stepSources(simulator.url, step);
  const personalPaths = await signUpAll(ctx, credentials);
  await ctx.queues.refresh.obliterate({ force: true });
  await ctx.redis.del(ctx.keys.rateLimit('upstream'));
  for (let start = 0; start < publicSources.length; start += 100)
    await Promise.all(publicSources.slice(start, start + 100).map((source) => activateSource(ctx, source)));
  const workers = [await spawnRole(cleanup, 'worker', env, dir), await spawnRole(cleanup, 'worker', env, dir)];
  await waitForSchedulers(ctx, step.sources);
  const api = await spawnRole(cleanup, 'api', env, dir);
  await sleep(1_000);
  const apiIdleMiB = (await rssMiB(api.pid)) ?? Number.NaN;
  const setupSeconds = (Date.now() - setupStarted) / 1000;

  const paths = [...publicSources.map(feedPath), ...personalPaths];
  const cycle = (label: string) =>
    runCycle({
      ctx,
      simulatorUrl: simulator.url,
      apiUrl: api.url,
      adminToken: env.ADMIN_TOKEN,
      paths,
      sources: step.sources,
      limit: RATE_LIMIT,
      subscriberRate: SUBSCRIBER_RATE,
      label,
      // Where the cycle's CPU goes: serving feeds (api) competes with refreshing (workers) on 2 cores.
      processes: { api: api.pid, 'worker-1': workers[0]?.pid ?? 0, 'worker-2': workers[1]?.pid ?? 0 },
    });
  const publish = await cycle('cycle 1 (publish)');
  const commandsBefore = await redisCommands(ctx.redis);
  const steady = await cycle('cycle 2 (steady)');
  const cycleCommands = (await redisCommands(ctx.redis)) - commandsBefore;
  // Between cycles: job schedulers, heartbeats, workers' polling; nothing is refreshed or requested.
  const idleFrom = await redisCommands(ctx.redis);
  await sleep(IDLE_SECONDS * 1000);
  const idleCommandsPerSecond = ((await redisCommands(ctx.redis)) - idleFrom) / IDLE_SECONDS;
  const warmStarted = Date.now();
  const notOk = await requestEvery(api.url, paths);
  const warmSeconds = (Date.now() - warmStarted) / 1000;
  const apiCachedMiB = (await rssMiB(api.pid)) ?? Number.NaN;
  // What of the RSS is live JavaScript objects and what Buffers (feeds), garbage not yet collected included.
  const page = await scrape(`${api.url}/metrics`);
  const apiHeapMiB = (metricSum(page, 'timetable_nodejs_heap_size_used_bytes') ?? Number.NaN) / MIB;
  const apiExternalMiB = (metricSum(page, 'timetable_nodejs_external_memory_bytes') ?? Number.NaN) / MIB;
  const redisUsedMiB = (await redisMemory(ctx.redis)).used;
  const scanner = new Redis(redisUrl, { lazyConnect: true });
  await scanner.connect();
  const breakdown = await redisBreakdown(scanner, ctx.config.redisPrefix).finally(() => scanner.quit());
  const perSourceKB = (bytes: number) => bytes / 1024 / step.sources;
  const storedFeedBytes = FEED_FORMS.reduce((sum, form) => sum + breakdown.feedBytes[form], 0);
  const floorSeconds = step.sources / RATE_LIMIT;
  return {
    population: step,
    setupSeconds,
    publishSeconds: publish.seconds,
    publishRequests: publish.upstreamRequests,
    publishP99Ms: publish.feedP99Ms,
    publishOtherCores: publish.otherCores,
    publishApiCpuSeconds: publish.cpuSeconds.api ?? Number.NaN,
    cycleSeconds: steady.seconds,
    cycleRequests: steady.upstreamRequests,
    cycleP99Ms: steady.feedP99Ms,
    cycleOtherCores: steady.otherCores,
    cycleApiCpuSeconds: steady.cpuSeconds.api ?? Number.NaN,
    redisBaselineMiB,
    redisUsedMiB,
    cycleCommands,
    idleCommandsPerSecond,
    byKind: breakdown.byKind,
    feedMiB: storedFeedBytes / MIB,
    apiIdleMiB,
    apiCachedMiB,
    apiHeapMiB,
    apiExternalMiB,
    figures: {
      sources: step.sources,
      'groups / teachers / personal': `${step.groups} / ${step.teachers} / ${step.personal}`,
      'setup seconds (sign-ups, activation, schedulers, processes)': round(setupSeconds),
      'cycle seconds (steady)': round(steady.seconds),
      'floor seconds (sources ÷ limit)': round(floorSeconds),
      'floor / cycle': round(floorSeconds / steady.seconds, 3),
      'upstream requests per source (steady)': round(steady.upstreamRequests / step.sources),
      'publish cycle seconds': round(publish.seconds),
      'publish cycle floor / cycle (its requests ÷ limit)': round(
        publish.upstreamRequests / RATE_LIMIT / publish.seconds,
        3,
      ),
      'Redis used_memory MiB': round(redisUsedMiB),
      'Redis KB per source': round((redisUsedMiB * 1024) / step.sources),
      'Redis empty MiB': round(redisBaselineMiB),
      'Redis commands per source refreshed (steady cycle, subscribers included)': round(cycleCommands / step.sources),
      'Redis commands/s while idle': round(idleCommandsPerSecond),
      'Redis KB per source by kind': KEY_KINDS.filter((kind) => breakdown.byKind[kind].keys > 0)
        .map(
          (kind) => `${kind} ${round(perSourceKB(breakdown.byKind[kind].bytes))} (${breakdown.byKind[kind].keys} keys)`,
        )
        .join(', '),
      'stored feeds MiB (body + gzip + brotli)': round(storedFeedBytes / MIB),
      'stored feed KB per source: body / gzip / brotli': FEED_FORMS.map((form) =>
        round(perSourceKB(breakdown.feedBytes[form])),
      ).join(' / '),
      'feed cache budget MiB': DEFAULT_FEED_CACHE_BYTES / MIB,
      'api RSS MiB idle / every feed requested': `${round(apiIdleMiB)} / ${round(apiCachedMiB)}`,
      'api heap used / external (Buffers) MiB, every feed requested': `${round(apiHeapMiB)} / ${round(apiExternalMiB)}`,
      'feed requests of every feed: seconds, answers not 200': `${round(warmSeconds)}, ${notOk}`,
      'feed p99 ms publish / steady': `${round(publish.feedP99Ms)} / ${round(steady.feedP99Ms)}`,
      ...publish.figures,
      ...steady.figures,
    },
  };
}

/** Waits for the reconciler's job schedulers, one per source plus its own (it makes ~100 a second). */
async function waitForSchedulers(
  ctx: { queues: { schedule: { getJobSchedulersCount(): Promise<number> } } },
  sources: number,
) {
  const deadline = Date.now() + Math.max(180_000, sources * 50);
  while ((await ctx.queues.schedule.getJobSchedulersCount()) < sources + 1) {
    if (Date.now() > deadline) throw new Error(`the reconciler did not create ${sources} job schedulers in time`);
    await sleep(500);
  }
}

/** GETs every path once (gzip accepted, 32 at a time), as a first subscriber of each; answers how many were not 200. */
async function requestEvery(apiUrl: string, paths: readonly string[]): Promise<number> {
  let next = 0;
  let notOk = 0;
  const lane = async () => {
    for (let index = next++; index < paths.length; index = next++) {
      const answer = await rawRequest(`${apiUrl}${paths[index]}`, { headers: { 'Accept-Encoding': 'gzip' } });
      if (answer.status !== 200) notOk += 1;
    }
  };
  await Promise.all(Array.from({ length: 32 }, lane));
  return notOk;
}

function round(value: number, digits = 2): number {
  return Number(value.toFixed(digits));
}

/** The CSV of the run: one row per step. */
function csv(results: readonly StepResult[]): string {
  const rows = results.map((result) => {
    const { sources, groups, teachers, personal } = result.population;
    return {
      sources,
      groups,
      teachers,
      personal,
      setup_s: round(result.setupSeconds),
      publish_cycle_s: round(result.publishSeconds),
      publish_upstream_requests: result.publishRequests,
      cycle_s: round(result.cycleSeconds),
      floor_s: sources / RATE_LIMIT,
      upstream_requests_per_source: round(result.cycleRequests / sources),
      redis_used_mib: round(result.redisUsedMiB),
      redis_kb_per_source: round((result.redisUsedMiB * 1024) / sources),
      redis_commands_per_source_refresh: round(result.cycleCommands / sources),
      redis_commands_per_s_idle: round(result.idleCommandsPerSecond),
      ...Object.fromEntries(
        KEY_KINDS.map((kind) => [
          `redis_kb_per_source_${kind.replaceAll(' ', '_')}`,
          round(result.byKind[kind].bytes / 1024 / sources, 3),
        ]),
      ),
      stored_feeds_mib: round(result.feedMiB),
      feed_cache_budget_mib: DEFAULT_FEED_CACHE_BYTES / MIB,
      api_rss_idle_mib: round(result.apiIdleMiB),
      api_rss_cached_mib: round(result.apiCachedMiB),
      api_heap_used_mib: round(result.apiHeapMiB),
      api_external_mib: round(result.apiExternalMiB),
      feed_p99_ms_publish: round(result.publishP99Ms),
      feed_p99_ms_steady: round(result.cycleP99Ms),
      api_cpu_s_publish: result.publishApiCpuSeconds,
      api_cpu_s_steady: result.cycleApiCpuSeconds,
      other_processes_cores_publish: result.publishOtherCores,
      other_processes_cores_steady: result.cycleOtherCores,
    };
  });
  const header = Object.keys(rows[0] ?? {});
  return `${[header.join(','), ...rows.map((row) => Object.values(row).join(','))].join('\n')}\n`;
}

/** The chart's panels, each against the sources. */
function panels(results: readonly StepResult[]): Panel[] {
  const series = (name: string, value: (result: StepResult) => number) =>
    results.map((result) => ({ x: result.population.sources, series: name, value: value(result) }));
  return [
    {
      title: 'Cycle time vs the physical floor (the publish cycle also fetches personal study plans)',
      yTitle: 's',
      points: [
        ...series('steady cycle', (r) => r.cycleSeconds),
        ...series('floor: sources ÷ limit', (r) => r.population.sources / RATE_LIMIT),
        ...series('publish cycle', (r) => r.publishSeconds),
      ],
    },
    { title: 'Redis used_memory', yTitle: 'MiB', points: series('total', (r) => r.redisUsedMiB) },
    {
      title: 'Redis memory per source',
      yTitle: 'KB per source',
      points: [
        ...series('all state', (r) => (r.redisUsedMiB * 1024) / r.population.sources),
        ...(['feed', 'snapshot', 'published digests', 'jobs kept'] as const).flatMap((kind) =>
          series(kind, (r) => r.byKind[kind].bytes / 1024 / r.population.sources),
        ),
      ],
    },
    {
      title: 'api RSS with every feed requested once, stored feeds (body + gzip + brotli), the cache budget',
      yTitle: 'MiB',
      points: [
        ...series('api RSS', (r) => r.apiCachedMiB),
        ...series('api RSS idle', (r) => r.apiIdleMiB),
        ...series('api external memory (Buffers)', (r) => r.apiExternalMiB),
        ...series('stored feeds', (r) => r.feedMiB),
        ...series('feed cache budget', () => DEFAULT_FEED_CACHE_BYTES / MIB),
      ],
    },
    {
      title: `Feed request p99 during the cycle (${SUBSCRIBER_RATE} requests/s; in the publish cycle a feed not yet published waits for it)`,
      yTitle: 'ms',
      log: true,
      points: [...series('steady cycle', (r) => r.cycleP99Ms), ...series('publish cycle', (r) => r.publishP99Ms)],
    },
  ];
}

/** The costs the verdict judges. */
function growthSeries(results: readonly StepResult[]): GrowthSeries[] {
  const points = (value: (result: StepResult) => number) =>
    results.map((result) => ({ sources: result.population.sources, value: value(result) }));
  return [
    { name: 'steady cycle time', growth: 'linear', unit: 'ms/source', points: points((r) => r.cycleSeconds * 1000) },
    { name: 'publish cycle time', growth: 'linear', unit: 'ms/source', points: points((r) => r.publishSeconds * 1000) },
    {
      name: 'Redis memory (above the empty server)',
      growth: 'linear',
      unit: 'KB/source',
      points: points((r) => (r.redisUsedMiB - r.redisBaselineMiB) * 1024),
    },
    ...KEY_KINDS.filter((kind) => results.every((r) => r.byKind[kind].keys > 0)).map(
      (kind): GrowthSeries => ({
        name: `Redis ${kind}`,
        growth: 'linear',
        unit: 'KB/source',
        points: points((r) => r.byKind[kind].bytes / 1024),
        negligibleBelow: NEGLIGIBLE_KB_PER_SOURCE,
      }),
    ),
    {
      name: 'api RSS above idle with every feed requested',
      growth: 'linear',
      unit: 'KB/source',
      points: points((r) => (r.apiCachedMiB - r.apiIdleMiB) * 1024),
    },
    { name: 'feed p99 in the steady cycle', growth: 'flat', unit: 'ms', points: points((r) => r.cycleP99Ms) },
  ];
}
