/**
 * The university scale benchmark (`npm run bench -- scale [--sizes 2000,5000] [--quick] [--out PATH]
 * [--feed-cache-mb 256]`): how
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
 * - After cycle 2 every feed is requested twice, so that the api has cached all it may: its RSS must stay within
 *   the feed cache's byte budget plus a baseline (a footprint goal). The budget is `FEED_CACHE_MB`, passed explicitly
 *   in the api's environment (`--feed-cache-mb`, default the service's own default). The baseline is what the
 *   api takes to serve the same requests without the cache: a second, fresh api with `FEED_CACHE_MB=1` is
 *   given every feed twice, in the same mix, and its RSS read after (support/api-memory.ts says why the idle
 *   api's RSS is no baseline; it is reported beside). These requests have the calendar clients' mix of
 *   encodings (mostly gzip, some brotli, some identity), so that every form the api caches is there. The
 *   stored feeds' bytes (every field of their hashes, whichever the stored format has) say whether they all fit.
 *   The service's processes get the Docker image's allocator settings (`MALLOC_*`, testkit/processes.ts)
 *   unless the environment sets them.
 * - Redis commands: during the steady cycle (per source; subscribers' cache misses included) and over 20 s of an
 *   idle service after it (schedulers, heartbeats, polling).
 * - Redis `used_memory` (everything, the empty server's ~1 MiB included) and its breakdown by kind of key
 *   (`MEMORY USAGE` of every key: feeds, snapshots, published digests, change logs, source records, job
 *   schedulers, jobs kept, …), per source. The footprint goal is per source over the groups and teachers, all
 *   state included: each key's bytes go to the kind of source it belongs to, and what no source owns (queue
 *   structures, indexes, `used_memory` beyond the keys) is shared equally per source.
 * - At the largest step only, the restart cost (support/restart-cost.ts): Redis's AOF written, Redis
 *   restarted and timed until it has loaded it; then a fresh api (cold cache) serving 1,000 distinct feeds.
 * Output: a JSON line per step while it runs, then the summary; a CSV row per step (the restart's columns
 * filled at the largest) and a PNG chart (cycle time vs floor, Redis MiB and KB per source, api RSS against
 * budget + baseline, feed p99, each vs sources; the restart cost in its subtitle) at `--out` (default
 * bench/.out/scale/<date>); and a growth verdict: a cost per source that rises more than 25 % from the
 * smallest to the largest size grows faster than linearly and is flagged.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { loadConfig } from '../src/config.ts';
import { activateSource } from '../src/jobs/activation.ts';
import { silentLogger } from '../src/logger.ts';
import { openServiceContext } from '../src/runtime/service-context.ts';
import { DEFAULT_FEED_CACHE_BYTES } from '../src/serving/feed-cache.ts';
import type { RunningSimulator } from '../src/simulator/index.ts';
import {
  Cleanup,
  imageAllocator,
  privateRedis,
  privateSimulator,
  serviceEnvironment,
  sleep,
  spawnRole,
  tempDir,
} from '../testkit/processes.ts';
import {
  type ApiMemoryVerdict,
  apiMemoryVerdict,
  BASELINE_CACHE_MB,
  feedCacheBudgetMiB,
} from './support/api-memory.ts';
import { type Panel, writeChart } from './support/chart.ts';
import { runCycle } from './support/cycle-run.ts';
import { findingLine, type GrowthSeries, growthVerdict } from './support/growth-verdict.ts';
import { KEY_KINDS, type KeyKind, type PerSourceKB, perSourceKB, redisBreakdown } from './support/redis-breakdown.ts';
import {
  type FeedPass,
  FIRST_FEEDS,
  feedPassFigure,
  type RedisRestart,
  requestEachFeed,
  restartRedisFromAof,
  spreadSample,
} from './support/restart-cost.ts';
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
/** The footprint goal for Redis: KB per source over the groups and teachers, all state included. */
const REDIS_GOAL_KB = 25;

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
  /** Redis memory per source over the groups and teachers, the personal subscriptions, and all sources. */
  redisPerSource: PerSourceKB;
  feedMiB: number;
  /** The api's feed cache budget (`FEED_CACHE_MB` of its environment). */
  feedCacheMiB: number;
  apiIdleMiB: number;
  apiCachedMiB: number;
  /** RSS of an api that served every feed twice with `FEED_CACHE_MB=1`: the baseline. */
  apiBaselineMiB: number;
  apiHeapMiB: number;
  apiExternalMiB: number;
  apiMemory: ApiMemoryVerdict;
  /** Measured at the largest step only. */
  restart: Restart | undefined;
  figures: Record<string, number | string>;
}

