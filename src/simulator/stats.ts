import { ENDPOINTS, type EndpointName } from './faults.ts';

/** What `GET /_sim/stats` answers. */
export interface StatsSnapshot {
  requests: {
    total: number;
    byEndpoint: Record<EndpointName, number>;
    /** Requests per path, for the paths asked for only (absent when none is). */
    byPath?: Record<string, number>;
  };
}

/**
 * Request counters of the API endpoints (control requests are not counted), per endpoint and per path. A test
 * that asks one source's timetable counts that source's path: the endpoint's counter also takes the requests
 * of every other source the service under test refreshes meanwhile (its own schedule, earlier tests' sources).
 */
export class RequestStats {
  private counts = new Map<EndpointName, number>();
  private paths = new Map<string, number>();

  /** Counts one request of `endpoint` to `path` (the URL's path, without its query). */
  count(endpoint: EndpointName, path: string): void {
    this.counts.set(endpoint, (this.counts.get(endpoint) ?? 0) + 1);
    this.paths.set(path, (this.paths.get(path) ?? 0) + 1);
  }

  /** Zeroes every counter. */
  reset(): void {
    this.counts = new Map();
    this.paths = new Map();
  }

  /**
   * `{ requests: { total, byEndpoint } }`, every endpoint listed, and `byPath` with each of `paths` when any is
   * asked for: listing every path would make the answer as long as the sources a benchmark polls.
   */
  snapshot(paths: readonly string[] = []): StatsSnapshot {
    const byEndpoint = Object.fromEntries(ENDPOINTS.map((name) => [name, this.counts.get(name) ?? 0])) as Record<
      EndpointName,
      number
    >;
    const total = ENDPOINTS.reduce((sum, name) => sum + byEndpoint[name], 0);
    if (paths.length === 0) return { requests: { total, byEndpoint } };
    const byPath = Object.fromEntries(paths.map((path) => [path, this.paths.get(path) ?? 0]));
    return { requests: { total, byEndpoint, byPath } };
  }
}
