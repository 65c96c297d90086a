/**
 * Benchmark of feed serving (the goal: "feed serving ≥ 0.9× nginx, plain and gzip: same feed, same bytes, one core
 * each, alternating rounds; also report brotli and If-None-Match → 304 rates").
 *
 * Setup: a private redis-server, the simulator (in this process: it is idle while we measure), and the
 * service as child processes, `timetable-sync api` and `timetable-sync worker` (the worker fetches the feed
 * once on demand, then idles). The feed of a group of median size is requested once, so that it is
 * published and in the api's memory cache, and its exact bytes (identity, and the service's own gzip) are
 * written to a temp folder that nginx serves with `sendfile` and `gzip_static`.
 *
 * Three servers answer the same feed: the service (its fast path in front of fastify answers it:
 * src/serving/feed-fast-path.ts), the service's fastify routes (the same URL with a query they ignore,
 * `?via=routes`, which the fast path leaves to fastify: the same bytes and headers, so before and after in one
 * run), and nginx.
 * Codings: identity, gzip, br (Debian's nginx-light has no brotli module: the service's br rate is reported
 * alone) and 304s: `If-None-Match` with each server's own ETag of the gzip body.
 *
 * How the 2 cores are shared, and which numbers are the headline:
 * - Unpinned (headline): the node api process is one event loop, so it uses at most one core for serving
 *   (V8's GC helper threads aside); nginx runs `worker_processes 1`, also one core, like for like. wrk runs
 *   with 2 threads and takes whatever the server leaves; both servers face the same competition.
 * - Pinned: the server (api process, or nginx master and worker) on CPU 0, wrk with 1 thread on CPU 1, so
 *   that the load tool never steals the server's core. Cleaner, but a single wrk thread can become the limit.
 * - `worker_processes auto` (2 workers on 2 cores) is reported for reference only: the api's equivalent would
 *   be two api processes, and then wrk has no core left at all.
 * Every wrk run gets a 2 s warm-up first; the servers' runs alternate round by round, so that drift in the
 * machine's speed hits all alike; we report the median of the rounds and the ratio of the medians.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import {
  Cleanup,
  getUntilOk,
  median,
  privateRedis,
  privateSimulator,
  type RawResponse,
  rawRequest,
  serviceEnvironment,
  spawnRole,
  tempDir,
} from '../testkit/processes.ts';
import { CpuMeter, processCpuSeconds } from './support/cpu.ts';
import { hasCommand, pin, runWrk, startNginx, type WrkOptions } from './support/load.ts';

const ROUNDS = 3;
const SECONDS = 10;
const WARM_UP_SECONDS = 2;
const CONNECTIONS = 64;
const GZIP = { 'Accept-Encoding': 'gzip' };
const BROTLI = { 'Accept-Encoding': 'br' };

/** One server under load; `pids` for pinning; `headers` sent with each of its requests. */
interface Target {
  name: string;
  url: string;
  pids: () => Promise<number[]>;
  headers?: Record<string, string>;
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
  brotli: Buffer;
  /** The ETags of the gzip body, the service's and nginx's own. */
  etags: { service: string; nginx: string };
  service: Target;
  /** The service's fastify routes: the same feed by a URL the fast path leaves to them. */
  routes: Target;
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
  const brotli = await getUntilOk(`${api.url}${path}`, BROTLI);
  if (brotli.headers['content-encoding'] !== 'br')
    throw new Error('the service did not answer br to Accept-Encoding: br');
  const routesUrl = `${api.url}${path}?via=routes`;
  await checkSameAnswer(routesUrl, [plain, gzipped, brotli]);
  const root = join(dir, 'www');
  await mkdir(join(root, 'feeds/groups'), { recursive: true });
  await writeFile(join(root, path), plain.body);
  await writeFile(join(root, `${path}.gz`), gzipped.body);
  const nginx = await startNginx(cleanup, dir, root, 1);
  const nginxAuto = await startNginx(cleanup, dir, root, 'auto');
  const nginxEtag = await checkSameBytes(`${nginx.url}${path}`, plain.body, gzipped.body);
  const etags = { service: String(gzipped.headers.etag), nginx: nginxEtag };
  await checkNotModified(`${api.url}${path}`, etags.service);
  await checkNotModified(routesUrl, etags.service);
  await checkNotModified(`${nginx.url}${path}`, etags.nginx);
  return {
    group,
    plain: plain.body,
    gzipped: gzipped.body,
    brotli: brotli.body,
    etags,
    service: { name: 'service', url: `${api.url}${path}`, pids: async () => [api.pid] },
    routes: { name: 'routes', url: routesUrl, pids: async () => [api.pid] },
    nginx: { name: 'nginx', url: `${nginx.url}${path}`, pids: nginx.pids },
    nginxAuto: { name: 'nginx auto', url: `${nginxAuto.url}${path}`, pids: nginxAuto.pids },
    apiStderr: api.stderr,
  };
}

