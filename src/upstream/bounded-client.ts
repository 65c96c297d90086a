/**
 * A university client for calls made inside HTTP requests: at most `maxInFlight` at once, the rest refused at
 * once with {@link UpstreamBusyError}. With a slow university (8 s per search), 64 concurrent searches would
 * otherwise hold connections and sockets that refreshes and other requests wait for.
 */
import type { UniversityClient } from './client.ts';
import { type EndpointName, UpstreamBusyError } from './errors.ts';

/** Wraps `client` so that at most `maxInFlight` calls run at once; `close()` closes `client`. */
export function boundedClient(client: UniversityClient, maxInFlight: number): UniversityClient {
  let inFlight = 0;
  async function guarded<T>(endpoint: EndpointName, call: () => Promise<T>): Promise<T> {
    if (inFlight >= maxInFlight) throw new UpstreamBusyError(endpoint, inFlight);
    inFlight += 1;
    try {
      return await call();
    } finally {
      inFlight -= 1;
    }
  }
  return {
    groupSchedule: (id, options) => guarded('groupSchedule', () => client.groupSchedule(id, options)),
    employeeSchedule: (id, options) => guarded('employeeSchedule', () => client.employeeSchedule(id, options)),
    searchEmployees: (query, options) => guarded('employeeSearch', () => client.searchEmployees(query, options)),
    me: (credential, select, options) => guarded('me', () => client.me(credential, select, options)),
    mySchedule: (credential, options) => guarded('mySchedule', () => client.mySchedule(credential, options)),
    myPlan: (credential, options) => guarded('myPlan', () => client.myPlan(credential, options)),
    close: () => client.close(),
  };
}
