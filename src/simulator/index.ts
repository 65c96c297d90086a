/**
 * The university simulator: a deterministic fake of the six endpoints of university-api.md, with control
 * endpoints under `/_sim` to change the timetable and inject faults. Used by the demo, by the client's tests and
 * by benchmarks.
 */
import { type Logger, silentLogger } from '../logger.ts';
import type { Dialect } from './dialect.ts';
import { serve } from './server.ts';
import { type ResolvedOptions, SimulatorState } from './state.ts';

export type { Dialect } from './dialect.ts';
export type { EndpointName, FaultSpec } from './faults.ts';
export { ENDPOINTS } from './faults.ts';

/** Options of {@link startSimulator}; every field has a default. */
export interface SimulatorOptions {
  /** Same seed ⇒ byte-identical data. Default 1. */
  seed?: number | string | undefined;
  /** Default 0: a free port. */
  port?: number | undefined;
  /** Default '127.0.0.1'. */
  host?: string | undefined;
  /** The "today" that picks the semester (read in UTC). Default: now. */
  referenceDate?: Date | undefined;
  /** Number of groups; default 1500. */
  groups?: number | undefined;
  /** Number of employees; default 800. */
  employees?: number | undefined;
  /** Number of users with tokens; default 200. */
  users?: number | undefined;
  /** Wire date format; default 'DD.MM.YY' (some deployments send ISO). */
  dateFormat?: 'DD.MM.YY' | 'YYYY-MM-DD' | undefined;
  /** Send ids and other numbers as JSON strings ("42"), as some deployments do. Default false. */
  numericStrings?: boolean | undefined;
  /**
   * `legacy`: answer as real deployments of the older API do (windows-1251, no `success`, strings for numbers,
   * `HH.MM`, `DD.MM.YYYY`, `employees` search, null profile fields, one row per group, control characters;
   * see dialect.ts), overriding `dateFormat` and `numericStrings`; `legacy-unlabelled` the same without a charset
   * in `Content-Type`. Default `standard`; switchable at run time with `PUT /_sim/dialect`.
   */
  dialect?: Dialect | undefined;
  /** Header carrying the credential of the `@me` endpoints; default 'Authorization'. */
  authHeader?: string | undefined;
  /** Scheme before the token; default 'Bearer'; '' means the header value is the bare token. */
  authScheme?: string | undefined;
  logger?: Logger | undefined;
}

/** A running simulator. `close()` ends promptly, even with requests held by a timeout fault. */
export interface RunningSimulator {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  url: string;
  port: number;
  close(): Promise<void>;
}

function count(name: string, value: number | undefined, fallback: number, min: number): number {
  const result = value ?? fallback;
  if (!Number.isSafeInteger(result) || result < min)
    throw new RangeError(`simulator option ${name} must be an integer ≥ ${min}`);
  return result;
}

function resolve(options: SimulatorOptions): ResolvedOptions {
  const referenceDate = options.referenceDate ?? new Date();
  if (Number.isNaN(referenceDate.getTime())) throw new RangeError('simulator option referenceDate is an invalid date');
  return {
    seed: options.seed ?? 1,
    port: count('port', options.port, 0, 0),
    host: options.host ?? '127.0.0.1',
    referenceDate,
    groups: count('groups', options.groups, 1500, 1),
    employees: count('employees', options.employees, 800, 1),
    users: count('users', options.users, 200, 0),
    base: { dateFormat: options.dateFormat ?? 'DD.MM.YY', numericStrings: options.numericStrings ?? false },
    dialect: options.dialect ?? 'standard',
    authHeader: options.authHeader ?? 'Authorization',
    authScheme: options.authScheme ?? 'Bearer',
    logger: options.logger ?? silentLogger(),
  };
}

/** Generates the data from the seed and starts serving it. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  const resolved = resolve(options);
  const state = new SimulatorState(resolved);
  const server = await serve(state);
  const { groups, employees, users } = resolved;
  resolved.logger.info(
    { url: server.url, seed: resolved.seed, groups, employees, users },
    'university simulator listening',
  );
  return server;
}
