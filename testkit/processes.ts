/**
 * Process plumbing of the benchmarks and the chaos suite: a cleanup stack that always runs, the service's roles
 * as child processes (`node bin/timetable-sync.js <role>`), private Redis and simulator, and small HTTP
 * helpers that send exactly the headers we ask for (Node's fetch adds `Accept-Encoding` on its own).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../src/logger.ts';
import { freePort, startEmbeddedRedis } from '../src/runtime/embedded-redis.ts';
import { type RunningSimulator, type SimulatorOptions, startSimulator } from '../src/simulator/index.ts';

const BIN = resolve(dirname(fileURLToPath(import.meta.url)), '../bin/timetable-sync.js');

/**
 * For the environment of every Node process a test starts: Node's on-disk cache of compiled modules (the one
 * `module.enableCompileCache()` uses by default), which spares each start about half the CPU of loading the
 * service's modules (1.4 s to 0.8 s), the lion's share of a start on a small, busy machine.
 */
export const NODE_CACHE_ENV: Readonly<Record<string, string>> = {
  NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), 'node-compile-cache'),
};

/**
 * Steps to undo, run in reverse order; every step runs even when an earlier one fails. Ctrl-C or SIGTERM
 * runs them too (Redis runs in its own process group and would otherwise outlive us).
 */
export class Cleanup {
  private readonly steps: { name: string; run: () => Promise<unknown> }[] = [];
  private running: Promise<void> | undefined;
  private readonly onSignal = (signal: NodeJS.Signals) => {
    void this.run().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };

  constructor() {
    process.once('SIGINT', this.onSignal);
    process.once('SIGTERM', this.onSignal);
  }

  add(name: string, run: () => Promise<unknown>): void {
    this.steps.push({ name, run });
  }

  /** Runs the steps; a second call (a signal during the benchmark's own cleanup) waits for the first. */
  run(): Promise<void> {
    this.running ??= this.runSteps();
    return this.running;
  }

  private async runSteps(): Promise<void> {
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
    for (const step of this.steps.splice(0).reverse()) {
      await step
        .run()
        .catch((error: unknown) => process.stderr.write(`bench cleanup "${step.name}" failed: ${String(error)}\n`));
    }
  }
}

/** A private temp folder (readable by nginx's unprivileged workers), removed at cleanup. */
export async function tempDir(cleanup: Cleanup, label: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `tts-bench-${label}-`));
  await chmod(dir, 0o755);
  cleanup.add(`rm ${dir}`, () => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A private redis-server without persistence, stopped at cleanup. */
export async function privateRedis(cleanup: Cleanup, dataDir: string): Promise<string> {
  const redis = await startEmbeddedRedis({ dataDir, logger: silentLogger(), persistence: false, shared: false });
  cleanup.add('redis', redis.stop);
  return redis.url;
}

/** The bundled simulator (seed 1, its default sizes unless `sizes` says) on a free port, closed at cleanup. */
export async function privateSimulator(
  cleanup: Cleanup,
  sizes: Pick<SimulatorOptions, 'groups' | 'employees' | 'users'> = {},
): Promise<RunningSimulator> {
  const simulator = await startSimulator({ ...sizes, port: 0, seed: 1 });
  cleanup.add('simulator', simulator.close);
  return simulator;
}

/** Settings of the service's child processes, as environment variables. */
export interface ServiceEnvironment {
  [name: string]: string;
  ADMIN_TOKEN: string;
}

/** The environment every service child shares; a random admin token and secret key per run. */
export function serviceEnvironment(redisUrl: string, upstreamUrl: string): ServiceEnvironment {
  return {
    REDIS_URL: redisUrl,
    REDIS_PREFIX: `bench-${randomBytes(4).toString('hex')}`,
    UNIVERSITY_API_URL: upstreamUrl,
    LOG_LEVEL: 'warn',
    ADMIN_TOKEN: randomBytes(24).toString('hex'),
    SECRET_KEY: randomBytes(32).toString('hex'),
    // Ticks of the job schedulers come one interval after activation: keep them out of the measured cycles.
    REFRESH_INTERVAL: '12h',
  };
}

/** A service role running as a child process. */
export interface ServiceChild {
  role: string;
  url: string;
  pid: number;
  /** The tail of what it wrote to stderr (warnings and errors at LOG_LEVEL=warn). */
  stderr(): string;
  /** Stops it now (SIGTERM, then SIGKILL after 10 s), e.g. to restart a role mid-run. */
  stop(): Promise<void>;
  /** How it ended (`exit 1`, `SIGKILL`), once it has; undefined while it runs. */
  ended(): string | undefined;
}

/**
 * glibc's allocator settings of the Docker image (its `ENV MALLOC_…` line; a test keeps the two equal), which the
 * scale benchmark and scripts/feed-cache-memory.ts apply to the service's processes unless the environment says
 * otherwise ({@link imageAllocator}): the api memory they judge is then the deployment we ship.
 */
export const IMAGE_ALLOCATOR: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '32768',
};

