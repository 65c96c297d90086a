/**
 * The load-test side of the feed-serving benchmark: Debian's nginx serving a static file from a config of
 * our own, the shipped proxy (deploy/run-proxy), wrk as the one load tool for every server, and CPU pinning
 * with taskset.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../src/runtime/embedded-redis.ts';
import { type Cleanup, sleep, stopChild } from '../../testkit/processes.ts';

const run = promisify(execFile);

/** True when `command` is on PATH. */
export async function hasCommand(command: string): Promise<boolean> {
  try {
    await run('sh', ['-c', `command -v ${command}`]);
    return true;
  } catch {
    return false;
  }
}

/** A running nginx master (its workers inherit its CPU affinity when they start). */
export interface RunningNginx {
  url: string;
  /** The master and worker process ids, for taskset. */
  pids(): Promise<number[]>;
}

/**
 * Starts nginx in the foreground on a free loopback port serving `root`: no access log, sendfile, keep-alive
 * with the shipped proxy's request limit (deploy/nginx.conf's `keepalive_requests`: wrk reconnects alike on
 * both), `gzip_static` so that a `.gz` next to a file is sent as is to clients that accept gzip, and ETags
 * (nginx's default, said so: the benchmark's `304`s need them). Every path nginx writes is under `dir`.
 */
export async function startNginx(
  cleanup: Cleanup,
  dir: string,
  root: string,
  workerProcesses: number | 'auto',
): Promise<RunningNginx> {
  const port = await freePort();
  const prefix = join(dir, `nginx-${workerProcesses}`);
  await mkdir(join(prefix, 'temp'), { recursive: true });
  const conf = join(prefix, 'nginx.conf');
  await writeFile(
    conf,
    `daemon off;
worker_processes ${workerProcesses};
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  etag on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_timeout 65;
  keepalive_requests 10000;
  types { }
  default_type text/calendar;
  client_body_temp_path ${prefix}/temp/body;
  proxy_temp_path ${prefix}/temp/proxy;
  fastcgi_temp_path ${prefix}/temp/fastcgi;
  uwsgi_temp_path ${prefix}/temp/uwsgi;
  scgi_temp_path ${prefix}/temp/scgi;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    location / { gzip_static on; }
  }
}
`,
  );
  // -e: the error log before the config is read, else nginx opens /var/log/nginx/error.log first.
  const master = spawn('nginx', ['-p', prefix, '-c', conf, '-e', join(prefix, 'error.log')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  cleanup.add(`nginx ${master.pid}`, () => stopChild(master));
  let errors = '';
  master.stderr?.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  while (!(await answers(url))) {
    if (master.exitCode !== null || Date.now() > deadline) throw new Error(`nginx did not start: ${errors}`);
    await sleep(50);
  }
  return { url, pids: async () => [master.pid ?? 0, ...(await childrenOf(master.pid ?? 0))] };
}

const RUN_PROXY = resolve(import.meta.dirname, '../../deploy/run-proxy');

/**
 * Starts the shipped proxy, `deploy/run-proxy`, in the foreground on a free loopback port in front of `apiUrl`,
 * with one worker, its cache, logs and temp files under `dir`: the configuration users get, access log included. `pids()` are the wrapper and every process under it (nginx's master and
 * workers); all are stopped at cleanup, the nginx ones by pid should the wrapper leave them behind.
 */
export async function startProxy(cleanup: Cleanup, dir: string, apiUrl: string): Promise<RunningNginx> {
  const port = await freePort();
  await mkdir(dir, { recursive: true });
  // One worker, as the static nginx it is compared with.
  const args = ['--listen', `127.0.0.1:${port}`, '--api', apiUrl, '--dir', dir, '--workers', '1'];
  const wrapper = spawn(RUN_PROXY, args, {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const seen = new Set<number>();
  const pids = async () => {
    const all = [wrapper.pid ?? 0, ...(await descendantsOf(wrapper.pid ?? 0))];
    for (const pid of all) seen.add(pid);
    return all;
  };
  cleanup.add(`run-proxy ${wrapper.pid}`, async () => {
    await pids();
    await stopChild(wrapper);
    for (const pid of seen) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // Already gone, as it should be.
      }
    }
  });
  let errors = '';
  wrapper.stderr?.setEncoding('utf8').on('data', (chunk: string) => (errors = (errors + chunk).slice(-8_000)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  while (!(await answers(url))) {
    if (wrapper.exitCode !== null || Date.now() > deadline) throw new Error(`run-proxy did not start: ${errors}`);
    await sleep(50);
  }
  await pids();
  return { url, pids };
}

/** Every process below `pid`, children first. */
async function descendantsOf(pid: number): Promise<number[]> {
  const children = await childrenOf(pid);
  const below = await Promise.all(children.map((child) => descendantsOf(child)));
  return [...children, ...below.flat()];
}

async function answers(url: string): Promise<boolean> {
  try {
    await fetch(url, { method: 'HEAD' });
    return true;
  } catch {
    return false;
  }
}

async function childrenOf(pid: number): Promise<number[]> {
  try {
    const { stdout } = await run('pgrep', ['-P', String(pid)]);
    return stdout
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map(Number);
  } catch {
    return [];
  }
}

/** Sets the CPU affinity of every thread of these processes (`taskset -a -p -c`). */
export async function pin(pids: readonly number[], cpus: string): Promise<void> {
  for (const pid of pids) await run('taskset', ['-a', '-p', '-c', cpus, String(pid)]);
}

/** Options of one wrk run. */
export interface WrkOptions {
  threads: number;
  connections: number;
  seconds: number;
  headers?: Record<string, string>;
  /** Run wrk on these CPUs only (taskset -c). */
  cpus?: string;
}

/** What one wrk run measured. */
export interface WrkResult {
  requestsPerSecond: number;
  /** Requests answered in the whole run. */
  requests: number;
  /** Non-2xx/3xx answers and socket errors: must be 0 for a valid run. */
  errors: number;
  latencyP99Ms: number;
}

/** Runs wrk against `url` and parses its summary. */
export async function runWrk(url: string, options: WrkOptions): Promise<WrkResult> {
  const args = [
    '-t',
    String(options.threads),
    '-c',
    String(options.connections),
    '-d',
    `${options.seconds}s`,
    '--latency',
  ];
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push('-H', `${name}: ${value}`);
  args.push(url);
  const { stdout } =
    options.cpus === undefined ? await run('wrk', args) : await run('taskset', ['-c', options.cpus, 'wrk', ...args]);
  const rate = /Requests\/sec:\s+([\d.]+)/.exec(stdout);
  if (!rate?.[1]) throw new Error(`unexpected wrk output:\n${stdout}`);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(stdout)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
  const socketErrors = socket ? socket.slice(1).reduce((sum, value) => sum + Number(value), 0) : 0;
  return {
    requestsPerSecond: Number(rate[1]),
    requests: Number(/(\d+) requests in/.exec(stdout)?.[1] ?? Number.NaN),
    errors: non2xx + socketErrors,
    latencyP99Ms: latencyMs(/99%\s+([\d.]+)(us|ms|s)\b/.exec(stdout)),
  };
}

function latencyMs(match: RegExpExecArray | null): number {
  if (!match?.[1]) return Number.NaN;
  const value = Number(match[1]);
  return match[2] === 'us' ? value / 1000 : match[2] === 's' ? value * 1000 : value;
}
