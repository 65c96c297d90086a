/**
 * `npm run soak [-- --minutes 60 --sample-seconds 10 --out bench/.out/soak/NAME --restart-every 20]`: the
 * service under steady load and small random faults for an hour, sampled every few seconds into a CSV file
 * and drawn as a PNG chart; exits 1 when memory or a queue grows without bound (the rules are in
 * support/soak-verdict.ts, and docs/soak.md says how to read a run).
 *
 * Setup: a private redis-server; the simulator and the fake Google in this process; two `timetable-sync
 * worker` processes and one `timetable-sync api` as children, with REFRESH_INTERVAL=1m. 500 public sources
 * (400 groups, 100 teachers) are activated and published, 50 simulator users sign up through the API
 * (personal sources), and 10 groups get a Google calendar each (one fake user apiece). Then the measured run:
 * - subscribers request feeds at ~100/s (gzip, If-None-Match, a fifth on 20 hot feeds), every path alike;
 * - every interval, one class of each Google-connected group and of 10 more groups changes room, so that
 *   feeds are republished and pushes write;
 * - faults: 2 % of upstream answers 3 s late, 1 % answer 500, 0.2 % never answer; 1 % of Google answers are
 *   503 and 1 % are 429; every `--restart-every` minutes the second worker is stopped (SIGTERM) and started
 *   again, as a deploy would.
 * Each sample: RSS of every process, Redis memory, queue depths, event-loop lag p99 of every service process,
 * refresh and push jobs finished, feed requests (rate, p99 latency, errors), Google requests and writes,
 * upstream requests.
 */
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { silentLogger } from '../src/logger.ts';
import type { ServiceContext } from '../src/runtime/context.ts';
import { openServiceContext } from '../src/runtime/service-context.ts';
import { type FakeGoogle, startFakeGoogle } from '../test/fake-google/index.ts';
import { type Panel, type SeriesPoint, writeChart } from './support/chart.ts';
import {
  Cleanup,
  privateRedis,
  privateSimulator,
  type ServiceChild,
  serviceEnvironment,
  sleep,
  spawnRole,
  tempDir,
} from './support/processes.ts';
import {
  bytesPerKeptJob,
  metricSum,
  type QueueDepth,
  quantile,
  queueDepth,
  redisMemory,
  rssMiB,
  scrape,
} from './support/soak-probes.ts';
import {
  activateAndPublish,
  connectTargets,
  FAULTS,
  feedPath,
  injectFaults,
  publicSources,
  RoomChurn,
  signUps,
  simulatorControl,
} from './support/soak-setup.ts';
import {
  type Finding,
  memoryFinding,
  queueFindings,
  type TrendPoint,
  type VerdictRules,
} from './support/soak-verdict.ts';
import { startSubscribers } from './support/subscribers.ts';

const GROUPS = 400;
const EMPLOYEES = 100;
const PERSONAL = 50;
const GOOGLE_TARGETS = 10;
const CHURN_EXTRA_GROUPS = 10;
const SUBSCRIBER_RATE = 100;
const INTERVAL_SECONDS = 60;
/** 550 sources a minute is ~9 refreshes a second: the limit leaves room for retries and personal fetches. */
const UPSTREAM_RATE_LIMIT = 30;
/** Trend windows (the second half of the run) shorter than this are reported, not judged. */
const MIN_JUDGED_SECONDS = 10 * 60;

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '60' },
    'sample-seconds': { type: 'string', default: '10' },
    out: { type: 'string' },
    'restart-every': { type: 'string', default: '20' },
    'max-growth': { type: 'string', default: '10' },
  },
});
const minutes = Number(args.minutes);
const sampleSeconds = Number(args['sample-seconds']);
const restartEvery = Number(args['restart-every']);
const maxGrowth = Number(args['max-growth']);
if (![minutes, sampleSeconds, restartEvery, maxGrowth].every((n) => Number.isFinite(n) && n >= 0) || minutes <= 0)
  throw new Error('--minutes, --sample-seconds, --restart-every and --max-growth take non-negative numbers');
const started = new Date();
const outBase = resolve(args.out ?? join('bench/.out/soak', started.toISOString().slice(0, 16).replace(':', '-')));
const csvPath = `${outBase}.csv`;
const pngPath = `${outBase}.png`;

/** Sample columns, in CSV order. */
type Row = Record<string, number | string | null>;

const cleanup = new Cleanup();

