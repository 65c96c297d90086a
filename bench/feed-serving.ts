/**
 * Benchmark of feed serving. Goals: the api ≥ 0.9× a bare `node:http` server sending the same prebuilt bytes
 * (the service at Node's own floor), and the shipped caching proxy in front of the api ≥ 0.9× nginx serving
 * the same bytes as static files (public feeds at nginx speed on any machine); both plain and gzip. `304`s
 * (If-None-Match) are reported beside them.
 *
 * Setup: a private redis-server, the simulator (in this process: it is idle while we measure), and the
 * service as child processes, `timetable-sync api` and `timetable-sync worker` (the worker fetches the feed
 * once on demand, then idles). The feed of a group of median size is requested once, so that it is
 * published and in the api's memory cache; its exact bytes and headers (identity, and the service's own gzip)
 * are what the other servers send. Five servers answer the same feed:
 * - **api**: the service's fast path (src/serving/feed-fast-path.ts);
 * - **bare node**: a `node:http` process sending the api's bytes and headers, prebuilt (support/bare-feed-server.ts):
 *   Node's floor, so that api / bare node is the service's own cost whatever the machine;
 * - **warmed node**: the same bare server in a process that has first done what a running api does besides
 *   serving feeds, with the api's libraries (Redis commands, BullMQ jobs, fastify answering undici). Node's shared
 *   functions (events, streams, the parser's callbacks) have then met as many object shapes as in the api, which
 *   slows the same serving code: api / warmed node is what the service's own code costs, warmed node / bare node
 *   what the process's other work costs each request it serves;
 * - **proxy**: `deploy/run-proxy`, the shipped nginx config, in front of the api; every measured run starts
 *   with a probe that must answer `X-Cache-Status: HIT`, and the api's CPU during the proxy's runs is reported
 *   (near zero when the proxy answers from its cache);
 * - **nginx static**: nginx serving the same bytes as files (`sendfile`, `gzip_static` with the service's
 *   gzip bytes next to the file, ETag on), so that plain, gzip and `304` compare like for like.
 * Every server answers 200 with the api's exact bytes in both codings and 304 to its own ETag before anything is
 * timed. bare node / nginx static is the machine's figure of the day: how fast Node is against nginx here.
 *
 * How the 2 cores are shared, and which numbers are the headline:
 * - Unpinned (headline): each server is one process or one nginx worker, so it uses one core for serving; wrk
 *   runs with 2 threads and takes whatever the server leaves; every server faces the same competition.
 * - Pinned: the server (the api or bare node process, or nginx's master and worker) on CPU 0, wrk with 1 thread
 *   on CPU 1, so that the load tool never steals the server's core. Cleaner, but one wrk thread can be the limit.
 * Every wrk run gets a 2 s warm-up first; the servers' runs alternate round by round, so that drift in the
 * machine's speed hits all alike; we report the median of the rounds and the ratio of the medians. Every child
 * (redis, api, worker, both bare servers, both nginx) is stopped at the end, on failure and on Ctrl-C.
 */
import { spawn } from 'node:child_process';
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
  sleep,
  spawnRole,
  stopChild,
  tempDir,
} from '../testkit/processes.ts';
import { answerHeaders, type BareAnswers } from './support/bare-feed-server.ts';
import { CpuMeter, processCpuSeconds } from './support/cpu.ts';
import { hasCommand, pin, runWrk, startNginx, startProxy, type WrkOptions } from './support/load.ts';

const ROUNDS = 3;
const SECONDS = 10;
const WARM_UP_SECONDS = 2;
const CONNECTIONS = 64;
const GZIP = { 'Accept-Encoding': 'gzip' };
const BARE_SERVER = join(import.meta.dirname, 'support/bare-feed-server.ts');
export const NAMES = ['api', 'bare node', 'warmed node', 'proxy', 'nginx static'] as const;
export type Name = (typeof NAMES)[number];

/** One server under load; `pids` for pinning and CPU; `headers` sent with each of its requests. */
interface Target {
  name: Name;
  url: string;
  pids: () => Promise<number[]>;
  headers?: Record<string, string>;
  /** Run before each measured run with the run's headers: throws unless the server is ready to be timed. */
  ready?: (headers: Record<string, string>) => Promise<void>;
  /** Processes behind the server (the api behind the proxy), whose CPU during its runs is reported. */
  behind?: () => Promise<number[]>;
}

