import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { z } from 'zod';
import { canonicalTimeZone } from './feeds/vtimezone.ts';
import { parseDurationMs } from './lib/duration.ts';
import { LOG_LEVELS, type LogLevel } from './logger.ts';

/** The service's whole configuration, parsed once from the environment and frozen. */
export interface Config {
  readonly universityApiUrl: string | undefined;
  readonly universityAuthHeader: string;
  readonly universityAuthScheme: string;
  /** A user's university credential, for `render --me` only; a secret. */
  readonly universityCredential: string | undefined;
  /** Unset: the process runs (or finds) an embedded `redis-server` under {@link Config.dataDir}. */
  readonly redisUrl: string | undefined;
  readonly redisPrefix: string;
  readonly port: number;
  readonly publicUrl: string;
  readonly timezone: string;
  /** ISO dates (YYYY-MM-DD); empty: the default rule (1 September, or 2 September when that is a Sunday). */
  readonly weekParityAnchors: readonly string[];
  /** ISO dates on which no class takes place. */
  readonly holidays: readonly string[];
  readonly refreshIntervalMs: number;
  /** Upstream requests per second, over all workers together. */
  readonly upstreamRateLimit: number;
  readonly upstreamTimeoutMs: number;
  /** Concurrent refresh jobs per worker process. */
  readonly workerConcurrency: number;
  /** Tries of a refresh job before its source is marked stale (retries back off exponentially, with jitter). */
  readonly refreshAttempts: number;
  /** First retry delay of a failed refresh; doubled on every further retry. */
  readonly refreshBackoffMs: number;
  /** Delay of the re-fetch that confirms a refresh removing most future classes. */
  readonly confirmDelayMs: number;
  /** How long a removed future class stays in feeds as STATUS:CANCELLED. */
  readonly cancelledRetentionMs: number;
  /** A source whose feed nobody requested for this long stops being refreshed. */
  readonly inactiveAfterMs: number;
  readonly adminToken: string | undefined;
  /** 32-byte key for AES-256-GCM encryption of stored credentials and refresh tokens. */
  readonly secretKey: Buffer | undefined;
  readonly googleClientId: string | undefined;
  readonly googleClientSecret: string | undefined;
  readonly googleApiRootUrl: string;
  readonly googleOauthTokenUrl: string;
  /** Google's consent page (the fake Google server's in tests). */
  readonly googleOauthAuthUrl: string;
  /** Google Calendar API requests per minute per Google user, over all workers (Google allows 600). */
  readonly googleUserRateLimit: number;
  /** Google Calendar API requests per second over all workers and users. */
  readonly googleRateLimit: number;
  /** How long a target rests after Google's "Calendar usage limits exceeded". */
  readonly googleQuotaPauseMs: number;
  /** How often each target is compared with what its calendar really holds (and its index repaired). */
  readonly googleReconcileIntervalMs: number;
  /** Concurrent push jobs per worker process. */
  readonly pushConcurrency: number;
  readonly logLevel: LogLevel;
  /** Where embedded Redis keeps its data and address file. */
  readonly dataDir: string;
}

/** Names of settings a command can demand on top of the schema (for example a worker needs the upstream). */
export type RequiredSetting =
  | 'UNIVERSITY_API_URL'
  | 'UNIVERSITY_CREDENTIAL'
  | 'ADMIN_TOKEN'
  | 'SECRET_KEY'
  | 'REDIS_URL';