/** The restart cost (see `support/restart-cost.ts`). */
interface Restart extends RedisRestart {
  /** From spawning the fresh api until it listens. */
  apiStartSeconds: number;
  firstFeeds: FeedPass;
}

/** Runs the scale benchmark with the command line's flags (after the benchmark names). */
export async function runScaleBenchmark(argv: readonly string[] = []): Promise<Record<string, number | string>> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      sizes: { type: 'string' },
      quick: { type: 'boolean', default: false },
      out: { type: 'string' },
      'feed-cache-mb': { type: 'string', default: String(DEFAULT_FEED_CACHE_BYTES / MIB) },
    },
  });
  // Refused before anything starts rather than at the first step.
  const feedCacheMiB = feedCacheBudgetMiB(values['feed-cache-mb']);
  const sizes = values.sizes !== undefined ? parseSizes(values.sizes) : values.quick ? QUICK_SIZES : DEFAULT_SIZES;
  const started = new Date();
  const outBase = resolve(values.out ?? join('bench/.out/scale', started.toISOString().slice(0, 16).replace(':', '-')));
  const steps = sizes.map(population);
  const cleanup = new Cleanup();
  const results: StepResult[] = [];
  await mkdir(dirname(outBase), { recursive: true });
  try {
    const simulator = await privateSimulator(cleanup, simulatorSizes(steps[steps.length - 1] as Population));
    await simulatorControl(simulator.url, 'POST', '/_sim/faults', { kind: 'latency', latencyMs: LATENCY_MS });
    for (const step of steps) {
      const result = await measureStep(simulator, step, {
        feedCacheMiB,
        largest: step === steps[steps.length - 1],
        restartLog: `${outBase}.redis-restart.log`,
      });
      results.push(result);
      process.stdout.write(`${JSON.stringify({ benchmark: 'scale', step: step.sources, ...result.figures })}\n`);
    }
  } finally {
    await cleanup.run();
  }
  await writeFile(`${outBase}.csv`, csv(results));
  await writeChart(`${outBase}.png`, {
    title: `timetable-sync at university scale: ${sizes.join(' / ')} sources, UPSTREAM_RATE_LIMIT=${RATE_LIMIT}`,
    subtitle: [
      `${started.toISOString().slice(0, 16)}Z · upstream latency ${LATENCY_MS} ms · groups : teachers : personal = 1,500 : 3,500 : 15,000 · 2 workers × ${WORKER_CONCURRENCY} · subscribers ${SUBSCRIBER_RATE} feed requests/s · FEED_CACHE_MB=${feedCacheMiB}`,
      ...restartLine(results),
    ],
    xTitle: 'sources',
    panels: panels(results).map((panel) => ({ ...panel, markers: true })),
    panelHeight: 130,
  });
  const findings = growthVerdict(growthSeries(results));
  // A time measured over error answers is no figure: the run names it and exits nonzero.
  const failed = results.flatMap((result) =>
    Object.entries(result.figures)
      .filter(([, value]) => typeof value === 'string' && value.startsWith('FAILED'))
      .map(([name]) => `${result.population.sources}: ${name}`),
  );
  if (failed.length > 0) process.exitCode = 1;
  const unmet = results.flatMap((result) => goalsNotMet(result).map((goal) => `${result.population.sources}: ${goal}`));
  return {
    'FAILED figures': failed.length === 0 ? 'none' : failed.join('; '),
    [`footprint goals not met (Redis ≤ ${REDIS_GOAL_KB} KB per group or teacher, api RSS within budget + baseline; reported, not failed on)`]:
      unmet.length === 0 ? 'none' : unmet.join('; '),
    sizes: sizes.join(', '),
    'rate limit req/s': RATE_LIMIT,
    'feed cache budget MiB (passed as FEED_CACHE_MB)': feedCacheMiB,
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
    'restarted Redis log': `${outBase}.redis-restart.log`,
  };
}