async function soak(): Promise<number> {
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const dir = await tempDir(cleanup, 'soak');
  const redisUrl = await privateRedis(cleanup, join(dir, 'redis'));
  const simulator = await privateSimulator(cleanup);
  const fake = await startFakeGoogle();
  cleanup.add('fake google', fake.close);
  fake.latency(30);
  const env = {
    ...serviceEnvironment(redisUrl, simulator.url),
    REFRESH_INTERVAL: `${INTERVAL_SECONDS}s`,
    UPSTREAM_RATE_LIMIT: String(UPSTREAM_RATE_LIMIT),
    // Every sign-up comes from this one loopback client.
    SIGN_UPS_PER_CLIENT: '1000/1m',
    SIGN_UPS_TOTAL: '1000/1m',
    GOOGLE_CLIENT_ID: fake.clientId,
    GOOGLE_CLIENT_SECRET: fake.clientSecret,
    GOOGLE_API_ROOT_URL: fake.rootUrl,
    GOOGLE_OAUTH_TOKEN_URL: fake.tokenUrl,
    GOOGLE_OAUTH_AUTH_URL: fake.authUrl,
  };
  const children: ServiceChild[] = [
    await spawnRole(cleanup, 'api', env, dir),
    await spawnRole(cleanup, 'worker', env, dir),
    await spawnRole(cleanup, 'worker', env, dir),
  ];
  const names = ['api', 'worker-1', 'worker-2'];
  const opened = openServiceContext({
    config: loadConfig({ ...env, PORT: '1' }),
    logger: silentLogger(),
    redisUrl,
    role: 'bench',
  });
  cleanup.add('bench context', opened.close);
  const ctx = opened.context;
  const api = children[0] as ServiceChild;

  log(`soak setup: ${GROUPS + EMPLOYEES} public sources, ${PERSONAL} sign-ups, ${GOOGLE_TARGETS} Google targets`);
  const sources = await publicSources(simulator.url, GROUPS, EMPLOYEES);
  await activateAndPublish(ctx, api.url, env.ADMIN_TOKEN, sources);
  const personal = await signUps(simulator.url, api.url, PERSONAL);
  const targeted = sources.slice(0, GOOGLE_TARGETS);
  await connectTargets(ctx, fake, targeted);
  const churn = await RoomChurn.forGroups(simulator.url, sources.slice(0, GOOGLE_TARGETS + CHURN_EXTRA_GROUPS));
  await injectFaults(simulator.url, fake);
  const setupSeconds = Math.round((Date.now() - started.getTime()) / 1000);
  log(`soak setup done in ${setupSeconds} s; measuring ${minutes} min, a sample every ${sampleSeconds} s`);
  log(`CSV: ${csvPath}\nPNG: ${pngPath}`);

  const feeds = { statuses: [] as number[], latencies: [] as number[] };
  const subscribers = startSubscribers({
    apiUrl: api.url,
    paths: [...sources.map(feedPath), ...personal],
    requestsPerSecond: SUBSCRIBER_RATE,
    concurrency: 64,
    hotShare: 0.2,
    observe: (status, ms) => {
      feeds.statuses.push(status);
      feeds.latencies.push(ms);
    },
  });
  cleanup.add('subscribers', () => subscribers.stop());

  const rows: Row[] = [];
  const sampler = new Sampler({ ctx, children, names, simulatorUrl: simulator.url, fake, feeds });
  await sampler.sample(0); // the baseline of every counter
  await mkdir(dirname(csvPath), { recursive: true });
  const t0 = Date.now();
  const total = minutes * 60;
  let nextChurn = 0;
  let nextRestart = restartEvery > 0 ? restartEvery * 60 : Number.POSITIVE_INFINITY;
  let restarts = 0;
  for (let n = 1; ; n += 1) {
    const due = t0 + n * sampleSeconds * 1000;
    while (Date.now() < due) {
      const t = (Date.now() - t0) / 1000;
      if (t >= nextChurn) {
        await churn.change();
        nextChurn += INTERVAL_SECONDS;
      }
      if (t >= nextRestart) {
        nextRestart += restartEvery * 60;
        restarts += 1;
        const old = children[2] as ServiceChild;
        await old.stop();
        children[2] = await spawnRole(cleanup, 'worker', env, dir);
        log(`restarted worker-2 (pid ${old.pid} → ${children[2].pid})`);
      }
      await sleep(Math.min(1_000, Math.max(0, due - Date.now())));
    }
    const t = Math.min(total, Math.round((Date.now() - t0) / 1000));
    const row = await sampler.sample(t);
    if (rows.length === 0) await writeFile(csvPath, `${Object.keys(row).join(',')}\n`);
    rows.push(row);
    await appendFile(csvPath, `${Object.values(row).map(csvValue).join(',')}\n`);
    log(progressLine(row, total));
    const crashed = children.map((child, index) => ({ child, name: names[index] })).find((c) => c.child.ended());
    if (crashed)
      throw new Error(`${crashed.name} ended (${crashed.child.ended()}): ${crashed.child.stderr().slice(-1_500)}`);
    if (t >= total) break;
  }
  const seen = await subscribers.stop();
  const perJob = await bytesPerKeptJob(ctx.redis, ctx.queues.refresh);
  const rules: VerdictRules = {
    durationSeconds: total,
    maxGrowthPercentPerHour: maxGrowth,
    minJudgedSeconds: MIN_JUDGED_SECONDS,
    intervalSeconds: INTERVAL_SECONDS,
    restartWarmUpSeconds: 5 * 60,
  };
  const findings = judge(rows, names, rules, perJob ?? 1_024);
  await writeChart(pngPath, {
    title: `timetable-sync soak: ${minutes} min, ${sources.length + PERSONAL} sources, REFRESH_INTERVAL=1m`,
    subtitle: `${started.toISOString().slice(0, 16)}Z · ${GOOGLE_TARGETS} Google targets · ~${SUBSCRIBER_RATE} feed requests/s · faults: upstream ${FAULTS.upstreamSlow * 100} % slow, ${FAULTS.upstream500 * 100} % 500, ${FAULTS.upstreamTimeout * 100} % timeout; Google ${FAULTS.google503 * 100} % 503, ${FAULTS.google429 * 100} % 429 · ${restarts} worker restarts`,
    xTitle: 'minutes since the start of the measured run',
    panels: panels(rows, names, sampleSeconds),
  });
  log('');
  log(`feed requests: ${seen.requests}, by status ${JSON.stringify(seen.byStatus)}, transport errors ${seen.errors}`);
  log(`fake Google: ${JSON.stringify(fake.counts().errors)} error answers; ${fake.counts().writes} writes`);
  log(`Redis bytes per kept refresh job: ${perJob === null ? 'none kept' : Math.round(perJob)}`);
  for (const finding of findings)
    log(`${finding.status.toUpperCase().padEnd(4)} ${finding.subject}: ${finding.message}`);
  const stderr = children
    .map((child, index) => ({ name: names[index], text: child.stderr().trim() }))
    .filter(({ text }) => text !== '');
  for (const { name, text } of stderr) log(`${name} stderr (tail): ${text.slice(-600)}`);
  log(`CSV: ${csvPath}\nPNG: ${pngPath}`);
  const failed = findings.filter((finding) => finding.status === 'fail');
  if (failed.length > 0) {
    process.stderr.write(`soak FAILED: ${failed.map((f) => `${f.subject}: ${f.message}`).join('; ')}\n`);
    return 1;
  }
  log('soak passed: no memory or queue grows without bound');
  return 0;
}

