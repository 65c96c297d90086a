/** Shared set-up of the refresh pipeline tests: simulator, context on the run's Redis, workers. */

import ICAL from 'ical.js';
import { inject } from 'vitest';
import { enqueueRefresh, type RefreshRequest } from '../../src/jobs/queues.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import type { Logger } from '../../src/logger.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { jobEnded } from '../support/jobs.ts';
import { testContext } from '../support/service.ts';
import { type SimControl, simControl } from '../upstream/sim-control.ts';

/** The simulator's semester is built around this date; the service's clock starts here too. */
export const REFERENCE_DATE = new Date('2025-10-01T00:00:00Z');

/** A running pipeline for one test file. */
export interface Pipeline {
  ctx: ServiceContext;
  sim: SimControl;
  simUrl: string;
  workers: WorkerSet;
  clock: { now: number };
  /** Queues a refresh and resolves with the finished job's state and result. */
  refresh(
    source: string,
    request?: Partial<RefreshRequest>,
  ): Promise<{ id: string; state: string; result: unknown; failedReason: string | undefined }>;
  close(): Promise<void>;
}

/** Starts a small simulator, a context under a unique prefix and one worker process's workers. */
export async function startPipeline(env: Record<string, string> = {}, logger?: Logger): Promise<Pipeline> {
  const simulator = await startSimulator({
    port: 0,
    seed: 1,
    referenceDate: REFERENCE_DATE,
    groups: 12,
    employees: 12,
    users: 4,
  });
  const clock = { now: REFERENCE_DATE.getTime() };
  const { context, close } = await testContext(
    { UNIVERSITY_API_URL: simulator.url, ...env },
    { now: () => clock.now, ...(logger ? { logger } : {}) },
  );
  const workers = await startWorkers(context, inject('redisUrl'), { lockDurationMs: 5_000, stalledIntervalMs: 1_000 });
  return {
    ctx: context,
    sim: simControl(simulator.url),
    simUrl: simulator.url,
    workers,
    clock,
    refresh: async (source, request = {}) => {
      const id = await enqueueRefresh(context.queues, context.config, source, {
        reason: 'resync',
        now: clock.now,
        ...request,
      });
      return waitForJob(context, id);
    },
    close: async () => {
      await workers.close();
      await close();
      await simulator.close();
    },
  };
}

/** Waits until a refresh job has completed or failed for good. */
export async function waitForJob(
  ctx: ServiceContext,
  id: string,
  timeoutMs = 15_000,
): Promise<{ id: string; state: string; result: unknown; failedReason: string | undefined }> {
  const { job, state } = await jobEnded(ctx.queues.refresh, id, timeoutMs);
  return { id, state, result: job.returnvalue, failedReason: job.failedReason };
}

/** The events of an ICS text, read by ical.js (an independent parser). */
export function readEvents(ics: string): {
  uid: string;
  status: string | undefined;
  start: string;
  end: string;
  summary: string;
  location: string;
  sequence: number;
}[] {
  const calendar = new ICAL.Component(ICAL.parse(ics));
  return calendar.getAllSubcomponents('vevent').map((vevent) => {
    const event = new ICAL.Event(vevent);
    return {
      uid: event.uid,
      status: vevent.getFirstPropertyValue('status')?.toString(),
      start: event.startDate.toJSDate().toISOString(),
      end: event.endDate.toJSDate().toISOString(),
      summary: event.summary,
      location: event.location ?? '',
      sequence: event.sequence,
    };
  });
}
