import { ENDPOINTS, type EndpointName } from './faults.ts';

/** Request counters of the API endpoints (control requests are not counted). */
export class RequestStats {
  private counts = new Map<EndpointName, number>();

  /** Counts one request. */
  count(endpoint: EndpointName): void {
    this.counts.set(endpoint, (this.counts.get(endpoint) ?? 0) + 1);
  }

  /** Zeroes every counter. */
  reset(): void {
    this.counts = new Map();
  }

  /** `{ requests: { total, byEndpoint } }`, every endpoint listed. */
  snapshot(): { requests: { total: number; byEndpoint: Record<EndpointName, number> } } {
    const byEndpoint = Object.fromEntries(ENDPOINTS.map((name) => [name, this.counts.get(name) ?? 0])) as Record<
      EndpointName,
      number
    >;
    const total = ENDPOINTS.reduce((sum, name) => sum + byEndpoint[name], 0);
    return { requests: { total, byEndpoint } };
  }
}