/** Options of {@link runFeedServingBenchmark}, for investigations (`npm run bench` passes none). */
export interface FeedServingOptions {
  /** NODE_OPTIONS of the api process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/profiles`. */
  apiNodeOptions?: string;
  /** NODE_OPTIONS of the bare node and warmed node processes, alike. */
  bareNodeOptions?: string;
  /** Measured rounds per comparison; default 3. */
  rounds?: number;
  /** Seconds of each measured wrk run; default 10. */
  seconds?: number;
  /** The servers measured (all five are started and checked all the same); default all. */
  servers?: readonly Name[];
  /** The answers measured, of `plain`, `gzip`, `304`, `pinned plain`, `pinned gzip`; default all. */
  answers?: readonly string[];
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
  targets: Record<Name, Target & { etag: string }>;
  /** How many probes before the proxy's measured runs answered each X-Cache-Status. */
  cacheStatuses: Map<string, number>;
  apiStderr: () => string;
}

/** Redis, simulator, api and worker; one feed published; the other four servers started on its bytes; all checked. */
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
  const apiEtag = String(gzipped.headers.etag);

  const answers = await bareAnswers(join(dir, 'bare'), api.url, path, plain, gzipped);
  const bare = await startBareNode(cleanup, answers, undefined, options.bareNodeOptions);
  const warmed = await startBareNode(cleanup, answers, redisUrl, options.bareNodeOptions);
  const root = join(dir, 'www');
  await mkdir(join(root, 'feeds/groups'), { recursive: true });
  await writeFile(join(root, path), plain.body);
  await writeFile(join(root, `${path}.gz`), gzipped.body);
  const nginx = await startNginx(cleanup, dir, root, 1);
  const proxy = await startProxy(cleanup, join(dir, 'proxy'), api.url);
  const cacheStatuses = new Map<string, number>();
  // Until the proxy holds both codings, its answers are MISSes: fill its cache before anything is compared.
  for (const headers of [{}, GZIP]) await proxyHit(`${proxy.url}${path}`, headers, new Map());

  const etags = {
    api: apiEtag,
    bare: await checkSameBytes('bare node', `${bare.url}${path}`, plain.body, gzipped.body),
    warmed: await checkSameBytes('warmed node', `${warmed.url}${path}`, plain.body, gzipped.body),
    nginx: await checkSameBytes('nginx static', `${nginx.url}${path}`, plain.body, gzipped.body),
    proxy: await checkSameBytes('proxy', `${proxy.url}${path}`, plain.body, gzipped.body),
  };
  await checkNotModified(`${api.url}${path}`, etags.api);
  await checkNotModified(`${bare.url}${path}`, etags.bare);
  await checkNotModified(`${warmed.url}${path}`, etags.warmed);
  await checkNotModified(`${nginx.url}${path}`, etags.nginx);
  await checkNotModified(`${proxy.url}${path}`, etags.proxy);
  const apiPids = async () => [api.pid];
  return {
    group,
    plain: plain.body,
    gzipped: gzipped.body,
    targets: {
      api: { name: 'api', url: `${api.url}${path}`, pids: apiPids, etag: etags.api },
      'bare node': { name: 'bare node', url: `${bare.url}${path}`, pids: bare.pids, etag: etags.bare },
      'warmed node': { name: 'warmed node', url: `${warmed.url}${path}`, pids: warmed.pids, etag: etags.warmed },
      proxy: {
        name: 'proxy',
        url: `${proxy.url}${path}`,
        pids: proxy.pids,
        etag: etags.proxy,
        ready: (headers) => proxyHit(`${proxy.url}${path}`, headers, cacheStatuses),
        behind: apiPids,
      },
      'nginx static': { name: 'nginx static', url: `${nginx.url}${path}`, pids: nginx.pids, etag: etags.nginx },
    },
    cacheStatuses,
    apiStderr: api.stderr,
  };
}

/**
 * Writes the api's own answers for `path` (200 and 304, plain and gzip), taken from the api itself, for the bare
 * servers to send, so that only the work around the bytes differs; returns the answers file.
 */