/** How a step runs: the api's feed cache budget, and whether it is the largest (which measures the restart). */
interface StepOptions {
  feedCacheMiB: number;
  largest: boolean;
  /** Where the restarted Redis writes its output. */
  restartLog: string;
}

/** One step from nothing: its own Redis, workers and api, stopped at the end. */
async function measureStep(simulator: RunningSimulator, step: Population, options: StepOptions): Promise<StepResult> {
  const cleanup = new Cleanup();
  try {
    return await measureStepIn(cleanup, simulator, step, options);
  } finally {
    await cleanup.run();
  }
}

async function measureStepIn(
  cleanup: Cleanup,
  simulator: RunningSimulator,
  step: Population,
  options: StepOptions,
): Promise<StepResult> {
  const setupStarted = Date.now();
  const dir = await tempDir(cleanup, 'scale');
  const redisUrl = await privateRedis(cleanup, join(dir, 'redis'));
  const env = {
    ...imageAllocator(),
    ...serviceEnvironment(redisUrl, simulator.url),
    UPSTREAM_RATE_LIMIT: String(RATE_LIMIT),
    WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
    // Passed explicitly, so that the budget the RSS is judged against is the one the api was given.
    FEED_CACHE_MB: String(options.feedCacheMiB),
  };
  const { feedCacheMiB } = options;
  const opened = openServiceContext({
    config: loadConfig({ ...env, PORT: '1', UPSTREAM_RATE_LIMIT: String(SETUP_RATE_LIMIT) }),
    logger: silentLogger(),
    redis: redisUrl,
    role: 'bench',
  });
  // Closed before a restart of Redis (its connections would wait for the server forever), else at cleanup.
  let closing: Promise<void> | undefined;
  const closeContext = () => {
    closing ??= opened.close();
    return closing;
  };
  cleanup.add('bench context', closeContext);
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
      redisUrl,
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
  // The clients' mix of encodings, so that the identity and brotli forms the api caches are there too; twice,
  // as the baseline api is given them.
  const warm = await feedPasses(api.url, paths);
  const apiCachedMiB = warmedRss(warm, await rssMiB(api.pid));
  // What of the RSS is live JavaScript objects and what Buffers (feeds), garbage not yet collected included.
  const page = await scrape(`${api.url}/metrics`);
  const apiHeapMiB = (metricSum(page, 'timetable_nodejs_heap_size_used_bytes') ?? Number.NaN) / MIB;
  const apiExternalMiB = (metricSum(page, 'timetable_nodejs_external_memory_bytes') ?? Number.NaN) / MIB;
  const apiBudgetMiB = (page.get('timetable_feed_cache_budget_bytes{cache="feeds"}') ?? Number.NaN) / MIB;
  const apiCacheMiB = (page.get('timetable_feed_cache_bytes{cache="feeds"}') ?? Number.NaN) / MIB;
  const redisUsedMiB = (await redisMemory(ctx.redis)).used;
  const scanner = new Redis(redisUrl, { lazyConnect: true });
  await scanner.connect();
  const breakdown = await redisBreakdown(scanner, ctx.config.redisPrefix).finally(() => scanner.quit());
  const kbPerSource = (bytes: number) => bytes / 1024 / step.sources;
  const feedFields = Object.entries(breakdown.feedFields).sort(([, a], [, b]) => b - a);
  const storedFeedBytes = feedFields.reduce((sum, [, bytes]) => sum + bytes, 0);
  const redisPerSource = perSourceKB(breakdown.bySource, redisUsedMiB * MIB, step);
  // After Redis is measured: a fresh api records the first use of every personal token it serves.
  const baseline = await measureBaseline(cleanup, { env, dir, paths });
  const apiBaselineMiB = baseline.rssMiB;
  const apiMemory = apiMemoryVerdict({ cachedMiB: apiCachedMiB, baselineMiB: apiBaselineMiB, budgetMiB: feedCacheMiB });
  const floorSeconds = step.sources / RATE_LIMIT;
  let restart: Restart | undefined;
  if (options.largest) {
    for (const child of [api, ...workers]) await child.stop();
    await closeContext();
    // The embedded Redis keeps its files in `redis` under the data folder it was given.
    restart = await measureRestart(cleanup, {
      redisUrl,
      redisDir: join(dir, 'redis', 'redis'),
      redisLog: options.restartLog,
      env,
      dir,
      paths,
    });
  }
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
    redisPerSource,
    feedMiB: storedFeedBytes / MIB,
    feedCacheMiB,
    apiIdleMiB,
    apiCachedMiB,
    apiBaselineMiB,
    apiHeapMiB,
    apiExternalMiB,
    apiMemory,
    restart,
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
      'Redis KB per source, groups and teachers (all state, shared keys apportioned)': round(
        redisPerSource.groupsAndTeachers,
      ),
      [`Redis goal: ≤ ${REDIS_GOAL_KB} KB per group or teacher`]: redisGoalMet(redisPerSource) ? 'met' : 'not met',
      'Redis KB per source, personal subscriptions': round(redisPerSource.personal),
      'Redis empty MiB': round(redisBaselineMiB),
      'Redis commands per source refreshed (steady cycle, subscribers included)': round(cycleCommands / step.sources),
      'Redis commands/s while idle': round(idleCommandsPerSecond),
      'Redis KB per source by kind': KEY_KINDS.filter((kind) => breakdown.byKind[kind].keys > 0)
        .map(
          (kind) => `${kind} ${round(kbPerSource(breakdown.byKind[kind].bytes))} (${breakdown.byKind[kind].keys} keys)`,
        )
        .join(', '),
      'stored feeds MiB (every field of the feed hashes)': round(storedFeedBytes / MIB),
      'stored feed KB per source by field': feedFields
        .map(([field, bytes]) => `${field} ${round(kbPerSource(bytes), 3)}`)
        .join(', '),
      'feed cache budget MiB: passed as FEED_CACHE_MB / as the api reports it': budgetFigure(
        feedCacheMiB,
        apiBudgetMiB,
      ),
      'feed cache MiB counted, every feed requested (it fills 3/4 of the budget)': round(apiCacheMiB),
      'api RSS MiB idle / every feed requested / baseline (FEED_CACHE_MB=1)': `${round(apiIdleMiB)} / ${round(apiCachedMiB)} / ${round(apiBaselineMiB)}`,
      'api RSS MiB every feed requested vs budget + baseline': `${round(apiCachedMiB)} vs ${feedCacheMiB} + ${round(apiBaselineMiB)} = ${round(apiMemory.limitMiB)}: ${apiMemory.text}`,
      'api RSS MiB every feed requested vs budget + idle RSS (the first baseline)': `${round(apiCachedMiB)} vs ${round(feedCacheMiB + apiIdleMiB)}`,
      'allocator settings of the service processes': Object.entries(imageAllocator())
        .map(([name, value]) => `${name}=${value}`)
        .join(' '),
      'api heap used / external (Buffers) MiB, every feed requested': `${round(apiHeapMiB)} / ${round(apiExternalMiB)}`,
      'every feed requested twice (mostly gzip, some br, some identity): feeds, seconds': warm
        .map(feedPassFigure)
        .join('; '),
      'baseline api (FEED_CACHE_MB=1), every feed twice: feeds, seconds': baseline.passes
        .map(feedPassFigure)
        .join('; '),
      'feed p99 ms publish / steady': `${round(publish.feedP99Ms)} / ${round(steady.feedP99Ms)}`,
      ...publish.figures,
      ...steady.figures,
      ...(restart === undefined ? {} : restartFigures(restart)),
    },
  };
}

