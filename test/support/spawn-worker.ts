/** Starts `worker-process.ts` as a child process and waits until it takes jobs (multi-process tests). */
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { inject } from 'vitest';
import { NODE_CACHE_ENV } from '../../testkit/processes.ts';
import { TEST_ADMIN_TOKEN, TEST_SECRET_KEY } from './service.ts';

const WORKER_SCRIPT = resolve(import.meta.dirname, 'worker-process.ts');

/** A running worker process and the id it registered under. */
export interface WorkerProcess {
  child: ChildProcess;
  id: string;
}

/**
 * Spawns a worker on the run's Redis with the test secrets and `env` on top (prefix, upstream, Google…);
 * `started` receives the child at once, so that the caller can kill it even if it never becomes ready.
 */
export function startWorkerProcess(
  env: Record<string, string>,
  started: (child: ChildProcess) => void,
): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [WORKER_SCRIPT], {
    env: {
      PATH: process.env.PATH ?? '',
      ...NODE_CACHE_ENV,
      REDIS_URL: inject('redisUrl'),
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      SECRET_KEY: TEST_SECRET_KEY,
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started(child);
  return new Promise((done, fail) => {
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /ready (\S+)/.exec(output);
      if (match?.[1]) done({ child, id: match[1] });
    });
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => fail(new Error(`worker exited with ${code}: ${output}`)));
  });
}
