import { Agent, fetch, type Headers } from 'undici';
import { type RunningSimulator, type SimulatorOptions, startSimulator } from '../../src/simulator/index.ts';

/** The reference date every simulator test uses: autumn semester 2025. */
export const REFERENCE_DATE = new Date('2025-10-01T00:00:00Z');

/** A timetable entry as the tests read it (values stay `unknown` where variants send strings). */
export interface WireEntry {
  id: number;
  semester: number;
  year: number;
  subject_name: string;
  subject_id: number;
  start_day_schedule: string;
  finish_day_schedule: string;
  day_week_schedule: number;
  type_week_schedule: number;
  note_schedule: string;
  time_interval_id: number;
  total_time_schedule: string;
  begin_time_schedule: string;
  end_time_schedule: string;
  teacher_id: number;
  teacher_lastname: string;
  teacher_firstname: string;
  teacher_middlename: string;
  num_auditorium_schedule: string;
  building_name: string;
  building_id: number;
  group_list: string;
  subject_kind_name: string;
}

/** Rows of `GET /_sim/users`. */
export interface SimUser {
  id: number;
  username: string;
  token: string;
  groupId: number;
  subgroup: 1 | 2;
}

/** Starts a simulator on a free loopback port with the test reference date. */
export function start(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  return startSimulator({ port: 0, seed: 42, referenceDate: REFERENCE_DATE, ...options });
}

/**
 * A fresh connection per request. The simulators run in the test's own process, whose event loop is blocked for
 * seconds while a suite builds its twins' data: a connection kept alive across such a pause met the simulator's
 * keep-alive timeout at the same moment as the next request, and that request failed with ECONNRESET.
 */
const FRESH_CONNECTIONS = new Agent({ pipelining: 0 });

/** The body text of a GET of `url`, on a fresh connection (see {@link FRESH_CONNECTIONS}). */
export async function fetchText(url: string): Promise<string> {
  return (await fetch(url, { dispatcher: FRESH_CONNECTIONS })).text();
}

/** GET (or another method) returning status and parsed JSON body. */
export async function call<T = unknown>(
  base: string,
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: T; headers: Headers }> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, {
    dispatcher: FRESH_CONNECTIONS,
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? null : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: (text === '' ? undefined : JSON.parse(text)) as T,
    headers: response.headers,
  };
}

/** A group's timetable entries. */
export async function groupEntries(base: string, groupId: number): Promise<WireEntry[]> {
  const { status, body } = await call<{ success: boolean; subjects: WireEntry[] }>(base, `/groups/${groupId}/schedule`);
  if (status !== 200) throw new Error(`group ${groupId}: HTTP ${status}`);
  return body.subjects;
}

/** An employee's timetable entries. */
export async function employeeEntries(base: string, employeeId: number): Promise<WireEntry[]> {
  const { status, body } = await call<{ success: boolean; subjects: WireEntry[] }>(
    base,
    `/employees/${employeeId}/schedule`,
  );
  if (status !== 200) throw new Error(`employee ${employeeId}: HTTP ${status}`);
  return body.subjects;
}

/** `DD.MM.YY` → epoch day number. */
export function dayNumber(text: string): number {
  const [day, month, year] = text.split('.').map(Number);
  return Date.UTC(2000 + (year ?? 0), (month ?? 1) - 1, day ?? 1) / 86_400_000;
}

/** Runs `work` over `items` with at most `limit` in flight. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
