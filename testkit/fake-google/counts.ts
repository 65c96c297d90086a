/** Request counters of the fake, read by tests to check how many calls (and writes) a sync made. */

/** The Calendar API methods the fake serves. */
export type ApiMethod =
  | 'calendars.insert'
  | 'calendars.get'
  | 'calendars.delete'
  | 'calendars.patch'
  | 'calendars.update'
  | 'events.insert'
  | 'events.get'
  | 'events.patch'
  | 'events.update'
  | 'events.delete'
  | 'events.list';

const WRITES: ReadonlySet<ApiMethod> = new Set([
  'calendars.insert',
  'calendars.delete',
  'calendars.patch',
  'calendars.update',
  'events.insert',
  'events.patch',
  'events.update',
  'events.delete',
]);

/** A snapshot of the counters (maps hold only non-zero entries). */
export interface FakeGoogleCounts {
  /** Every Calendar API request received, whatever its outcome (401, quota, fault, 4xx, success). */
  total: number;
  /** Requests that reached the calendar logic (authenticated, within quota, not faulted), by API method. */
  byMethod: Partial<Record<ApiMethod, number>>;
  /** The same requests by HTTP method. */
  byHttpMethod: Record<string, number>;
  /** Of those, inserts/patches/updates/deletes of events and calendars (including ones answered 4xx, e.g. 409). */
  writes: number;
  /** Every error answer of the Calendar API, keyed `"<status> <reason>"` (e.g. `"409 duplicate"`). */
  errors: Record<string, number>;
  /** Requests refused by the per-user quota (403 userRateLimitExceeded); also in `errors`. */
  quotaErrors: number;
  /** Requests answered by an injected fault (Calendar API and token endpoint); also in `errors` unless `reset`. */
  faulted: number;
  /** Token endpoint requests, whatever their outcome. */
  tokenRequests: number;
  /** Token endpoint error answers keyed `"<status> <error>"` (e.g. `"400 invalid_grant"`). */
  tokenErrors: Record<string, number>;
}

function bump<K extends string>(map: Partial<Record<K, number>>, key: K): void {
  map[key] = (map[key] ?? 0) + 1;
}

/** Mutable counters. */
export class Counter {
  private value: FakeGoogleCounts = Counter.empty();

  private static empty(): FakeGoogleCounts {
    return {
      total: 0,
      byMethod: {},
      byHttpMethod: {},
      writes: 0,
      errors: {},
      quotaErrors: 0,
      faulted: 0,
      tokenRequests: 0,
      tokenErrors: {},
    };
  }

  /** A request arrived at the Calendar API. */
  received(): void {
    this.value.total += 1;
  }

  /** A request reached the calendar logic. */
  served(method: ApiMethod, httpMethod: string): void {
    bump(this.value.byMethod, method);
    bump(this.value.byHttpMethod, httpMethod);
    if (WRITES.has(method)) this.value.writes += 1;
  }

  /** An API error was answered. */
  error(status: number, reason: string): void {
    bump(this.value.errors, `${status} ${reason}`);
  }

  /** The quota refused a request. */
  quota(): void {
    this.value.quotaErrors += 1;
  }

  /** An injected fault answered. */
  fault(): void {
    this.value.faulted += 1;
  }

  /** A token endpoint request arrived. */
  token(): void {
    this.value.tokenRequests += 1;
  }

  /** The token endpoint answered an error. */
  tokenError(status: number, error: string): void {
    bump(this.value.tokenErrors, `${status} ${error}`);
  }

  /** A deep copy of the counters. */
  snapshot(): FakeGoogleCounts {
    return structuredClone(this.value);
  }

  /** Back to zero. */
  reset(): void {
    this.value = Counter.empty();
  }
}
