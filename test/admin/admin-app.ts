import { type Job, Worker } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { QUEUE, type RefreshJobData, type RefreshJobResult } from '../../src/jobs/contract.ts';
import { silentLogger } from '../../src/logger.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { TEST_ADMIN_TOKEN } from '../support/service.ts';

/** The service's whole HTTP app on `ctx`, ready for `inject`. */
export async function adminApp(ctx: ServiceContext): Promise<FastifyInstance> {
  const app = await buildApp(ctx, { logger: silentLogger() });
  await app.ready();
  return app;
}

/** The Authorization header of an admin. */
export const BEARER = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };

/** A refresh worker whose jobs wait until the test lets them finish (or fail). */
export interface HeldWorker {
  /** Ids of jobs the worker has started, in order. */
  started: string[];
  /** Lets every running and future job finish with this result (or throw this error). */
  release(outcome?: RefreshJobResult | Error): void;
  close(): Promise<void>;
}

/** Starts a real BullMQ worker on the context's refresh queue; its jobs wait for {@link HeldWorker.release}. */
export function holdingWorker(ctx: ServiceContext): HeldWorker {
  const connection = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
  const started: string[] = [];
  let release: (outcome: RefreshJobResult | Error) => void = () => {};
  const gate = new Promise<RefreshJobResult | Error>((done) => (release = done));
  const worker = new Worker<RefreshJobData, RefreshJobResult>(
    QUEUE.refresh,
    async (job: Job<RefreshJobData, RefreshJobResult>) => {
      started.push(job.id ?? '');
      const outcome = await gate;
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
    { connection, prefix: ctx.keys.queuePrefix, concurrency: 4 },
  );
  worker.on('error', () => {});
  return {
    started,
    release: (outcome = { outcome: 'unchanged', occurrences: 0, pushJobs: 0 }) => release(outcome),
    close: async () => {
      release(new Error('worker closing'));
      await worker.close();
      connection.disconnect();
    },
  };
}