/** Where a sample is read from; `children` is updated in place when a worker restarts. */
interface SampleSources {
  ctx: ServiceContext;
  children: ServiceChild[];
  names: readonly string[];
  simulatorUrl: string;
  fake: FakeGoogle;
  feeds: { statuses: number[]; latencies: number[] };
}

/** Reads every figure of one sample; counters are turned into amounts since the previous sample. */
class Sampler {
  private readonly last = new Map<string, number>();

  private readonly sources: SampleSources;

  constructor(sources: SampleSources) {
    this.sources = sources;
  }

  /** An amount since the previous sample of a counter; a counter that went down was restarted from 0. */
  private delta(key: string, value: number | null): number | null {
    if (value === null) return null;
    const before = this.last.get(key);
    this.last.set(key, value);
    if (before === undefined) return null;
    return value >= before ? value - before : value;
  }

  async sample(t: number): Promise<Row> {
    const row: Row = { time: new Date().toISOString(), elapsed_s: t };
    const pages = await Promise.all(this.sources.children.map((child) => scrape(`${child.url}/metrics`)));
    for (const [index, child] of this.sources.children.entries()) {
      const name = this.sources.names[index] as string;
      row[`${name}_pid`] = child.pid;
      row[`${name}_rss_mib`] = round(await rssMiB(child.pid));
    }
    row.driver_rss_mib = round(process.memoryUsage().rss / 2 ** 20);
    const redis = await redisMemory(this.sources.ctx.redis);
    row.redis_used_mib = round(redis.used);
    row.redis_rss_mib = round(redis.rss);
    for (const [index, page] of pages.entries()) {
      const lag = metricSum(page, 'timetable_nodejs_eventloop_lag_p99_seconds');
      row[`${this.sources.names[index]}_lag_p99_ms`] = lag === null ? null : round(lag * 1000);
    }
    const depths: Record<string, QueueDepth> = {
      refresh: await queueDepth(this.sources.ctx.queues.refresh),
      push: await queueDepth(this.sources.ctx.queues.push),
    };
    for (const [queue, depth] of Object.entries(depths)) {
      row[`${queue}_waiting`] = depth.waiting;
      row[`${queue}_active`] = depth.active;
      row[`${queue}_delayed`] = depth.delayed;
      row[`${queue}_kept`] = depth.kept;
    }
    for (const [metric, column] of [
      ['timetable_refresh_duration_seconds_count', 'refresh_done'],
      ['timetable_push_duration_seconds_count', 'push_done'],
    ] as const) {
      let sum = 0;
      for (const [index, page] of pages.entries()) {
        if (index === 0) continue; // the api runs no jobs
        sum += this.delta(`${column}:${this.sources.children[index]?.pid}`, metricSum(page, metric)) ?? 0;
      }
      row[column] = t === 0 ? 0 : sum;
    }
    const statuses = this.sources.feeds.statuses.splice(0);
    const latencies = this.sources.feeds.latencies.splice(0);
    const seconds = this.delta('feed_at', Date.now() / 1000) ?? Number.NaN;
    row.feed_requests = statuses.length;
    row.feed_rps = round(statuses.length / seconds);
    row.feed_p99_ms = round(quantile(latencies, 0.99));
    row.feed_errors = statuses.filter((status) => status === 0 || status >= 500).length;
    row.feed_error_rps = round(row.feed_errors / seconds);
    const google = this.sources.fake.counts();
    row.google_requests = this.delta('google_requests', google.total) ?? 0;
    row.google_writes = this.delta('google_writes', google.writes) ?? 0;
    row.google_faulted = this.delta('google_faulted', google.faulted) ?? 0;
    const stats = (await simulatorControl(this.sources.simulatorUrl, 'GET', '/_sim/stats')) as {
      requests: { total: number };
    };
    row.upstream_requests = this.delta('upstream', stats.requests.total) ?? 0;
    return row;
  }
}

