/**
 * A university client for calls made inside HTTP requests, where a person is waiting. Every call gets one
 * deadline at its start that covers all of it: the wait for a place, the wait for the shared budget and the
 * exchange. Calls run in two lanes with their own places, credential checks (sign-up, credential replacement)
 * and lookups (teacher search), so that a flood of slow searches never makes a sign-up wait; no more calls run
 * at once than the pool has connections, so none waits unseen inside it. A call that finds its lane's short
 * line full is refused at once with {@link UpstreamBusyError}, as is one still in line at its deadline.
 *
 * Measured before these bounds: 16 calls in flight over 4 connections and a timeout that only started on a
 * connection; with an 8 s search, 64 searches were answered after up to 22 s and a sign-up got 503s for 20 s.
 */
import { type Deadline, startDeadline } from '../lib/deadline.ts';
import { NoSlotError } from '../lib/errors.ts';
import { Slots } from '../lib/slots.ts';
import type { CallOptions, UniversityClient } from './client.ts';
import { type EndpointName, UpstreamBusyError } from './errors.ts';

/** The lanes of request-path calls. */
export type LaneName = 'credential' | 'lookup';

/** Which lane an endpoint's calls wait in. */
export const LANE_OF: Readonly<Record<EndpointName, LaneName>> = {
  me: 'credential',
  mySchedule: 'credential',
  myPlan: 'credential',
  employeeSearch: 'lookup',
  groupSchedule: 'lookup',
  employeeSchedule: 'lookup',
};

/** How many calls of a lane run at once, and how many may wait in line for a place. */
export interface LaneLimits {
  inFlight: number;
  line: number;
}

/** The bounds of request-path calls. */
export interface RequestPathLimits {
  /** The whole of one call, from the moment it is made to its answer. */
  deadlineMs: number;
  /**
   * A call that gets its place with less time left than this is refused instead: it would spend a token of
   * the budget and a connection, then time out.
   */
  minCallMs: number;
  lanes: Readonly<Record<LaneName, LaneLimits>>;
}

/**
 * The service's bounds: a person gets an answer within 5 s (a university that slow answers 504; a full lane
 * or budget 503 with Retry-After). Two credential checks and two searches at once per process: the pool has
 * four connections, one per call in flight. At the university's usual 50 to 200 ms a call, a line of 16
 * sign-ups clears in about a second; searches are cached and cheaper to refuse, so their line is 8.
 */
export const REQUEST_PATH_LIMITS: RequestPathLimits = {
  deadlineMs: 5_000,
  minCallMs: 250,
  lanes: { credential: { inFlight: 2, line: 16 }, lookup: { inFlight: 2, line: 8 } },
};

/** Connections a pool needs so that every call in flight has one. */
export function connectionsFor(limits: RequestPathLimits): number {
  return Object.values(limits.lanes).reduce((sum, lane) => sum + lane.inFlight, 0);
}

/** Wraps `client` in `limits`; `close()` closes `client`. */
export function boundedClient(client: UniversityClient, limits: RequestPathLimits): UniversityClient {
  const lanes: Record<LaneName, Slots> = {
    credential: new Slots(limits.lanes.credential.inFlight, limits.lanes.credential.line),
    lookup: new Slots(limits.lanes.lookup.inFlight, limits.lanes.lookup.line),
  };
  async function guarded<T>(
    endpoint: EndpointName,
    options: CallOptions | undefined,
    call: (bounded: CallOptions) => Promise<T>,
  ): Promise<T> {
    const deadline: Deadline = options?.deadline ?? startDeadline(limits.deadlineMs);
    const lane = lanes[LANE_OF[endpoint]];
    const signal = options?.signal ? AbortSignal.any([options.signal, deadline.signal]) : deadline.signal;
    try {
      await lane.acquire(signal);
    } catch (error) {
      options?.signal?.throwIfAborted();
      if (error instanceof NoSlotError) throw new UpstreamBusyError(endpoint, error.busy);
      throw error;
    }
    if (deadline.remainingMs() < limits.minCallMs) {
      lane.release();
      throw new UpstreamBusyError(endpoint, lane.busy + 1);
    }
    try {
      return await call({ ...options, deadline });
    } finally {
      lane.release();
    }
  }
  return {
    groupSchedule: (id, options) => guarded('groupSchedule', options, (o) => client.groupSchedule(id, o)),
    employeeSchedule: (id, options) => guarded('employeeSchedule', options, (o) => client.employeeSchedule(id, o)),
    searchEmployees: (query, options) => guarded('employeeSearch', options, (o) => client.searchEmployees(query, o)),
    me: (credential, select, options) => guarded('me', options, (o) => client.me(credential, select, o)),
    mySchedule: (credential, options) => guarded('mySchedule', options, (o) => client.mySchedule(credential, o)),
    myPlan: (credential, options) => guarded('myPlan', options, (o) => client.myPlan(credential, o)),
    close: () => client.close(),
  };
}