async function bareAnswers(
  dir: string,
  apiUrl: string,
  path: string,
  plain: RawResponse,
  gzipped: RawResponse,
): Promise<string> {
  await mkdir(dir, { recursive: true });
  const coded = async (name: string, answer: RawResponse, headers: Record<string, string>) => {
    const etag = String(answer.headers.etag);
    const notModified = await rawRequest(`${apiUrl}${path}`, { headers: { ...headers, 'If-None-Match': etag } });
    if (notModified.status !== 304) throw new Error(`the api answered ${notModified.status} to If-None-Match`);
    const bodyFile = join(dir, name);
    await writeFile(bodyFile, answer.body);
    return {
      ok: { headers: answerHeaders(answer.headers), bodyFile },
      notModified: { headers: answerHeaders(notModified.headers) },
      etag,
    };
  };
  const answers: BareAnswers = { plain: await coded('plain', plain, {}), gzip: await coded('gzip', gzipped, GZIP) };
  const file = join(dir, 'answers.json');
  await writeFile(file, JSON.stringify(answers));
  return file;
}

/**
 * Starts the bare `node:http` server on `answersFile`; with `warmUpRedis`, after using the api's libraries against
 * that Redis as a running api does (support/bare-feed-server.ts).
 */
async function startBareNode(
  cleanup: Cleanup,
  answersFile: string,
  warmUpRedis: string | undefined,
  nodeOptions: string | undefined,
): Promise<{ url: string; pids: () => Promise<number[]> }> {
  const name = warmUpRedis === undefined ? 'bare node' : 'warmed node';
  const warm = warmUpRedis === undefined ? [] : ['--warm', warmUpRedis];
  const child = spawn(process.execPath, [BARE_SERVER, answersFile, ...warm], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(nodeOptions === undefined ? {} : { env: { ...process.env, NODE_OPTIONS: nodeOptions } }),
  });
  cleanup.add(`${name} ${child.pid}`, () => stopChild(child));
  let errors = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
  const url = await new Promise<string>((done, fail) => {
    let out = '';
    // The warm-up takes about 4 s on a quiet machine, several times that on a busy one.
    const limitMs = warmUpRedis === undefined ? 10_000 : 60_000;
    const timer = setTimeout(
      () => fail(new Error(`${name} did not start within ${limitMs / 1000} s: ${errors}`)),
      limitMs,
    );
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const match = / is running on (http:\/\/\S+)/.exec(out);
      if (match?.[1]) {
        clearTimeout(timer);
        done(match[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`${name} exited (${code}) before it was ready: ${errors}`));
    });
  });
  return { url, pids: async () => [child.pid ?? 0] };
}

/**
 * Asks the proxy for `url` until it answers from its cache (`X-Cache-Status: HIT`; a copy past its max-age
 * answers EXPIRED, REVALIDATED or UPDATING once, then HIT again); counts every status seen in `seen`.
 */
async function proxyHit(url: string, headers: Record<string, string>, seen: Map<string, number>): Promise<void> {
  const statuses: string[] = [];
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const answer = await rawRequest(url, { headers });
    const status = String(answer.headers['x-cache-status'] ?? 'none');
    statuses.push(`${answer.status} ${status}`);
    seen.set(status, (seen.get(status) ?? 0) + 1);
    if (status === 'HIT') return;
    await sleep(100);
  }
  throw new Error(`the proxy did not answer ${url} from its cache: ${statuses.join(', ')}`);
}

