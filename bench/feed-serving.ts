/**
 * Benchmark of feed serving (issue: "requests/s for one group's feed vs nginx serving the same bytes as a
 * static file, same load tool, same concurrency. Target ≥ 0.6×").
 *
 * Setup: a private redis-server, the simulator (in this process: it is idle while we measure), and the
 * service as child processes, `timetable-sync api` and `timetable-sync worker` (the worker fetches the feed
 * once on demand, then idles). The feed of a group of median size is requested once, so that it is
 * published and in the api's memory cache, and its exact bytes (identity, and the service's own gzip) are
 * written to a temp folder that nginx serves with `sendfile` and `gzip_static`.
 *
 * How the 2 cores are shared, and which numbers are the headline:
 * - Unpinned (headline): the node api process is one event loop, so it uses at most one core for serving
 *   (V8's GC helper threads aside); nginx runs `worker_processes 1`, also one core, like for like. wrk runs
 *   with 2 threads and takes whatever the server leaves; both servers face the same competition.
 * - Pinned: the server (api process, or nginx master and worker) on CPU 0, wrk with 1 thread on CPU 1, so
 *   that the load tool never steals the server's core. Cleaner, but a single wrk thread can become the limit.
 * - `worker_processes auto` (2 workers on 2 cores) is reported for reference only: the api's equivalent would
 *   be two api processes, and then wrk has no core left at all.
 * Every wrk run gets a 2 s warm-up first; service and nginx runs alternate round by round, so that drift in
 * the machine's speed hits both alike; we report the median of the rounds and the ratio of the medians.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { CpuMeter } from './support/cpu.ts';
import { hasCommand, pin, runWrk, startNginx, type WrkOptions } from './support/load.ts';
import {
  Cleanup,
  getUntilOk,
  median,
  privateRedis,
  privateSimulator,
  rawRequest,
  serviceEnvironment,
  spawnRole,
  tempDir,
} from './support/processes.ts';

const ROUNDS = 3;
const SECONDS = 10;
const WARM_UP_SECONDS = 2;
const CONNECTIONS = 64;
const GZIP = { 'Accept-Encoding': 'gzip' };

/** One server under load; `pids` for pinning. */
interface Target {
  name: string;
  url: string;
  pids: () => Promise<number[]>;
}

/** Options of {@link runFeedServingBenchmark}, for investigations (`npm run bench` passes none). */
export interface FeedServingOptions {
  /** NODE_OPTIONS of the api process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/profiles`. */
  apiNodeOptions?: string;
  /** Measured rounds per comparison; default 3. */
  rounds?: number;
}

/** Runs the feed-serving benchmark and returns its figures. */
export async function runFeedServingBenchmark(
  options: FeedServingOptions = {},
): Promise<Record<string, number | string>> {
  for (const command of ['wrk', 'nginx', 'taskset']) {
    if (!(await hasCommand(command)))
      throw new Error(`${command} is not installed (Debian: apt-get install wrk nginx-light util-linux)`);
  }
  const cleanup = new Cleanup();
  try {
    return await measure(cleanup, options);
  } finally {
    await cleanup.run();
  }
}

/** The servers under test, serving the same feed. */
interface Servers {
  group: { id: number; entryCount: number };
  plain: Buffer;
  gzipped: Buffer;
  service: Target;
  nginx: Target;
  nginxAuto: Target;
  apiStderr: () => string;
}

/** Redis, simulator, api and worker; one feed published and copied to nginx's folder; both checked. */
async function startServers(cleanup: Cleanup, options: FeedServingOptions): Promise<Servers> {
  const dir = await tempDir(cleanup, 'feeds');
  const redisUrl = await privateRedis(cleanup, join(dir, 'redis'));
  const simulator = await privateSimulator(cleanup);
  const env = serviceEnvironment(redisUrl, simulator.url);
  const api = await spawnRole(
    cleanup,
    'api',
    options.apiNodeOptions === undefined ? env : { ...env, NODE_OPTIONS: options.apiNodeOptions },
    dir,
  );
  await spawnRole(cleanup, 'worker', env, dir);
  const group = await medianGroup(simulator.url);
  const path = `/feeds/groups/${group.id}.ics`;
  // The first request fetches the feed on demand; the next ones are served from the api's memory cache.
  const plain = await getUntilOk(`${api.url}${path}`);
  const gzipped = await getUntilOk(`${api.url}${path}`, GZIP);
  if (gzipped.headers['content-encoding'] !== 'gzip')
    throw new Error('the service did not answer gzip to Accept-Encoding: gzip');
  const root = join(dir, 'www');
  await mkdir(join(root, 'feeds/groups'), { recursive: true });
  await writeFile(join(root, path), plain.body);
  await writeFile(join(root, `${path}.gz`), gzipped.body);
  const nginx = await startNginx(cleanup, dir, root, 1);
  const nginxAuto = await startNginx(cleanup, dir, root, 'auto');
  await checkSameBytes(`${nginx.url}${path}`, plain.body, gzipped.body);
  return {
    group,
    plain: plain.body,
    gzipped: gzipped.body,
    service: { name: 'service', url: `${api.url}${path}`, pids: async () => [api.pid] },
    nginx: { name: 'nginx', url: `${nginx.url}${path}`, pids: nginx.pids },
    nginxAuto: { name: 'nginx auto', url: `${nginxAuto.url}${path}`, pids: nginxAuto.pids },
    apiStderr: api.stderr,
  };
}