/**
 * The restart cost, once the step is measured and its processes stopped: Redis restarts from its AOF (see
 * `support/restart-cost.ts`), and a fresh api serves {@link FIRST_FEEDS} distinct feeds spread over the mix
 * with a cold cache (no worker runs: every feed is published, nothing needs refreshing).
 */
async function measureRestart(
  cleanup: Cleanup,
  step: {
    redisUrl: string;
    redisDir: string;
    redisLog: string;
    env: Record<string, string>;
    dir: string;
    paths: readonly string[];
  },
): Promise<Restart> {
  const redis = await restartRedisFromAof(cleanup, step.redisUrl, step.redisDir, step.redisLog);
  const apiStarted = Date.now();
  const api = await spawnRole(cleanup, 'api', step.env, step.dir);
  const apiStartSeconds = (Date.now() - apiStarted) / 1000;
  const firstFeeds = await requestEachFeed(api.url, spreadSample(step.paths, FIRST_FEEDS));
  return { ...redis, apiStartSeconds, firstFeeds };
}

/**
 * The baseline of the api's memory (support/api-memory.ts): a fresh api with `FEED_CACHE_MB=` {@link
 * BASELINE_CACHE_MB} serves every feed twice in the clients' mix of codings, as the measured api is after its
 * cycles, and its RSS is read; then it stops.
 */