async function measure(cleanup: Cleanup, options: FeedServingOptions): Promise<Record<string, number | string>> {
  const servers = await startServers(cleanup, options);
  const { group, plain, gzipped, brotli, etags, service, routes, nginx: single, nginxAuto: auto } = servers;
  const cpu = new CpuMeter();
  await cpu.start();
  const load = loadAverage();
  const rounds = options.rounds ?? ROUNDS;
  const unpinned: WrkOptions = { threads: 2, connections: CONNECTIONS, seconds: SECONDS };
  const identity = await compare(rounds, [service, routes, single, auto], unpinned);
  const gzip = await compare(rounds, [service, routes, single], { ...unpinned, headers: GZIP });
  const br = await compare(rounds, [service, routes], { ...unpinned, headers: BROTLI });
  const notModified = await compare(
    rounds,
    [
      { ...service, headers: { ...GZIP, 'If-None-Match': etags.service } },
      { ...routes, headers: { ...GZIP, 'If-None-Match': etags.service } },
      { ...single, headers: { ...GZIP, 'If-None-Match': etags.nginx } },
    ],
    unpinned,
  );
  const pinned: WrkOptions = { threads: 1, connections: CONNECTIONS, seconds: SECONDS, cpus: '1' };
  const pinnedIdentity = await compare(rounds, [service, single], pinned, '0');
  const pinnedGzip = await compare(rounds, [service, single], { ...pinned, headers: GZIP }, '0');
  const used = await cpu.stop();
  const warnings = servers.apiStderr().trim();
  return {
    group: group.id,
    'group entries': group.entryCount,
    'feed bytes': plain.length,
    'feed gzip bytes': gzipped.length,
    'feed br bytes': brotli.length,
    wrk: `-t2 -c${CONNECTIONS} -d${SECONDS}s, ${rounds} rounds, median; pinned: server on CPU 0, wrk -t1 on CPU 1`,
    'service req/s': identity.rate('service'),
    'routes req/s': identity.rate('routes'),
    'nginx req/s': identity.rate('nginx'),
    'ratio service/nginx': identity.ratio('service', 'nginx'),
    'ratio routes/nginx': identity.ratio('routes', 'nginx'),
    'CPU µs/request service / routes / nginx': perRequest(identity),
    'CPU ratio service/nginx': identity.cpuRatio('service', 'nginx'),
    'gzip service req/s': gzip.rate('service'),
    'gzip routes req/s': gzip.rate('routes'),
    'gzip nginx req/s': gzip.rate('nginx'),
    'gzip ratio service/nginx': gzip.ratio('service', 'nginx'),
    'gzip ratio routes/nginx': gzip.ratio('routes', 'nginx'),
    'gzip CPU µs/request service / routes / nginx': perRequest(gzip),
    'gzip CPU ratio service/nginx': gzip.cpuRatio('service', 'nginx'),
    'gzip CPU ratio routes/nginx': gzip.cpuRatio('routes', 'nginx'),
    'br service req/s': br.rate('service'),
    'br routes req/s': br.rate('routes'),
    'br CPU µs/request service / routes': `${br.cpu('service')} / ${br.cpu('routes')}`,
    '304 service req/s': notModified.rate('service'),
    '304 routes req/s': notModified.rate('routes'),
    '304 nginx req/s': notModified.rate('nginx'),
    '304 ratio service/nginx': notModified.ratio('service', 'nginx'),
    '304 ratio routes/nginx': notModified.ratio('routes', 'nginx'),
    '304 CPU µs/request service / routes / nginx': perRequest(notModified),
    '304 CPU ratio service/nginx': notModified.cpuRatio('service', 'nginx'),
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
    'load average (1 min) at start / end': `${load} / ${loadAverage()}`,
    'target ratio': '≥ 0.9 plain and gzip',
    ...(warnings === '' ? {} : { 'api stderr': warnings.slice(0, 500) }),
  };
}

