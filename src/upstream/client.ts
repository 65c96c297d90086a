/**
 * The university API client: six typed operations over one pooled undici Agent. Ids are validated before a
 * URL is built; the credential travels only in the configured header.
 */
import packageJson from '../../package.json' with { type: 'json' };
import type { Deadline } from '../lib/deadline.ts';
import type { Logger } from '../logger.ts';
import type { BudgetPriority, UpstreamBudget } from './budget.ts';
import type { EndpointName } from './errors.ts';
import { createHttpCore } from './http.ts';
import { abortableSleep, DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.ts';
import {
  type Employee,
  type GroupSelect,
  type PlanSubject,
  parseEmployeeSearchResponse,
  parsePlanResponse,
  parseScheduleResponse,
  parseUserResponse,
  type ScheduleResult,
  type SelectedUser,
  type UserSelect,
} from './schemas.ts';
import type { PreparedRequest } from './transport.ts';
import { validateId } from './values.ts';

export { validateId } from './values.ts';

const ALL_GROUP_FIELDS: Required<GroupSelect> = {
  id: true,
  name: true,
  instituteName: true,
  specialization: true,
  speciality: true,
  yearStart: true,
  yearEnd: true,
};

/** `select` as the API takes it: `group: true` (our shorthand for "the whole group") spelled out key by key. */
function wireSelect(select: UserSelect): Record<string, unknown> {
  return select.group === true ? { ...select, group: ALL_GROUP_FIELDS } : { ...select };
}

/** How to reach and treat the university API. */
export interface UniversityClientOptions {
  /** E.g. `http://127.0.0.1:4010` or `https://uni.example/api` (the path prefix is kept). */
  baseUrl: string;
  logger: Logger;
  /** Header carrying the credential; default `Authorization`. */
  authHeader?: string;
  /** Default `Bearer`; `''` sends the bare credential. */
  authScheme?: string;
  /** Defaults 5000 / 15000 / 15000 ms. */
  timeouts?: { connectMs?: number; headersMs?: number; bodyMs?: number };
  /** Default 20 MiB; a larger response is a 'too-large' protocol error and is not read further. */
  maxResponseBytes?: number;
  /** Connections per origin; default 16. */
  maxConnections?: number;
  retry?: Partial<RetryPolicy>;
  /** Jitter source; default `Math.random`. */
  random?: () => number;
  /** Waits between tries; default an abortable timer. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Clock for `Retry-After` HTTP-dates; default `Date.now`. */
  now?: () => number;
  /** Default `timetable-sync/<version>`. */
  userAgent?: string;
  /** The shared rate budget every try takes a token from; default none (tests, `render`). */
  budget?: UpstreamBudget;
  /** How this client's calls take from `budget`: `request` for calls a person waits for; default `background`. */
  budgetPriority?: BudgetPriority;
}

/** Per-call options. */
export interface CallOptions {
  /** Aborts the request and any wait between retries; the call rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /**
   * For calls made inside an HTTP request: wait at most this long for a token of the shared budget, else
   * reject with UpstreamBudgetError. Unset: wait as long as it takes (refresh jobs).
   */
  budgetWaitMs?: number | undefined;
  /**
   * Bounds the whole call: the wait for the budget and the exchange (and, in `boundedClient`, the wait for a
   * place). Past it the call rejects with UpstreamTimeoutError (phase `deadline`), or UpstreamBudgetError when
   * it was still waiting for the budget.
   */
  deadline?: Deadline | undefined;
}

/** Typed access to the six university API operations. */
export interface UniversityClient {
  groupSchedule(groupId: number | string, options?: CallOptions): Promise<ScheduleResult>;
  employeeSchedule(employeeId: number | string, options?: CallOptions): Promise<ScheduleResult>;
  searchEmployees(query: string, options?: CallOptions): Promise<Employee[]>;
  me<S extends UserSelect | undefined = undefined>(
    credential: string,
    select?: S,
    options?: CallOptions,
  ): Promise<SelectedUser<S>>;
  mySchedule(credential: string, options?: CallOptions): Promise<ScheduleResult>;
  myPlan(credential: string, options?: CallOptions): Promise<PlanSubject[]>;
  /** Closes the connection pool this client owns. */
  close(): Promise<void>;
}

interface RequestSpec {
  endpoint: EndpointName;
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string> | undefined;
  credential?: string | undefined;
  json?: unknown | undefined;
  options?: CallOptions | undefined;
}

/** Origin and path prefix of the API, e.g. `https://uni.example` + `/api`. */
function baseOf(baseUrl: string): { origin: string; prefix: string } {
  const base = new URL(baseUrl);
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new TypeError(`university API base URL must be http(s), got ${base.protocol}`);
  }
  return { origin: base.origin, prefix: base.pathname.replace(/\/+$/, '') };
}

/** Visible ASCII and spaces/tabs: what an HTTP header value may hold without encoding. */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

interface RequestTarget {
  base: { origin: string; prefix: string };
  authHeader: string;
  authScheme: string;
  userAgent: string;
}

