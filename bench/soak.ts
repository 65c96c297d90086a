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
import { startFakeGoogle } from '../testkit/fake-google/index.ts';
import {
  Cleanup,
  privateRedis,
  privateSimulator,
  type ServiceChild,
  serviceEnvironment,
  sleep,
  spawnRole,
  tempDir,
} from '../testkit/processes.ts';
import { openBenchContext } from './support/bench-context.ts';
import { writeChart } from './support/chart.ts';
import { bytesPerKeptJob } from './support/soak-probes.ts';
import { judge, panels, progressLine } from './support/soak-report.ts';
import { csvValue, type Row, Sampler } from './support/soak-sampler.ts';
import {
  activateAndPublish,
  connectTargets,
  FAULTS,
  feedPath,
  injectFaults,
  publicSources,
  RoomChurn,
  signUps,
} from './support/soak-setup.ts';
import type { VerdictRules } from './support/soak-verdict.ts';
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
  const ctx = openBenchContext(cleanup, env, redisUrl);
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
  // Nothing else may write to Redis while the kept job history is measured (by dropping it).
  for (const child of children) await child.stop();
  const perJob = await bytesPerKeptJob(ctx.redis, [ctx.queues.refresh, ctx.queues.pushQueue('google')]);
  const rules: VerdictRules = {
    durationSeconds: total,
    maxGrowthPercentPerHour: maxGrowth,
    minJudgedSeconds: MIN_JUDGED_SECONDS,
    intervalSeconds: INTERVAL_SECONDS,
    // A fresh worker's RSS takes as long to level off as the first ones did (20–25 min in the first 60-min
    // run), so it gets the same warm-up as the run.
    restartWarmUpSeconds: total / 2,
  };
  const findings = judge(rows, names, rules, perJob ?? 1_024);
  log('');
  log(`feed requests: ${seen.requests}, by status ${JSON.stringify(seen.byStatus)}, transport errors ${seen.errors}`);
  log(`fake Google: ${JSON.stringify(fake.counts().errors)} error answers; ${fake.counts().writes} writes`);
  log(
    `Redis bytes per kept job (freed by dropping them at the end): ${perJob === null ? 'none kept' : Math.round(perJob)}`,
  );
  for (const finding of findings)
    log(`${finding.status.toUpperCase().padEnd(4)} ${finding.subject}: ${finding.message}`);
  const stderr = children
    .map((child, index) => ({ name: names[index], text: child.stderr().trim() }))
    .filter(({ text }) => text !== '');
  for (const { name, text } of stderr) log(`${name} stderr (tail): ${text.slice(-600)}`);
  await writeChart(pngPath, {
    title: `timetable-sync soak: ${minutes} min, ${sources.length + PERSONAL} sources, REFRESH_INTERVAL=1m`,
    subtitle: `${started.toISOString().slice(0, 16)}Z · ${GOOGLE_TARGETS} Google targets · ~${SUBSCRIBER_RATE} feed requests/s · faults: upstream ${FAULTS.upstreamSlow * 100} % slow, ${FAULTS.upstream500 * 100} % 500, ${FAULTS.upstreamTimeout * 100} % timeout; Google ${FAULTS.google503 * 100} % 503, ${FAULTS.google429 * 100} % 429 · ${restarts} worker restarts`,
    xTitle: 'minutes since the start of the measured run',
    panels: panels(rows, names, sampleSeconds),
  });
  log(`CSV: ${csvPath}\nPNG: ${pngPath}`);
  const failed = findings.filter((finding) => finding.status === 'fail');
  if (failed.length > 0) {
    process.stderr.write(`soak FAILED: ${failed.map((f) => `${f.subject}: ${f.message}`).join('; ')}\n`);
    return 1;
  }
  log('soak passed: no memory or queue grows without bound');
  return 0;
}

// Cleanup always runs: Redis and the children must not outlive a failed run.
let exitCode = 1;
try {
  exitCode = await soak();
} catch (error) {
  process.stderr.write(`soak failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
} finally {
  await cleanup.run();
}
process.exit(exitCode);