/** The CPU cost per request of the service, its routes and nginx, as `a / b / c` µs. */
function perRequest(comparison: Comparison): string {
  return ['service', 'routes', 'nginx'].map((name) => comparison.cpu(name)).join(' / ');
}

/** The 1-minute load average, to 2 decimals: how busy the machine was. */
function loadAverage(): string {
  return (loadavg()[0] ?? 0).toFixed(2);
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

/**
 * nginx must answer 200 with exactly the service's bytes, in both encodings, before anything is timed; resolves
 * to nginx's ETag of the gzip body.
 */
async function checkSameBytes(url: string, plain: Buffer, gzipped: Buffer): Promise<string> {
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
  if (typeof gzip.headers.etag !== 'string') throw new Error('nginx sent no ETag with the gzip body');
  return gzip.headers.etag;
}

/** The service's routes (`url`) must answer each coding with the bytes and headers the fast path sent. */
async function checkSameAnswer(url: string, expected: readonly RawResponse[]): Promise<void> {
  for (const answer of expected) {
    const encoding = answer.headers['content-encoding'];
    const headers = typeof encoding === 'string' ? { 'Accept-Encoding': encoding } : {};
    const got = await rawRequest(url, { headers });
    const same = (name: string) => got.headers[name] === answer.headers[name];
    if (
      got.status !== 200 ||
      !got.body.equals(answer.body) ||
      !['etag', 'content-encoding', 'content-length'].every(same)
    )
      throw new Error(`${url} (${String(encoding ?? 'identity')}) did not answer as the service's fast path did`);
  }
}

/** `url` must answer 304 to a gzip request with `etag` in If-None-Match before its rate is timed. */
async function checkNotModified(url: string, etag: string): Promise<void> {
  const answer = await rawRequest(url, { headers: { ...GZIP, 'If-None-Match': etag } });
  if (answer.status !== 304) throw new Error(`${url} answered ${answer.status} to If-None-Match: ${etag}`);
}

/** Medians of one comparison, by target name. */
interface Comparison {
  rate(name: string): number;
  p99(name: string): number;
  /** rate(a) / rate(b), to 3 decimals. */
  ratio(a: string, b: string): number;
  /** CPU time the server used per request, in µs (its own processes only, every thread). */
  cpu(name: string): number;
  /** cpu(b) / cpu(a), to 3 decimals: a's rate relative to b's if each had one core to itself. */
  cpuRatio(a: string, b: string): number;
}

/**
 * Measures each target in turn, round after round, and returns the median req/s, p99 latency and CPU per
 * request of each. With `serverCpus`, each target is pinned there while it is measured.
 */
async function compare(
  rounds: number,
  targets: readonly Target[],
  options: WrkOptions,
  serverCpus?: string,
): Promise<Comparison> {
  const rates = new Map<string, number[]>(targets.map((target) => [target.name, []]));
  const p99 = new Map<string, number[]>(targets.map((target) => [target.name, []]));
  const cpu = new Map<string, number[]>(targets.map((target) => [target.name, []]));
  for (let round = 0; round < rounds; round += 1) {
    for (const target of targets) {
      if (serverCpus !== undefined) await pin(await target.pids(), serverCpus);
      try {
        const own = { ...options, headers: { ...options.headers, ...target.headers } };
        await runWrk(target.url, { ...own, seconds: WARM_UP_SECONDS });
        const pids = await target.pids();
        const before = await processCpuSeconds(pids);
        const result = await runWrk(target.url, own);
        const used = (await processCpuSeconds(pids)) - before;
        if (result.errors > 0) throw new Error(`${target.name}: ${result.errors} errors or non-2xx answers under load`);
        rates.get(target.name)?.push(result.requestsPerSecond);
        p99.get(target.name)?.push(result.latencyP99Ms);
        cpu.get(target.name)?.push((used * 1e6) / result.requests);
      } finally {
        if (serverCpus !== undefined) await pin(await target.pids(), `0-${cpus().length - 1}`);
      }
    }
  }
  const rate = (name: string) => Math.round(median(rates.get(name) ?? [Number.NaN]));
  const cpuOf = (name: string) => Number(median(cpu.get(name) ?? [Number.NaN]).toFixed(1));
  return {
    rate,
    p99: (name) => Number(median(p99.get(name) ?? [Number.NaN]).toFixed(2)),
    ratio: (a, b) => Number((rate(a) / rate(b)).toFixed(3)),
    cpu: cpuOf,
    cpuRatio: (a, b) => Number((cpuOf(b) / cpuOf(a)).toFixed(3)),
  };
}