function round(value: number | null): number | null {
  return value === null || !Number.isFinite(value) ? null : Math.round(value * 10) / 10;
}

function csvValue(value: number | string | null): string {
  return value === null ? '' : String(value);
}

function num(row: Row, key: string): number | null {
  const value = row[key];
  return typeof value === 'number' ? value : null;
}

/** `[ 3:20 / 60:00] RSS api 120 w1 95 w2 90 MiB · Redis 45 MiB · refresh 12 waiting …`. */
function progressLine(row: Row, total: number): string {
  const clock = (s: number) => `${Math.floor(s / 60)}:${String(Math.floor(s % 60)).padStart(2, '0')}`;
  const t = num(row, 'elapsed_s') ?? 0;
  const value = (key: string) => num(row, key) ?? '–';
  return `[${clock(t).padStart(5)} / ${clock(total)}] ${[
    `RSS api ${value('api_rss_mib')} w1 ${value('worker-1_rss_mib')} w2 ${value('worker-2_rss_mib')} MiB`,
    `Redis ${value('redis_used_mib')} MiB`,
    `refresh ${value('refresh_waiting')}+${value('refresh_active')} queued, ${value('refresh_done')} done`,
    `push ${value('push_waiting')}+${value('push_delayed')} queued, ${value('push_done')} done`,
    `lag p99 ${value('api_lag_p99_ms')}/${value('worker-1_lag_p99_ms')}/${value('worker-2_lag_p99_ms')} ms`,
    `feeds ${value('feed_rps')}/s p99 ${value('feed_p99_ms')} ms, ${value('feed_errors')} errors`,
    `Google ${value('google_writes')} writes`,
  ].join(' · ')}`;
}