/** {@link IMAGE_ALLOCATOR}, each value replaced by the benchmark's own environment's when that sets it. */
export function imageAllocator(): Record<string, string> {
  return Object.fromEntries(Object.entries(IMAGE_ALLOCATOR).map(([name, value]) => [name, process.env[name] ?? value]));
}

/**
 * What a deployment tunes outside the service's settings, taken from the benchmark's own environment for every
 * service process: glibc's allocator (`MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_` and the like) and V8's flags
 * given as `SERVICE_NODE_OPTIONS` (passed on as `NODE_OPTIONS`, not applied to the benchmark itself).
 */
export function processTuning(): Record<string, string> {
  const tuning: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env))
    if (name.startsWith('MALLOC_') && value !== undefined) tuning[name] = value;
  if (process.env.SERVICE_NODE_OPTIONS) tuning.NODE_OPTIONS = process.env.SERVICE_NODE_OPTIONS;
  return tuning;
}

/**
 * Starts `timetable-sync <role>` with `env` (plus PATH, HOME, a free PORT and {@link processTuning}: nothing else
 * leaks in from the shell), waits for its "is running on URL" line, and stops it with SIGTERM (then SIGKILL) at
 * cleanup.
 */
export async function spawnRole(
  cleanup: Cleanup,
  role: 'api' | 'worker' | 'start',
  env: Record<string, string>,
  cwd: string,
): Promise<ServiceChild> {
  const started = await startRoleProcess(BIN, role, { HOME: process.env.HOME ?? cwd, ...processTuning(), ...env }, cwd);
  cleanup.add(`${role} ${started.pid}`, () => started.stop());
  return started;
}

/** A role of the service running as a child process, ready (it said where it serves). */
export interface RoleProcess extends ServiceChild {
  readonly child: ChildProcess;
  /** Resolves once the process has exited. */
  readonly exited: Promise<void>;
  /** SIGTERM (then SIGKILL after 10 s), or `signal` (e.g. SIGKILL); resolves once the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts `node <script> <role>` (the service's bin, or a test's own composition of it) with `env` plus PATH and a
 * free PORT (`env` may name its own): nothing else leaks in from the shell. Resolves once it printed "is running
 * on URL"; fails when it exits first or is not ready within 30 s.
 */
export async function startRoleProcess(
  script: string,
  role: string,
  env: Record<string, string>,
  cwd?: string,
): Promise<RoleProcess> {
  const port = String(await freePort());
  const child = spawn(process.execPath, [script, role], {
    ...(cwd === undefined ? {} : { cwd }),
    env: { PATH: process.env.PATH ?? '', PORT: port, ...NODE_CACHE_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  let errors = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (errors = (errors + chunk).slice(-20_000)));
  const url = await new Promise<string>((done, fail) => {
    let out = '';
    const timer = setTimeout(() => {
      // Not left behind: nobody gets a handle to stop it.
      child.kill('SIGKILL');
      fail(new Error(`${role} did not start within 30 s; stderr: ${errors}`));
    }, 30_000);
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const match = / is running on (http:\/\/\S+)/.exec(out);
      if (match?.[1]) {
        clearTimeout(timer);
        done(match[1]);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      fail(new Error(`${role} exited (${code ?? signal}) before it was ready; stderr: ${errors}`));
    });
  });
  return {
    role,
    url,
    pid: child.pid ?? 0,
    child,
    exited,
    stderr: () => errors,
    stop: async (signal) => {
      if (signal === undefined || signal === 'SIGTERM') return stopChild(child);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      await exited;
    },
    ended: () =>
      child.exitCode !== null ? `exit ${child.exitCode}` : child.signalCode !== null ? child.signalCode : undefined,
  };
}

/** SIGTERM, then SIGKILL after 10 s; resolves once the process has exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** A response read whole. */
export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/**
 * One HTTP request with exactly these headers (none added), body read whole. It fails when the socket stays
 * silent for `timeoutMs` (default 30 s): a hung server must end a benchmark, not stall it.
 */
export function rawRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<RawResponse> {
  return new Promise((done, fail) => {
    const timeoutMs = options.timeoutMs ?? 30_000;
    const req = request(
      url,
      { method: options.method ?? 'GET', headers: options.headers ?? {}, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', fail);
      },
    );
    req.on('timeout', () =>
      req.destroy(new Error(`${options.method ?? 'GET'} ${url}: no answer within ${timeoutMs} ms`)),
    );
    req.on('error', fail);
    req.end(options.body);
  });
}

/** GETs `url` until it answers 200 (a first feed request may answer 503 while its fetch runs). */
export async function getUntilOk(
  url: string,
  headers: Record<string, string> = {},
  timeoutMs = 60_000,
): Promise<RawResponse> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await rawRequest(url, { headers });
    if (response.status === 200) return response;
    if (Date.now() > deadline)
      throw new Error(`GET ${url} answered ${response.status}: ${response.body.toString().slice(0, 300)}`);
    await new Promise((wake) => setTimeout(wake, 500));
  }
}

/** The median of a non-empty list. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** Waits `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((wake) => setTimeout(wake, ms));
}
