/**
 * BullMQ's `Worker`, with its wait for a rate limit never negative. BullMQ checks that the limit ends after
 * `Date.now()`, then reads the clock again to compute how long to wait: a millisecond or two later that is -1 or
 * -2, which it hands to `setTimeout`, and Node prints `TimeoutNegativeWarning` on the worker's stderr (and waits
 * 1 ms). The wait is clamped to that 1 ms, so the warning is never printed and nothing else changes. Every worker
 * of the service is made from this class.
 */
import { Worker as BullWorker } from 'bullmq';

/** The least wait for a rate limit, ms: what Node makes of a negative timeout. */
const LEAST_WAIT_MS = 1;

/** BullMQ's worker, its rate-limit wait clamped (see the module comment); its type parameters are BullMQ's. */
// biome-ignore lint/suspicious/noExplicitAny: BullMQ's own defaults, so that a Worker<Data> is one of Worker's.
export class Worker<DataType = any, ResultType = any, NameType extends string = string> extends BullWorker<
  DataType,
  ResultType,
  NameType
> {
  protected override getRateLimitDelay(delay: number): number {
    return Math.max(super.getRateLimitDelay(delay), LEAST_WAIT_MS);
  }
}