/** Thrown when the environment is invalid; `problems` names every bad variable and why. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.problems = problems;
  }
}

/** Every variable the service reads, with its default and meaning (the source of `.env.example`). */
export const ENV_VARIABLES = [
  'UNIVERSITY_API_URL',
  'UNIVERSITY_AUTH_HEADER',
  'UNIVERSITY_AUTH_SCHEME',
  'UNIVERSITY_CREDENTIAL',
  'REDIS_URL',
  'REDIS_PREFIX',
  'PORT',
  'PUBLIC_URL',
  'TIMEZONE',
  'WEEK_PARITY_ANCHORS',
  'HOLIDAYS',
  'REFRESH_INTERVAL',
  'UPSTREAM_RATE_LIMIT',
  'UPSTREAM_TIMEOUT',
  'WORKER_CONCURRENCY',
  'REFRESH_ATTEMPTS',
  'REFRESH_BACKOFF',
  'CONFIRM_DELAY',
  'CANCELLED_RETENTION',
  'INACTIVE_AFTER',
  'ADMIN_TOKEN',
  'SECRET_KEY',
  'GOOGLE_CLIENT_ID',
  'GOOGLE_CLIENT_SECRET',
  'GOOGLE_API_ROOT_URL',
  'GOOGLE_OAUTH_TOKEN_URL',
  'GOOGLE_OAUTH_AUTH_URL',
  'GOOGLE_USER_RATE_LIMIT',
  'GOOGLE_RATE_LIMIT',
  'GOOGLE_QUOTA_PAUSE',
  'GOOGLE_RECONCILE_INTERVAL',
  'PUSH_CONCURRENCY',
  'LOG_LEVEL',
  'DATA_DIR',
] as const;

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** True for a real calendar date written as YYYY-MM-DD. */
export function isIsoDate(value: string): boolean {
  const match = ISO_DATE.exec(value);
  if (!match) return false;
  const [, y, m, d] = match.map(Number) as [number, number, number, number];
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

const optionalText = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));

function httpUrl(name: string) {
  return optionalText.refine((value) => value === undefined || isHttpUrl(value), {
    message: `${name} must be an http:// or https:// URL`,
  });
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

const dateList = optionalText.transform((value, ctx) => {
  if (value === undefined) return [];
  const dates = value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  const bad = dates.filter((date) => !isIsoDate(date));
  if (bad.length > 0) ctx.addIssue({ code: 'custom', message: `not a valid YYYY-MM-DD date: ${bad.join(', ')}` });
  return [...new Set(dates)].sort();
});

/** `HOLIDAYS` is a comma list of dates, or the path of a file with one date per line and `#` comments. */
const holidays = optionalText.transform((value, ctx) => {
  if (value === undefined) return [];
  const looksLikeList = /^[\d\s,-]+$/.test(value);
  let text = value;
  if (!looksLikeList) {
    try {
      text = readFileSync(value, 'utf8');
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        message: `not a date list and not a readable file (${(error as Error).message})`,
      });
      return [];
    }
  }
  const dates = text
    .split(looksLikeList ? ',' : '\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line !== '');
  const bad = dates.filter((date) => !isIsoDate(date));
  if (bad.length > 0)
    ctx.addIssue({ code: 'custom', message: `not a valid YYYY-MM-DD date: ${bad.slice(0, 5).join(', ')}` });
  return [...new Set(dates)].sort();
});

