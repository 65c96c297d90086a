/** Thin helpers over the simulator's `/_sim` control API, for the upstream client's integration tests. */
import type { EndpointName } from '../../src/upstream/errors.ts';

/** A fault to inject (see the simulator's control API). */
export interface FaultSpec {
  endpoint?: EndpointName | '*';
  kind: 'latency' | 'status' | 'rate-limit' | 'timeout' | 'malformed-json' | 'unsuccessful' | 'truncated' | 'reset';
  probability?: number;
  times?: number;
  latencyMs?: number;
  status?: number;
  retryAfterSeconds?: number;
  error?: string;
}

async function control(url: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`simulator ${method} ${path}: ${response.status} ${text}`);
  return text === '' ? undefined : (JSON.parse(text) as unknown);
}

/** Control client bound to one simulator. */
export function simControl(url: string) {
  return {
    groups: async () =>
      ((await control(url, 'GET', '/_sim/groups')) as { groups: { id: number; name: string; entryCount: number }[] })
        .groups,
    employees: async () =>
      (
        (await control(url, 'GET', '/_sim/employees')) as {
          employees: { id: number; lastName: string; firstName: string; middleName: string }[];
        }
      ).employees,
    users: async () =>
      (
        (await control(url, 'GET', '/_sim/users')) as {
          users: { id: number; username: string; token: string; groupId: number }[];
        }
      ).users,
    addEntry: async (fields: Record<string, unknown>) =>
      (await control(url, 'POST', '/_sim/entries', fields)) as { id: number } & Record<string, unknown>,
    /** Changes fields of an entry (`num_auditorium_schedule`, …) as the university would. */
    patchEntry: (id: number, fields: Record<string, unknown>) => control(url, 'PATCH', `/_sim/entries/${id}`, fields),
    deleteEntry: (id: number) => control(url, 'DELETE', `/_sim/entries/${id}`),
    fault: (spec: FaultSpec) => control(url, 'POST', '/_sim/faults', spec),
    clearFaults: () => control(url, 'DELETE', '/_sim/faults'),
    /** Request counts per endpoint, and `byPath` for each of `paths` (e.g. `/employees/7/schedule`) asked for. */
    stats: async (...paths: string[]) => {
      const query = paths.map((path) => `path=${encodeURIComponent(path)}`).join('&');
      return (
        (await control(url, 'GET', `/_sim/stats${query === '' ? '' : `?${query}`}`)) as {
          requests: { total: number; byEndpoint: Record<string, number>; byPath?: Record<string, number> };
        }
      ).requests;
    },
    clearStats: () => control(url, 'DELETE', '/_sim/stats'),
    reset: () => control(url, 'POST', '/_sim/reset'),
    raw: async (path: string, init: RequestInit = {}) => {
      const response = await fetch(`${url}${path}`, init);
      return { status: response.status, body: (await response.json()) as unknown };
    },
  };
}

/** The control client type. */
export type SimControl = ReturnType<typeof simControl>;