async function measure(cleanup: Cleanup, options: FeedServingOptions): Promise<Record<string, number | string>> {
  const servers = await startServers(cleanup, options);
  const { group, plain, gzipped, targets } = servers;
  const selected = options.servers ?? NAMES;
  const all = NAMES.filter((name) => selected.includes(name)).map((name) => targets[name]);
  const cpu = new CpuMeter();
  await cpu.start();
  const load = loadAverage();
  const rounds = options.rounds ?? ROUNDS;
  const seconds = options.seconds ?? SECONDS;
  const unpinned: WrkOptions = { threads: 2, connections: CONNECTIONS, seconds };
  const pinned: WrkOptions = { threads: 1, connections: CONNECTIONS, seconds, cpus: '1' };
  // A list, not an object: the key '304' would come first in an object's order.
  const runs: [string, () => Promise<Comparison>][] = [
    ['plain', () => compare(rounds, all, unpinned)],
    ['gzip', () => compare(rounds, all, { ...unpinned, headers: GZIP })],
    [
      '304',
      () =>
        compare(
          rounds,
          all.map((target) => ({ ...target, headers: { ...GZIP, 'If-None-Match': target.etag } })),
          unpinned,
        ),
    ],
    ['pinned plain', () => compare(rounds, all, pinned, '0')],
    ['pinned gzip', () => compare(rounds, all, { ...pinned, headers: GZIP }, '0')],
  ];
  const answers: [string, Comparison][] = [];
  for (const [answer, run] of runs) if (options.answers?.includes(answer) ?? true) answers.push([answer, await run()]);
  const used = await cpu.stop();
  const endLoad = loadAverage();
  const warnings = servers.apiStderr().trim();
  process.stderr.write(table(answers));
  const behind = answers.reduce(
    (sum, [, comparison]) => ({
      seconds: sum.seconds + comparison.behindSeconds('proxy'),
      requests: sum.requests + comparison.requests('proxy'),
    }),
    { seconds: 0, requests: 0 },
  );
  const figures: Record<string, number | string> = {
    group: group.id,
    'group entries': group.entryCount,
    'feed bytes': plain.length,
    'feed gzip bytes': gzipped.length,
    wrk: `-t2 -c${CONNECTIONS} -d${seconds}s after ${WARM_UP_SECONDS}s warm-up, ${rounds} rounds, median; pinned: server on CPU 0, wrk -t1 on CPU 1`,
  };
  for (const [answer, comparison] of answers) {
    for (const name of NAMES) figures[`${answer} ${name} req/s`] = comparison.rate(name);
    figures[`${answer} ratio api/bare node`] = comparison.ratio('api', 'bare node');
    figures[`${answer} ratio api/warmed node`] = comparison.ratio('api', 'warmed node');
    figures[`${answer} ratio warmed node/bare node`] = comparison.ratio('warmed node', 'bare node');
    figures[`${answer} ratio proxy/nginx static`] = comparison.ratio('proxy', 'nginx static');
    figures[`${answer} ratio bare node/nginx static`] = comparison.ratio('bare node', 'nginx static');
    figures[`${answer} ratio api/nginx static`] = comparison.ratio('api', 'nginx static');
    figures[`${answer} CPU µs/request ${NAMES.join(' / ')}`] = NAMES.map((name) => comparison.cpu(name)).join(' / ');
  }
  return {
    ...figures,
    'proxy X-Cache-Status of the probes before its runs': [...servers.cacheStatuses]
      .map(([status, count]) => `${status} ${count}`)
      .join(', '),
    'api CPU during the proxy runs (s, µs per proxy request)': `${behind.seconds.toFixed(2)}, ${((behind.seconds * 1e6) / behind.requests).toFixed(2)}`,
    'CPU cores used by the benchmark / by other processes': `${used.ours} / ${used.others}`,
    'load average (1 min) at start / end': `${load} / ${endLoad}`,
    'target ratio': 'api/bare node ≥ 0.9 and proxy/nginx static ≥ 0.9, plain and gzip',
    ...(warnings === '' ? {} : { 'api stderr': warnings.slice(0, 500) }),
  };
}

/** The human-readable summary: req/s of each server per answer, and the ratios that carry the goals. */
function table(answers: readonly [string, Comparison][]): string {
  const header = [
    'answer',
    ...NAMES.map((name) => `${name} req/s`),
    'api/bare',
    'api/warmed',
    'proxy/nginx',
    'bare/nginx',
  ];
  const rows = answers.map(([answer, c]) => [
    answer,
    ...NAMES.map((name) => String(c.rate(name))),
    c.ratio('api', 'bare node').toFixed(3),
    c.ratio('api', 'warmed node').toFixed(3),
    c.ratio('proxy', 'nginx static').toFixed(3),
    c.ratio('bare node', 'nginx static').toFixed(3),
  ]);
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)))
      .join('  ');
  return `\nfeed-serving (goals: api/bare ≥ 0.9, proxy/nginx ≥ 0.9, plain and gzip; proxy runs each began with an X-Cache-Status: HIT probe)\n${[line(header), ...rows.map(line)].join('\n')}\n\n`;
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
 * `name` must answer 200 with exactly the api's bytes, in both codings, before anything is timed; resolves to its
 * ETag of the gzip body.
 */