async function measureBaseline(
  cleanup: Cleanup,
  step: { env: Record<string, string>; dir: string; paths: readonly string[] },
): Promise<{ rssMiB: number; passes: FeedPass[] }> {
  const api = await spawnRole(cleanup, 'api', { ...step.env, FEED_CACHE_MB: String(BASELINE_CACHE_MB) }, step.dir);
  try {
    const passes = await feedPasses(api.url, step.paths);
    return { rssMiB: warmedRss(passes, await rssMiB(api.pid)), passes };
  } finally {
    await api.stop();
  }
}

/** Every feed of `paths` requested twice over, one pass after the other. */
async function feedPasses(apiUrl: string, paths: readonly string[]): Promise<FeedPass[]> {
  return [await requestEachFeed(apiUrl, paths), await requestEachFeed(apiUrl, paths)];
}

/**
 * The RSS read after `passes`, or NaN when an answer was not a 200 (an error costs no memory of a feed: the
 * verdict then says "not measured", and the passes' figures say FAILED).
 */
function warmedRss(passes: readonly FeedPass[], rss: number | null): number {
  return passes.some((pass) => pass.notOk > 0) ? Number.NaN : (rss ?? Number.NaN);
}

/** The footprint goal for Redis: at most {@link REDIS_GOAL_KB} per group or teacher, all state included. */
function redisGoalMet(perSource: PerSourceKB): boolean {
  return perSource.groupsAndTeachers <= REDIS_GOAL_KB;
}

/** The footprint goals (Redis per group or teacher, api RSS within budget + baseline) a step did not meet (an api RSS not measured is not within). */
function goalsNotMet(result: StepResult): string[] {
  return [
    ...(redisGoalMet(result.redisPerSource) ? [] : [`Redis ≤ ${REDIS_GOAL_KB} KB per group or teacher`]),
    ...(result.apiMemory.within ? [] : [`api RSS within budget + baseline (${result.apiMemory.text})`]),
  ];
}

/**
 * The budget as passed and as the api reports it (`timetable_feed_cache_budget_bytes`): a FAILED figure when
 * they differ, since the verdict would judge the api against a budget it was not given.
 */
function budgetFigure(passedMiB: number, reportedMiB: number): string {
  return reportedMiB === passedMiB
    ? `${passedMiB} / ${reportedMiB}`
    : `FAILED: passed ${passedMiB}, the api reports ${round(reportedMiB)}`;
}

function restartFigures(restart: Restart): Record<string, number | string> {
  return {
    'restart: AOF MiB (freshly rewritten: RDB preamble, no increments, the best case)': round(restart.aofBytes / MIB),
    'restart: AOF rewrite seconds (CONFIG SET appendonly yes until rewritten)': round(restart.rewriteSeconds),
    'restart: Redis AOF load seconds (spawn until PING and loading:0; best case, no increments)': round(
      restart.loadSeconds,
    ),
    'restart: keys without expiry, before shutdown = after loading': restart.keys,
    'restart: api start seconds': round(restart.apiStartSeconds),
    'restart: distinct feeds a fresh api served first (cold cache, mostly gzip): feeds, seconds': feedPassFigure(
      restart.firstFeeds,
    ),
  };
}

