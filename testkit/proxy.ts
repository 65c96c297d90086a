/**
 * deploy/nginx.conf on a real nginx, through deploy/run-proxy (the operators' way to run it without Docker), for
 * the proxy tests and the benchmarks: the configuration users get, not a copy of it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { freePort } from '../src/runtime/embedded-redis.ts';
import { stopChild } from './processes.ts';

export const RUN_PROXY = resolve(import.meta.dirname, '../deploy/run-proxy');

/** A running proxy. */
export interface RunningProxy {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** Its working directory: access.log, error.log, cache/, the rendered configuration. */
  dir: string;
  accessLog: string;
  errorLog: string;
  child: ChildProcess;
  /** What run-proxy and nginx wrote to stderr so far. */
  stderr(): string;
  /** SIGTERM (nginx's fast shutdown), then SIGKILL after 10 s; resolves once it has exited. */
  stop(): Promise<void>;
}

/**
 * Starts `deploy/run-proxy` on a free loopback port in front of `api`, with `dir` as its working directory
 * (made and kept by the caller), and waits until nginx answers /proxy-health.
 */
export async function startProxy(options: {
  api: string;
  dir: string;
  nginxPath?: string | undefined;
  workers?: number;
}): Promise<RunningProxy> {
  const port = await freePort();
  const args = ['--listen', `127.0.0.1:${port}`, '--api', options.api, '--dir', options.dir];
  if (options.nginxPath !== undefined) args.push('--nginx', options.nginxPath);
  if (options.workers !== undefined) args.push('--workers', String(options.workers));
  const child = spawn(RUN_PROXY, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let errors = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (errors = (errors + chunk).slice(-8_000)));
  const url = `http://127.0.0.1:${port}`;
  const proxy: RunningProxy = {
    url,
    port,
    dir: options.dir,
    accessLog: join(options.dir, 'access.log'),
    errorLog: join(options.dir, 'error.log'),
    child,
    stderr: () => errors,
    stop: () => stopChild(child),
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`run-proxy exited (${child.exitCode ?? child.signalCode}): ${errors}`);
    const status = await fetch(`${url}/proxy-health`).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) return proxy;
    if (Date.now() > deadline) {
      await proxy.stop();
      throw new Error(`run-proxy did not answer /proxy-health within 30 s: ${errors}`);
    }
    await new Promise((wake) => setTimeout(wake, 50));
  }
}