async function measure(cleanup: Cleanup, options: FeedServingOptions): Promise<Record<string, number | string>> {
  const {
    group,
    plain,
    gzipped,
    service,
    nginx: single,
    nginxAuto: auto,
    apiStderr,
  } = await startServers(cleanup, options);
  const cpu = new CpuMeter();
  await cpu.start();
  const rounds = options.rounds ?? ROUNDS;
  const unpinned: WrkOptions = { threads: 2, connections: CONNECTIONS, seconds: SECONDS };
  const identity = await compare(rounds, [service, single, auto], unpinned);
  const gzip = await compare(rounds, [service, single], { ...unpinned, headers: GZIP });
  const pinned: WrkOptions = { threads: 1, connections: CONNECTIONS, seconds: SECONDS, cpus: '1' };
  const pinnedIdentity = await compare(rounds, [service, single], pinned, '0');
  const pinnedGzip = await compare(rounds, [service, single], { ...pinned, headers: GZIP }, '0');
  const used = await cpu.stop();
  const warnings = apiStderr().trim();
  return {
    group: group.id,
    'group entries': group.entryCount,
    'feed bytes': plain.length,
    'feed gzip bytes': gzipped.length,
    wrk: `-t2 -c${CONNECTIONS} -d${SECONDS}s, ${rounds} rounds, median; pinned: server on CPU 0, wrk -t1 on CPU 1`,
    'service req/s': identity.rate('service'),
    'nginx req/s': identity.rate('nginx'),
    'ratio service/nginx': identity.ratio('service', 'nginx'),
    'gzip service req/s': gzip.rate('service'),
    'gzip nginx req/s': gzip.rate('nginx'),
    'gzip ratio service/nginx': gzip.ratio('service', 'nginx'),
    'pinned service req/s': pinnedIdentity.rate('service'),
    'pinned nginx req/s': pinnedIdentity.rate('nginx'),
    'pinned ratio service/nginx': pinnedIdentity.ratio('service', 'nginx'),
    'pinned gzip service req/s': pinnedGzip.rate('service'),
    'pinned gzip nginx req/s': pinnedGzip.rate('nginx'),
    'pinned gzip ratio service/nginx': pinnedGzip.ratio('service', 'nginx'),
    'nginx worker_processes auto req/s': identity.rate('nginx auto'),
    'ratio service/nginx auto': identity.ratio('service', 'nginx auto'),
    'service p99 ms': identity.p99('service'),
    'nginx p99 ms': identity.p99('nginx'),
    'CPU cores used by the benchmark / by other processes': `${used.ours} / ${used.others}`,
    'target ratio': '≥ 0.6',
    ...(warnings === '' ? {} : { 'api stderr': warnings.slice(0, 500) }),
  };
}

/** The group whose timetable has the median number of entries: a typical feed. */
async function medianGroup(simulatorUrl: string): Promise<{ id: number; entryCount: number }> {
  const { groups } = (await (await fetch(`${simulatorUrl}/_sim/groups`)).json()) as {
    groups: { id: number; entryCount: number }[];
  };
  const sorted = [...groups].sort((a, b) => a.entryCount - b.entryCount || a.id - b.id);
  const group = sorted[Math.floor(sorted.length / 2)];
  if (!group) throw new Error('the simulator has no groups');
  return group;
}

/** nginx must answer 200 with exactly the service's bytes, in both encodings, before anything is timed. */
async function checkSameBytes(url: string, plain: Buffer, gzipped: Buffer): Promise<void> {
  const identity = await rawRequest(url);
  if (identity.status !== 200 || !identity.body.equals(plain))
    throw new Error(
      `nginx answered ${identity.status} with ${identity.body.length} bytes; the service ${plain.length}`,
    );
  const gzip = await rawRequest(url, { headers: GZIP });
  if (gzip.status !== 200 || gzip.headers['content-encoding'] !== 'gzip' || !gzip.body.equals(gzipped)) {
    throw new Error(
      `nginx gzip_static answered ${gzip.status} (${String(gzip.headers['content-encoding'])}) with ${gzip.body.length} bytes; the service ${gzipped.length}`,
    );
  }
}

/** Medians of one comparison, by target name. */
interface Comparison {
  rate(name: string): number;
  p99(name: string): number;
  /** rate(a) / rate(b), to 3 decimals. */
  ratio(a: string, b: string): number;
}

/**
 * Measures each target in turn, round after round, and returns the median req/s and p99 latency of each.
 * With `serverCpus`, each target is pinned there while it is measured.
 */
async function compare(
  rounds: number,
  targets: readonly Target[],
  options: WrkOptions,
  serverCpus?: string,
): Promise<Comparison> {
  const rates = new Map<string, number[]>(targets.map((target) => [target.name, []]));
  const p99 = new Map<string, number[]>(targets.map((target) => [target.name, []]));
  for (let round = 0; round < rounds; round += 1) {
    for (const target of targets) {
      if (serverCpus !== undefined) await pin(await target.pids(), serverCpus);
      try {
        await runWrk(target.url, { ...options, seconds: WARM_UP_SECONDS });
        const result = await runWrk(target.url, options);
        if (result.errors > 0) throw new Error(`${target.name}: ${result.errors} errors or non-2xx answers under load`);
        rates.get(target.name)?.push(result.requestsPerSecond);
        p99.get(target.name)?.push(result.latencyP99Ms);
      } finally {
        if (serverCpus !== undefined) await pin(await target.pids(), `0-${cpus().length - 1}`);
      }
    }
  }
  const rate = (name: string) => Math.round(median(rates.get(name) ?? [Number.NaN]));
  return {
    rate,
    p99: (name) => Number(median(p99.get(name) ?? [Number.NaN]).toFixed(2)),
    ratio: (a, b) => Number((rate(a) / rate(b)).toFixed(3)),
  };
}