/** The restart cost for the chart's subtitle: a line if the run measured it. */
function restartLine(results: readonly StepResult[]): string[] {
  const measured = results.find((result) => result.restart !== undefined);
  const restart = measured?.restart;
  if (measured === undefined || restart === undefined) return [];
  return [
    `restart at ${measured.population.sources} sources: Redis loads its freshly rewritten ${round(restart.aofBytes / MIB)} MiB AOF (best case) in ${round(restart.loadSeconds)} s; a fresh api serves ${restart.firstFeeds.feeds} distinct feeds: ${restart.firstFeeds.notOk === 0 ? `${round(restart.firstFeeds.seconds)} s` : feedPassFigure(restart.firstFeeds)}`,
  ];
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
      redis_kb_per_source_groups_teachers: round(result.redisPerSource.groupsAndTeachers),
      redis_kb_per_source_personal: round(result.redisPerSource.personal),
      redis_commands_per_source_refresh: round(result.cycleCommands / sources),
      redis_commands_per_s_idle: round(result.idleCommandsPerSecond),
      ...Object.fromEntries(
        KEY_KINDS.map((kind) => [
          `redis_kb_per_source_${kind.replaceAll(' ', '_')}`,
          round(result.byKind[kind].bytes / 1024 / sources, 3),
        ]),
      ),
      stored_feeds_mib: round(result.feedMiB),
      feed_cache_budget_mib: result.feedCacheMiB,
      api_rss_idle_mib: round(result.apiIdleMiB),
      api_rss_baseline_mib: round(result.apiBaselineMiB),
      api_rss_cached_mib: round(result.apiCachedMiB),
      api_heap_used_mib: round(result.apiHeapMiB),
      api_external_mib: round(result.apiExternalMiB),
      api_rss_within_budget_plus_baseline: result.apiMemory.within ? 'yes' : 'no',
      feed_p99_ms_publish: round(result.publishP99Ms),
      feed_p99_ms_steady: round(result.cycleP99Ms),
      api_cpu_s_publish: result.publishApiCpuSeconds,
      api_cpu_s_steady: result.cycleApiCpuSeconds,
      other_processes_cores_publish: result.publishOtherCores,
      other_processes_cores_steady: result.cycleOtherCores,
      // Empty but at the largest step, which alone measures the restart.
      restart_aof_mib: result.restart === undefined ? '' : round(result.restart.aofBytes / MIB),
      restart_redis_load_s: result.restart === undefined ? '' : round(result.restart.loadSeconds),
      restart_api_start_s: result.restart === undefined ? '' : round(result.restart.apiStartSeconds),
      restart_first_feeds_s:
        result.restart === undefined
          ? ''
          : result.restart.firstFeeds.notOk > 0
            ? 'FAILED'
            : round(result.restart.firstFeeds.seconds),
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
        ...series('all state, groups and teachers', (r) => r.redisPerSource.groupsAndTeachers),
        ...(['feed', 'snapshot', 'published digests', 'jobs kept'] as const).flatMap((kind) =>
          series(kind, (r) => r.byKind[kind].bytes / 1024 / r.population.sources),
        ),
      ],
    },
    {
      title: 'api RSS with every feed requested twice, the stored feeds, the cache budget plus the baseline',
      yTitle: 'MiB',
      points: [
        ...series('api RSS', (r) => r.apiCachedMiB),
        ...series('api RSS idle', (r) => r.apiIdleMiB),
        ...series('baseline api (FEED_CACHE_MB=1)', (r) => r.apiBaselineMiB),
        ...series('api external memory (Buffers)', (r) => r.apiExternalMiB),
        ...series('stored feeds', (r) => r.feedMiB),
        ...series('feed cache budget', (r) => r.feedCacheMiB),
        ...series('budget + baseline', (r) => r.apiMemory.limitMiB),
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
    {
      name: 'Redis memory per group or teacher (all state, shared keys apportioned)',
      growth: 'linear',
      unit: 'KB/source',
      points: points((r) => r.redisPerSource.groupsAndTeachers * r.population.sources),
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
    // Bounded by the budget (judged apart): at most linear. The baseline must not grow with the feeds.
    {
      name: 'api RSS above the baseline with every feed requested',
      growth: 'linear',
      unit: 'KB/source',
      points: points((r) => (r.apiCachedMiB - r.apiBaselineMiB) * 1024),
    },
    { name: 'api baseline RSS', growth: 'flat', unit: 'MiB', points: points((r) => r.apiBaselineMiB) },
    { name: 'feed p99 in the steady cycle', growth: 'flat', unit: 'ms', points: points((r) => r.cycleP99Ms) },
  ];
}