function duration(defaultValue: string, minMs: number) {
  return optionalText.transform((value, ctx) => {
    const ms = parseDurationMs(value ?? defaultValue);
    if (ms === undefined || ms < minMs) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a duration of at least ${minMs / 1000}s such as 90s, 15m, 1h or 1d (got "${value}")`,
      });
      return 0;
    }
    return ms;
  });
}

function positiveNumber(defaultValue: number, integer: boolean, max = Number.MAX_SAFE_INTEGER) {
  return optionalText.transform((value, ctx) => {
    if (value === undefined) return defaultValue;
    const parsed = Number(value);
    const ok = Number.isFinite(parsed) && parsed > 0 && parsed <= max && (!integer || Number.isInteger(parsed));
    if (!ok)
      ctx.addIssue({
        code: 'custom',
        message: `must be a ${integer ? 'whole' : 'positive'} number from ${integer ? 1 : '>0'} to ${max} (got "${value}")`,
      });
    return parsed;
  });
}

/** A secret: never echoed in an error message. */
function secret(minLength: number) {
  return optionalText.refine((value) => value === undefined || value.length >= minLength, {
    message: `must be at least ${minLength} characters long (value not shown)`,
  });
}

const secretKey = optionalText.transform((value, ctx) => {
  if (value === undefined) return undefined;
  const key = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  if (key.length !== 32) {
    ctx.addIssue({
      code: 'custom',
      message: 'must be 32 bytes, as 64 hex digits or base64 (value not shown); make one with: openssl rand -hex 32',
    });
    return undefined;
  }
  return key;
});

const envSchema = z.object({
  UNIVERSITY_API_URL: httpUrl('UNIVERSITY_API_URL'),
  UNIVERSITY_AUTH_HEADER: optionalText.refine((v) => v === undefined || HEADER_NAME.test(v), {
    message: 'must be an HTTP header name',
  }),
  UNIVERSITY_AUTH_SCHEME: z
    .string()
    .optional()
    .refine((v) => v === undefined || v.trim() === '' || HEADER_NAME.test(v.trim()), {
      message: 'must be an HTTP auth scheme such as Bearer, or empty for a bare credential',
    }),
  UNIVERSITY_CREDENTIAL: optionalText,
  REDIS_URL: optionalText.refine((v) => v === undefined || /^rediss?:\/\/./.test(v), {
    message: 'must be a redis:// or rediss:// URL',
  }),
  REDIS_PREFIX: optionalText.refine((v) => v === undefined || /^[\w{}:-]{1,64}$/.test(v), {
    message: 'must be 1-64 letters, digits, _ - : { }',
  }),
  PORT: positiveNumber(8080, true, 65535),
  PUBLIC_URL: httpUrl('PUBLIC_URL'),
  TIMEZONE: optionalText.transform((value, ctx) => {
    const zone = canonicalTimeZone(value ?? 'Europe/Moscow');
    if (zone === undefined)
      ctx.addIssue({ code: 'custom', message: `must be an IANA time zone such as Europe/Moscow (got "${value}")` });
    return zone ?? 'Europe/Moscow';
  }),
  WEEK_PARITY_ANCHORS: dateList,
  HOLIDAYS: holidays,
  REFRESH_INTERVAL: duration('30m', 60_000),
  UPSTREAM_RATE_LIMIT: positiveNumber(10, false, 10_000),
  UPSTREAM_TIMEOUT: duration('15s', 1_000),
  WORKER_CONCURRENCY: positiveNumber(8, true, 1_000),
  REFRESH_ATTEMPTS: positiveNumber(5, true, 100),
  REFRESH_BACKOFF: duration('15s', 10),
  CONFIRM_DELAY: duration('1m', 10),
  CANCELLED_RETENTION: duration('14d', 0),
  INACTIVE_AFTER: duration('30d', 60_000),
  ADMIN_TOKEN: secret(16),
  SECRET_KEY: secretKey,
  GOOGLE_CLIENT_ID: optionalText,
  GOOGLE_CLIENT_SECRET: secret(1),
  GOOGLE_API_ROOT_URL: httpUrl('GOOGLE_API_ROOT_URL'),
  GOOGLE_OAUTH_TOKEN_URL: httpUrl('GOOGLE_OAUTH_TOKEN_URL'),
  GOOGLE_OAUTH_AUTH_URL: httpUrl('GOOGLE_OAUTH_AUTH_URL'),
  GOOGLE_USER_RATE_LIMIT: positiveNumber(500, true, 570),
  GOOGLE_RATE_LIMIT: positiveNumber(100, false, 10_000),
  GOOGLE_QUOTA_PAUSE: duration('6h', 1_000),
  GOOGLE_RECONCILE_INTERVAL: duration('6h', 60_000),
  PUSH_CONCURRENCY: positiveNumber(4, true, 1_000),
  LOG_LEVEL: optionalText.refine((v) => v === undefined || (LOG_LEVELS as readonly string[]).includes(v), {
    message: `must be one of ${LOG_LEVELS.join(', ')}`,
  }),
  DATA_DIR: optionalText,
});

type ParsedEnv = z.output<typeof envSchema>;

/**
 * Parses the environment into a frozen {@link Config}. Every bad or missing variable is collected into one
 * {@link ConfigError}; nothing is read from `process.env` anywhere else.
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  required: readonly RequiredSetting[] = [],
): Config {
  const result = envSchema.safeParse(env);
  const problems = result.success
    ? []
    : result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  for (const name of required) {
    if (optionalValue(env[name]) === undefined) problems.push(`${name}: is required for this command`);
  }
  if (optionalValue(env.GOOGLE_CLIENT_ID) !== undefined && optionalValue(env.GOOGLE_CLIENT_SECRET) === undefined) {
    problems.push('GOOGLE_CLIENT_SECRET: is required when GOOGLE_CLIENT_ID is set');
  }
  if (!result.success || problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(toConfig(result.data));
}

/**
 * The process environment, with the variables of a `.env` file in `cwd` (if there is one) filling in those
 * the environment does not set: the real environment always wins.
 */
export function readEnvironment(cwd: string = process.cwd()): Record<string, string | undefined> {
  const file = join(cwd, '.env');
  const fromFile = existsSync(file) ? parseEnv(readFileSync(file, 'utf8')) : {};
  return { ...fromFile, ...process.env };
}

function optionalValue(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

function toConfig(env: ParsedEnv): Config {
  const port = env.PORT;
  return {
    universityApiUrl: env.UNIVERSITY_API_URL,
    universityAuthHeader: env.UNIVERSITY_AUTH_HEADER ?? 'Authorization',
    universityAuthScheme: env.UNIVERSITY_AUTH_SCHEME?.trim() ?? 'Bearer',
    universityCredential: env.UNIVERSITY_CREDENTIAL,
    redisUrl: env.REDIS_URL,
    redisPrefix: env.REDIS_PREFIX ?? 'tts',
    port,
    publicUrl: (env.PUBLIC_URL ?? `http://localhost:${port}`).replace(/\/+$/, ''),
    timezone: env.TIMEZONE,
    weekParityAnchors: Object.freeze(env.WEEK_PARITY_ANCHORS),
    holidays: Object.freeze(env.HOLIDAYS),
    refreshIntervalMs: env.REFRESH_INTERVAL,
    upstreamRateLimit: env.UPSTREAM_RATE_LIMIT,
    upstreamTimeoutMs: env.UPSTREAM_TIMEOUT,
    workerConcurrency: env.WORKER_CONCURRENCY,
    refreshAttempts: env.REFRESH_ATTEMPTS,
    refreshBackoffMs: env.REFRESH_BACKOFF,
    confirmDelayMs: env.CONFIRM_DELAY,
    cancelledRetentionMs: env.CANCELLED_RETENTION,
    inactiveAfterMs: env.INACTIVE_AFTER,
    adminToken: env.ADMIN_TOKEN,
    secretKey: env.SECRET_KEY,
    googleClientId: env.GOOGLE_CLIENT_ID,
    googleClientSecret: env.GOOGLE_CLIENT_SECRET,
    googleApiRootUrl: env.GOOGLE_API_ROOT_URL ?? 'https://www.googleapis.com/',
    googleOauthTokenUrl: env.GOOGLE_OAUTH_TOKEN_URL ?? 'https://oauth2.googleapis.com/token',
    googleOauthAuthUrl: env.GOOGLE_OAUTH_AUTH_URL ?? 'https://accounts.google.com/o/oauth2/v2/auth',
    googleUserRateLimit: env.GOOGLE_USER_RATE_LIMIT,
    googleRateLimit: env.GOOGLE_RATE_LIMIT,
    googleQuotaPauseMs: env.GOOGLE_QUOTA_PAUSE,
    googleReconcileIntervalMs: env.GOOGLE_RECONCILE_INTERVAL,
    pushConcurrency: env.PUSH_CONCURRENCY,
    logLevel: (env.LOG_LEVEL ?? 'info') as LogLevel,
    dataDir: env.DATA_DIR ?? '.data',
  };
}