/** Turns a request spec into a URL, headers and body. The credential goes only into the auth header. */
function prepareRequest(target: RequestTarget, spec: RequestSpec): PreparedRequest {
  const url = new URL(`${target.base.prefix}${spec.path}`, target.base.origin);
  if (spec.query) url.search = new URLSearchParams(spec.query).toString();
  const headers: Record<string, string> = { accept: 'application/json', 'user-agent': target.userAgent };
  if (spec.credential !== undefined) {
    // Checked here so that undici never gets to build an error around the value.
    if (!HEADER_VALUE.test(spec.credential)) throw new TypeError('credential has characters not allowed in a header');
    const { authHeader, authScheme } = target;
    headers[authHeader.toLowerCase()] = authScheme === '' ? spec.credential : `${authScheme} ${spec.credential}`;
  }
  if (spec.json !== undefined) headers['content-type'] = 'application/json';
  const signal = spec.options?.signal;
  const budgetWaitMs = spec.options?.budgetWaitMs;
  const deadline = spec.options?.deadline;
  return {
    endpoint: spec.endpoint,
    method: spec.method,
    url,
    headers,
    ...(spec.json === undefined ? {} : { body: JSON.stringify(spec.json) }),
    authenticated: spec.credential !== undefined,
    ...(spec.credential === undefined ? {} : { secret: spec.credential }),
    ...(signal ? { signal } : {}),
    ...(budgetWaitMs === undefined ? {} : { budgetWaitMs }),
    ...(deadline ? { deadline } : {}),
  };
}

function createCore(options: UniversityClientOptions) {
  const { timeouts = {}, retry = {} } = options;
  return createHttpCore({
    logger: options.logger,
    timeouts: {
      connectMs: timeouts.connectMs ?? 5000,
      headersMs: timeouts.headersMs ?? 15_000,
      bodyMs: timeouts.bodyMs ?? 15_000,
    },
    maxResponseBytes: options.maxResponseBytes ?? 20 * 1024 * 1024,
    maxConnections: options.maxConnections ?? 16,
    retry: {
      attempts: Math.max(1, retry.attempts ?? DEFAULT_RETRY_POLICY.attempts),
      baseDelayMs: retry.baseDelayMs ?? DEFAULT_RETRY_POLICY.baseDelayMs,
      maxDelayMs: retry.maxDelayMs ?? DEFAULT_RETRY_POLICY.maxDelayMs,
      maxRetryAfterMs: retry.maxRetryAfterMs ?? DEFAULT_RETRY_POLICY.maxRetryAfterMs,
    },
    random: options.random ?? Math.random,
    sleep: options.sleep ?? abortableSleep,
    now: options.now ?? Date.now,
    ...(options.budget ? { budget: options.budget } : {}),
    budgetPriority: options.budgetPriority ?? 'background',
  });
}

/** Builds a client with its own connection pool; call `close()` when done. */
export function createUniversityClient(options: UniversityClientOptions): UniversityClient {
  const target: RequestTarget = {
    base: baseOf(options.baseUrl),
    authHeader: options.authHeader ?? 'Authorization',
    authScheme: options.authScheme ?? 'Bearer',
    userAgent: options.userAgent ?? `timetable-sync/${packageJson.version}`,
  };
  const core = createCore(options);
  const send = (spec: RequestSpec) => core.send(prepareRequest(target, spec));
  const get = (endpoint: EndpointName, path: string, credential: string | undefined, callOptions?: CallOptions) =>
    send({ endpoint, method: 'GET', path, credential, options: callOptions });

  return {
    async groupSchedule(groupId, callOptions) {
      const path = `/groups/${validateId('groupId', groupId)}/schedule`;
      return parseScheduleResponse(await get('groupSchedule', path, undefined, callOptions), 'groupSchedule');
    },
    async employeeSchedule(employeeId, callOptions) {
      const path = `/employees/${validateId('employeeId', employeeId)}/schedule`;
      return parseScheduleResponse(await get('employeeSchedule', path, undefined, callOptions), 'employeeSchedule');
    },
    async searchEmployees(query, callOptions) {
      const spec = { endpoint: 'employeeSearch', method: 'GET', path: '/employees', query: { q: query } } as const;
      return parseEmployeeSearchResponse(await send({ ...spec, options: callOptions }), 'employeeSearch');
    },
    async me(credential, select, callOptions) {
      const json = select === undefined ? undefined : { select: wireSelect(select) };
      const spec = { endpoint: 'me', method: 'POST', path: '/users/@me', credential, json } as const;
      return parseUserResponse(await send({ ...spec, options: callOptions }), select, 'me');
    },
    async mySchedule(credential, callOptions) {
      return parseScheduleResponse(
        await get('mySchedule', '/users/@me/schedule', credential, callOptions),
        'mySchedule',
      );
    },
    async myPlan(credential, callOptions) {
      return parsePlanResponse(await get('myPlan', '/users/@me/plan', credential, callOptions), 'myPlan');
    },
    close: () => core.close(),
  };
}