async function checkSameBytes(name: string, url: string, plain: Buffer, gzipped: Buffer): Promise<string> {
  const identity = await rawRequest(url);
  if (identity.status !== 200 || identity.headers['content-encoding'] !== undefined || !identity.body.equals(plain))
    throw new Error(`${name} answered ${identity.status} with ${identity.body.length} bytes; the api ${plain.length}`);
  const gzip = await rawRequest(url, { headers: GZIP });
  if (gzip.status !== 200 || gzip.headers['content-encoding'] !== 'gzip' || !gzip.body.equals(gzipped)) {
    throw new Error(
      `${name} answered gzip with ${gzip.status} (${String(gzip.headers['content-encoding'])}) and ${gzip.body.length} bytes; the api ${gzipped.length}`,
    );
  }
  if (typeof gzip.headers.etag !== 'string') throw new Error(`${name} sent no ETag with the gzip body`);
  return gzip.headers.etag;
}

/** `url` must answer 304 to a gzip request with `etag` in If-None-Match before its rate is timed. */
async function checkNotModified(url: string, etag: string): Promise<void> {
  const answer = await rawRequest(url, { headers: { ...GZIP, 'If-None-Match': etag } });
  if (answer.status !== 304) throw new Error(`${url} answered ${answer.status} to If-None-Match: ${etag}`);
}

/** Medians of one comparison, by target name. */
interface Comparison {
  rate(name: string): number;
  /** rate(a) / rate(b), to 3 decimals. */
  ratio(a: string, b: string): number;
  /** CPU time the server used per request, in µs (its own processes only, every thread). */
  cpu(name: string): number;
  /** Requests answered in all measured runs of `name`. */
  requests(name: string): number;
  /** CPU-seconds the processes behind `name` used during its measured runs. */
  behindSeconds(name: string): number;
}

/**
 * Measures each target in turn, round after round, and returns the median req/s and CPU per request of each.
 * With `serverCpus`, each target is pinned there while it is measured.
 */
async function compare(
  rounds: number,
  targets: readonly Target[],
  options: WrkOptions,
  serverCpus?: string,
): Promise<Comparison> {
  const rates = new Map<string, number[]>(targets.map((target) => [target.name, []]));
  const cpu = new Map<string, number[]>(targets.map((target) => [target.name, []]));
  const requests = new Map<string, number>();
  const behind = new Map<string, number>();
  for (let round = 0; round < rounds; round += 1) {
    for (const target of targets) {
      if (serverCpus !== undefined) await pin(await target.pids(), serverCpus);
      try {
        const own = { ...options, headers: { ...options.headers, ...target.headers } };
        await runWrk(target.url, { ...own, seconds: WARM_UP_SECONDS });
        await target.ready?.(own.headers);
        const pids = await target.pids();
        const behindPids = (await target.behind?.()) ?? [];
        const before = await cpuByPid(pids);
        const behindBefore = await cpuByPid(behindPids);
        const result = await runWrk(target.url, own);
        const used = await cpuSince(before);
        const usedBehind = await cpuSince(behindBefore);
        if (result.errors > 0) throw new Error(`${target.name}: ${result.errors} errors or non-2xx answers under load`);
        rates.get(target.name)?.push(result.requestsPerSecond);
        cpu.get(target.name)?.push((used * 1e6) / result.requests);
        requests.set(target.name, (requests.get(target.name) ?? 0) + result.requests);
        behind.set(target.name, (behind.get(target.name) ?? 0) + usedBehind);
      } finally {
        if (serverCpus !== undefined) await pin(await target.pids(), `0-${cpus().length - 1}`);
      }
    }
  }
  const rate = (name: string) => Math.round(median(rates.get(name) ?? [Number.NaN]));
  return {
    rate,
    ratio: (a, b) => Number((rate(a) / rate(b)).toFixed(3)),
    cpu: (name) => Number(median(cpu.get(name) ?? [Number.NaN]).toFixed(1)),
    requests: (name) => requests.get(name) ?? 0,
    behindSeconds: (name) => behind.get(name) ?? 0,
  };
}

/** The CPU-seconds used so far by each of `pids`. */
async function cpuByPid(pids: readonly number[]): Promise<Map<number, number>> {
  return new Map(await Promise.all(pids.map(async (pid) => [pid, await processCpuSeconds([pid])] as const)));
}

/**
 * CPU-seconds used since `before` by the processes it holds that are still there: nginx's cache loader exits a
 * minute after the proxy starts, and its time is not the serving's.
 */
async function cpuSince(before: Map<number, number>): Promise<number> {
  let used = 0;
  for (const [pid, then] of before) {
    const now = await processCpuSeconds([pid]);
    if (Number.isFinite(now) && Number.isFinite(then)) used += now - then;
  }
  return used;
}