/** Applies the rules of support/soak-verdict.ts to the samples. */
function judge(rows: readonly Row[], names: readonly string[], rules: VerdictRules, bytesPerJob: number): Finding[] {
  const series = (value: (row: Row) => number | null, epoch?: (row: Row) => number | string | null): TrendPoint[] =>
    rows.flatMap((row) => {
      const v = value(row);
      const t = num(row, 'elapsed_s');
      if (v === null || t === null) return [];
      const e = epoch?.(row);
      return [{ t, value: v, ...(e === undefined || e === null ? {} : { epoch: e }) }];
    });
  const findings: Finding[] = [];
  for (const name of names)
    findings.push(
      memoryFinding(
        `${name} RSS`,
        series(
          (row) => num(row, `${name}_rss_mib`),
          (row) => row[`${name}_pid`] ?? null,
        ),
        rules,
      ),
    );
  // Redis without the bounded history of finished jobs (see soak-verdict.ts).
  findings.push(
    memoryFinding(
      `Redis used_memory without the kept job history (${Math.round(bytesPerJob)} B a job)`,
      series((row) => {
        const used = num(row, 'redis_used_mib');
        const kept = (num(row, 'refresh_kept') ?? 0) + (num(row, 'push_kept') ?? 0);
        return used === null ? null : used - (kept * bytesPerJob) / 2 ** 20;
      }),
      rules,
    ),
  );
  for (const queue of ['refresh', 'push'])
    findings.push(
      ...queueFindings(
        `${queue} queue`,
        {
          depth: series(
            (row) =>
              (num(row, `${queue}_waiting`) ?? 0) +
              (num(row, `${queue}_active`) ?? 0) +
              (num(row, `${queue}_delayed`) ?? 0),
          ),
          done: series((row) => num(row, `${queue}_done`)),
        },
        rules,
      ),
    );
  return findings;
}

/** The chart's panels, from the samples. */
function panels(rows: readonly Row[], names: readonly string[], sampleSeconds: number): Panel[] {
  const points = (pairs: readonly (readonly [string, string])[]): SeriesPoint[] =>
    rows.flatMap((row) =>
      pairs.map(([series, key]) => ({ x: (num(row, 'elapsed_s') ?? 0) / 60, series, value: num(row, key) })),
    );
  return [
    {
      title: 'Memory of each process (resident set size)',
      yTitle: 'MiB',
      points: points([
        ...names.map((name) => [name, `${name}_rss_mib`] as const),
        ['redis-server', 'redis_rss_mib'],
        ['soak driver', 'driver_rss_mib'],
      ]),
    },
    {
      title: 'Redis memory',
      yTitle: 'MiB',
      points: points([
        ['used_memory', 'redis_used_mib'],
        ['used_memory_rss', 'redis_rss_mib'],
      ]),
    },
    {
      title: 'Queue depths (sampled)',
      yTitle: 'jobs',
      points: points([
        ['refresh waiting', 'refresh_waiting'],
        ['refresh active', 'refresh_active'],
        ['refresh delayed (retries)', 'refresh_delayed'],
        ['push waiting', 'push_waiting'],
        ['push active', 'push_active'],
        ['push delayed (retries)', 'push_delayed'],
      ]),
    },
    {
      title: 'Finished jobs Redis keeps (bounded by the queues’ retention counts)',
      yTitle: 'jobs',
      points: points([
        ['refresh', 'refresh_kept'],
        ['push', 'push_kept'],
      ]),
    },
    {
      title: 'Event-loop lag, p99 since the previous sample',
      yTitle: 'ms',
      points: points(names.map((name) => [name, `${name}_lag_p99_ms`] as const)),
    },
    {
      title: `Work done, per ${sampleSeconds} s sample`,
      yTitle: `count per ${sampleSeconds} s`,
      steps: true,
      points: points([
        ['refresh jobs finished', 'refresh_done'],
        ['push jobs finished', 'push_done'],
        ['upstream requests', 'upstream_requests'],
        ['Google API requests', 'google_requests'],
        ['Google writes', 'google_writes'],
        ['Google faults injected', 'google_faulted'],
      ]),
    },
    {
      title: `Feed requests (subscribers), per ${sampleSeconds} s sample`,
      yTitle: 'requests/s',
      points: points([
        ['answered', 'feed_rps'],
        ['5xx or transport errors', 'feed_error_rps'],
      ]),
    },
    {
      title: 'Feed latency, p99 of the requests of each sample',
      yTitle: 'ms',
      points: points([['p99', 'feed_p99_ms']]),
    },
  ];
}

// Last: the classes above must be initialised before the run uses them.
let exitCode = 1;
try {
  exitCode = await soak();
} catch (error) {
  process.stderr.write(`soak failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
} finally {
  await cleanup.run();
}
process.exit(exitCode);
