/**
 * The service's whole configuration, parsed once from the environment into a typed, frozen object. Every
 * setting is one row of {@link SETTINGS}: the variable it is read from and the schema that reads it, default
 * included; the `Config` type, the list of variables and the parsing are derived from that table.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { z } from 'zod';
import {
  bearerSecret,
  dateList,
  duration,
  holidayList,
  httpUrl,
  httpUrlOr,
  matching,
  optionalText,
  positiveNumber,
  rate,
  secret,
  secretKey,
  text,
  trustProxy,
} from './lib/env-values.ts';
import { hasHashTag, parseRedisNodes, type RedisTarget } from './lib/redis-target.ts';
import { LOG_LEVELS, type LogLevel } from './logger.ts';
import { canonicalTimeZone } from './timetable/vtimezone.ts';

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** An empty scheme is meaningful (a bare credential), so this one is not trimmed to undefined. */
const authScheme = z
  .string()
  .optional()
  .refine((value) => value === undefined || value.trim() === '' || HEADER_NAME.test(value.trim()), {
    message: 'must be an HTTP auth scheme such as Bearer, or empty for a bare credential',
  })
  .transform((value) => value?.trim() ?? 'Bearer');

const timezone = optionalText.transform((value, ctx) => {
  const zone = canonicalTimeZone(value ?? 'Europe/Moscow');
  if (zone === undefined)
    ctx.addIssue({ code: 'custom', message: `must be an IANA time zone such as Europe/Moscow (got "${value}")` });
  return zone ?? 'Europe/Moscow';
});

/**
 * Kept as written, trailing space included (it separates the prefix from the title); only line breaks and other
 * control characters are refused, since the prefix becomes part of every cancelled SUMMARY.
 */
const cancelledTitlePrefix = z
  .string()
  .optional()
  .refine((value) => value === undefined || !/\p{Cc}/u.test(value), {
    message: 'must not contain line breaks or other control characters',
  })
  .transform((value) => value ?? 'Отменено: ');

const logLevel = matching(
  new RegExp(`^(${LOG_LEVELS.join('|')})$`),
  `must be one of ${LOG_LEVELS.join(', ')}`,
).transform((value) => (value ?? 'info') as LogLevel);

/** A comma list of `host:port` (sentinels or cluster nodes). */
const redisNodes = optionalText.transform((value, ctx) => {
  if (value === undefined) return undefined;
  const nodes = parseRedisNodes(value);
  if (typeof nodes === 'string') ctx.addIssue({ code: 'custom', message: nodes });
  return typeof nodes === 'string' ? undefined : Object.freeze(nodes);
});

/** Default of `FEED_CACHE_MB`. */
export const DEFAULT_FEED_CACHE_MB = 256;

/** One setting: the environment variable it is read from, and how (the schema applies the default). */
function setting<const E extends string, T extends z.ZodType>(env: E, schema: T): { env: E; schema: T } {
  return { env, schema };
}

/** Every setting, by its name in {@link Config}. The README and `.env.example` document the same list. */
const SETTINGS = {
  universityApiUrl: setting('UNIVERSITY_API_URL', httpUrl('UNIVERSITY_API_URL')),
  universityAuthHeader: setting(
    'UNIVERSITY_AUTH_HEADER',
    matching(HEADER_NAME, 'must be an HTTP header name').transform((value) => value ?? 'Authorization'),
  ),
  universityAuthScheme: setting('UNIVERSITY_AUTH_SCHEME', authScheme),
  /** A user's university credential, for `render --me` only; a secret. */
  universityCredential: setting('UNIVERSITY_CREDENTIAL', optionalText),
  /** Unset: the process runs (or finds) an embedded `redis-server` under {@link Config.dataDir}. */
  redisUrl: setting('REDIS_URL', matching(/^rediss?:\/\/./, 'must be a redis:// or rediss:// URL')),
  /** Sentinels (`host:port,…`) to ask for the current primary, instead of REDIS_URL; with REDIS_SENTINEL_MASTER. */
  redisSentinels: setting('REDIS_SENTINELS', redisNodes),
  /** The name the sentinels monitor the primary under. */
  redisSentinelMaster: setting(
    'REDIS_SENTINEL_MASTER',
    matching(/^[\w.-]{1,128}$/, "must be the monitored primary's name: letters, digits, _ . -"),
  ),
  /** The sentinels' own password (their `requirepass`); a secret. */
  redisSentinelPassword: setting('REDIS_SENTINEL_PASSWORD', secret(1)),
  /** Cluster nodes (`host:port,…`, a few suffice: the rest are discovered), instead of REDIS_URL. */
  redisClusterNodes: setting('REDIS_CLUSTER_NODES', redisNodes),
  /** The data password of the Sentinel-managed or cluster servers (with REDIS_URL it is part of the URL); a secret. */
  redisPassword: setting('REDIS_PASSWORD', secret(1)),
  redisPrefix: setting(
    'REDIS_PREFIX',
    matching(/^[\w{}:-]{1,64}$/, 'must be 1-64 letters, digits, _ - : { }').transform((value) => value ?? 'tts'),
  ),
  port: setting('PORT', positiveNumber(8080, true, 65535)),
  /** Address HTTP listens on: `0.0.0.0` every IPv4 interface, `::` every interface, `127.0.0.1` loopback only. */
  host: setting(
    'HOST',
    matching(/^[\w.:%[\]-]{1,253}$/, 'must be an IP address or host name such as 0.0.0.0, :: or 127.0.0.1').transform(
      (value) => value ?? '0.0.0.0',
    ),
  ),
  /** Without a trailing slash; default `http://localhost:<PORT>`. */
  publicUrl: setting('PUBLIC_URL', httpUrl('PUBLIC_URL')),
  timezone: setting('TIMEZONE', timezone),
  /** Term starts, ISO dates (YYYY-MM-DD); empty: inferred from the timetables (docs/design.md). */
  weekParityAnchors: setting('WEEK_PARITY_ANCHORS', dateList),
  /** ISO dates on which no class takes place. */
  holidays: setting('HOLIDAYS', holidayList),
  refreshIntervalMs: setting('REFRESH_INTERVAL', duration('30m', 60_000)),
  /** Upstream requests per second, over all workers together. */
  upstreamRateLimit: setting('UPSTREAM_RATE_LIMIT', positiveNumber(10, false, 10_000)),
  upstreamTimeoutMs: setting('UPSTREAM_TIMEOUT', duration('15s', 1_000)),
  /**
   * How long a request (sign-up, teacher search) waits for a token of the upstream budget it shares with the
   * refreshes before answering 503 with Retry-After; refresh jobs always wait.
   */
  upstreamRequestWaitMs: setting('UPSTREAM_REQUEST_WAIT', duration('2s', 0)),
  /** Which proxies' X-Forwarded-For names the client: false, true, a hop count, or addresses/CIDR ranges. */
  trustProxy: setting('TRUST_PROXY', trustProxy),
  /** First requests for a timetable never fetched yet (each costs the university a call), per client address. */
  firstRequestsPerClient: setting('FIRST_REQUESTS_PER_CLIENT', rate('30/1m')),
  /** The same, over all clients. */
  firstRequestsTotal: setting('FIRST_REQUESTS_TOTAL', rate('120/1m')),
  /** Sign-ups and credential replacements (each asks the university who the credential is), per client. */
  signUpsPerClient: setting('SIGN_UPS_PER_CLIENT', rate('20/10m')),
  /** The same, over all clients. */
  signUpsTotal: setting('SIGN_UPS_TOTAL', rate('60/1m')),
  /** Sign-ups and replacements the university refused, per client: beyond it, one more per refill only. */
  failedSignUpsPerClient: setting('FAILED_SIGN_UPS_PER_CLIENT', rate('5/15m')),
  /**
   * The same, over all clients: when it is used up, only clients without a refusal in their own refill time may
   * try (a guesser spread over many addresses is bounded; a person who typed nothing wrong is not refused).
   */
  failedSignUpsTotal: setting('FAILED_SIGN_UPS_TOTAL', rate('30/15m')),
  /** Sign-ups and replacements of one client waiting for the university at once (per API process). */
  signUpsInFlightPerClient: setting('SIGN_UPS_IN_FLIGHT_PER_CLIENT', positiveNumber(8, true, 1_000)),
  /** Teacher searches that miss the cache, per client. */
  searchesPerClient: setting('SEARCHES_PER_CLIENT', rate('30/1m')),
  /** The same, over all clients. */
  searchesTotal: setting('SEARCHES_TOTAL', rate('120/1m')),
  /** `GET /google/connect` (each stores a pending consent), per client. */
  googleConnectsPerClient: setting('GOOGLE_CONNECTS_PER_CLIENT', rate('10/10m')),
  /** The same, over all clients. */
  googleConnectsTotal: setting('GOOGLE_CONNECTS_TOTAL', rate('60/1m')),
  /** New feed variants (`?title=…` and the like, not in the variant cache yet) rendered for one client. */
  variantRendersPerClient: setting('VARIANT_RENDERS_PER_CLIENT', rate('20/1m')),
  /**
   * MiB an api process keeps feeds in: trusted and last good copies, in every form made (docs/design.md). The
   * gzip forms of 20,000 group feeds take about 120 MiB.
   */
  feedCacheMb: setting('FEED_CACHE_MB', positiveNumber(DEFAULT_FEED_CACHE_MB, true, 65_536)),
  /** Concurrent refresh jobs per worker process. */
  workerConcurrency: setting('WORKER_CONCURRENCY', positiveNumber(8, true, 1_000)),
  /** Tries of a refresh job before its source is marked stale (retries back off exponentially, with jitter). */
  refreshAttempts: setting('REFRESH_ATTEMPTS', positiveNumber(5, true, 100)),
  /** First retry delay of a failed refresh; doubled on every further retry. */
  refreshBackoffMs: setting('REFRESH_BACKOFF', duration('15s', 10)),
  /** Delay of the re-fetch that confirms a refresh removing most future classes. */
  confirmDelayMs: setting('CONFIRM_DELAY', duration('1m', 10)),
  /** How long a removed future class stays in feeds as STATUS:CANCELLED. */
  cancelledRetentionMs: setting('CANCELLED_RETENTION', duration('14d', 0)),
  /**
   * Put before the title of a cancelled class, in feeds and in Google (several calendar apps ignore
   * STATUS:CANCELLED); empty: titles stay as they are and Google deletes cancelled classes at once.
   */
  cancelledTitlePrefix: setting('CANCELLED_TITLE_PREFIX', cancelledTitlePrefix),
  /** A source whose feed nobody requested for this long stops being refreshed. */
  inactiveAfterMs: setting('INACTIVE_AFTER', duration('30d', 60_000)),
  adminToken: setting('ADMIN_TOKEN', bearerSecret(16)),
  /** Bearer token `/metrics` asks for, for a scraper that comes through a proxy; unset: `/metrics` is open. */
  metricsToken: setting('METRICS_TOKEN', bearerSecret(16)),
  /** 32-byte key for AES-256-GCM encryption of stored credentials and refresh tokens. */
  secretKey: setting('SECRET_KEY', secretKey),
  googleClientId: setting('GOOGLE_CLIENT_ID', optionalText),
  googleClientSecret: setting('GOOGLE_CLIENT_SECRET', secret(1)),
  googleApiRootUrl: setting('GOOGLE_API_ROOT_URL', httpUrlOr('GOOGLE_API_ROOT_URL', 'https://www.googleapis.com/')),
  googleOauthTokenUrl: setting(
    'GOOGLE_OAUTH_TOKEN_URL',
    httpUrlOr('GOOGLE_OAUTH_TOKEN_URL', 'https://oauth2.googleapis.com/token'),
  ),
  /** Google's consent page (the fake Google server's in tests). */
  googleOauthAuthUrl: setting(
    'GOOGLE_OAUTH_AUTH_URL',
    httpUrlOr('GOOGLE_OAUTH_AUTH_URL', 'https://accounts.google.com/o/oauth2/v2/auth'),
  ),
  /** Google Calendar API requests per minute per Google user, over all workers (Google allows 600). */
  googleUserRateLimit: setting('GOOGLE_USER_RATE_LIMIT', positiveNumber(500, true, 570)),
  /** Google Calendar API requests per second over all workers and users. */
  googleRateLimit: setting('GOOGLE_RATE_LIMIT', positiveNumber(100, false, 10_000)),
  /** How long a target rests after Google's "Calendar usage limits exceeded". */
  googleQuotaPauseMs: setting('GOOGLE_QUOTA_PAUSE', duration('6h', 1_000)),
  /** How often each target is compared with what its calendar really holds (and its index repaired). */
  googleReconcileIntervalMs: setting('GOOGLE_RECONCILE_INTERVAL', duration('6h', 60_000)),
  /** Concurrent push jobs per worker process. */
  pushConcurrency: setting('PUSH_CONCURRENCY', positiveNumber(4, true, 1_000)),
  logLevel: setting('LOG_LEVEL', logLevel),
  /** Where embedded Redis keeps its data and address file. */
  dataDir: setting('DATA_DIR', text('.data')),
  // HTTP server limits: a slow or idle client must not hold a connection forever (docs/design.md).
  /** Time a client has to send a whole request, body included (answered 408 beyond it). */
  httpRequestTimeoutMs: setting('HTTP_REQUEST_TIMEOUT', duration('30s', 1_000)),
  /** Time a client has to send a request's headers; at most HTTP_REQUEST_TIMEOUT. */
  httpHeadersTimeoutMs: setting('HTTP_HEADERS_TIMEOUT', duration('10s', 1_000)),
  /** A connection with no byte in either direction for this long is closed. */
  httpIdleTimeoutMs: setting('HTTP_IDLE_TIMEOUT', duration('60s', 1_000)),
  /** How long a kept-alive connection waits for its next request; longer than a proxy's own idle timeout. */
  httpKeepAliveTimeoutMs: setting('HTTP_KEEP_ALIVE_TIMEOUT', duration('72s', 1_000)),
  /** Open connections one process holds; a newcomer replaces one that sent nothing, waits or is slow sending. */
  httpMaxConnections: setting('HTTP_MAX_CONNECTIONS', positiveNumber(4096, true, 1_000_000)),
  /** Open connections one client address may hold (TRUST_PROXY's proxies excepted); replaced as above. */
  httpMaxConnectionsPerAddress: setting('HTTP_MAX_CONNECTIONS_PER_ADDRESS', positiveNumber(256, true, 1_000_000)),
};

type Settings = typeof SETTINGS;

/** The service's whole configuration (see {@link SETTINGS} for what each field means). */
export type Config = {
  readonly [K in Exclude<keyof Settings, 'publicUrl'>]: z.output<Settings[K]['schema']>;
} & {
  /** Base URL of the links the service hands out, without a trailing slash. */
  readonly publicUrl: string;
  /**
   * The Redis every connection goes to, from REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES (at most one is
   * set); undefined: the embedded redis-server under {@link Config.dataDir}.
   */
  readonly redisTarget: RedisTarget | undefined;
};

/** The name of an environment variable the service reads. */
export type EnvName = Settings[keyof Settings]['env'];

/** Names of settings a command can demand on top of the schema (for example a worker needs the upstream). */
export type RequiredSetting = Extract<
  EnvName,
  'UNIVERSITY_API_URL' | 'UNIVERSITY_CREDENTIAL' | 'ADMIN_TOKEN' | 'SECRET_KEY' | 'REDIS_URL'
>;

/** Every variable the service reads (the source of `.env.example`, which a test holds to it). */
export const ENV_VARIABLES: readonly EnvName[] = Object.values(SETTINGS).map((entry) => entry.env);

/** Thrown when the environment is invalid; `problems` names every bad variable and why. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.problems = problems;
  }
}

const envSchema = z.object(Object.fromEntries(Object.values(SETTINGS).map((entry) => [entry.env, entry.schema])));

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
    if (isUnset(env[name])) problems.push(`${name}: is required for this command`);
  }
  if (!isUnset(env.GOOGLE_CLIENT_ID) && isUnset(env.GOOGLE_CLIENT_SECRET)) {
    problems.push('GOOGLE_CLIENT_SECRET: is required when GOOGLE_CLIENT_ID is set');
  }
  problems.push(...redisProblems(env));
  if (!result.success || problems.length > 0) throw new ConfigError(problems);
  const values = Object.fromEntries(Object.entries(SETTINGS).map(([key, entry]) => [key, result.data[entry.env]]));
  const partial = values as Omit<Config, 'publicUrl' | 'redisTarget'> & { publicUrl: string | undefined };
  const publicUrl = (partial.publicUrl ?? `http://localhost:${partial.port}`).replace(/\/+$/, '');
  if (partial.httpHeadersTimeoutMs > partial.httpRequestTimeoutMs) {
    throw new ConfigError([
      'HTTP_HEADERS_TIMEOUT: must not be longer than HTTP_REQUEST_TIMEOUT (headers are part of the request)',
    ]);
  }
  // On a cluster the default prefix becomes a hash tag (a prefix of one's own must hold one: redisProblems).
  const redisPrefix =
    partial.redisClusterNodes && isUnset(env.REDIS_PREFIX) ? `{${partial.redisPrefix}}` : partial.redisPrefix;
  return Object.freeze({ ...partial, publicUrl, redisPrefix, redisTarget: redisTarget(partial) });
}

/** The Redis variables that choose a topology; exactly one of them, or none (embedded Redis). */
const REDIS_TOPOLOGIES = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'] as const;

/** What is wrong with how the Redis variables combine (each one alone was checked by its schema). */
function redisProblems(env: Record<string, string | undefined>): string[] {
  const set = (name: string) => !isUnset(env[name]);
  const problems: string[] = [];
  const chosen = REDIS_TOPOLOGIES.filter(set);
  if (chosen.length > 1)
    problems.push(`${chosen.join(', ')}: set only one of ${REDIS_TOPOLOGIES.join(', ')} (one Redis per deployment)`);
  if (set('REDIS_SENTINELS') !== set('REDIS_SENTINEL_MASTER'))
    problems.push(
      "REDIS_SENTINELS, REDIS_SENTINEL_MASTER: set both (the sentinels, and the primary's name) or neither",
    );
  if (set('REDIS_SENTINEL_PASSWORD') && !set('REDIS_SENTINELS'))
    problems.push('REDIS_SENTINEL_PASSWORD: only used with REDIS_SENTINELS');
  if (set('REDIS_PASSWORD') && !set('REDIS_SENTINELS') && !set('REDIS_CLUSTER_NODES'))
    problems.push(
      'REDIS_PASSWORD: only used with REDIS_SENTINELS or REDIS_CLUSTER_NODES (with REDIS_URL, put it in the URL)',
    );
  const prefix = env.REDIS_PREFIX?.trim();
  if (set('REDIS_CLUSTER_NODES') && prefix && !hasHashTag(prefix))
    problems.push(
      `REDIS_PREFIX: with REDIS_CLUSTER_NODES it must hold a hash tag such as {${prefix}} ` +
        '(every key and queue of the service must share one cluster slot)',
    );
  return problems;
}

/**
 * The Redis target of the parsed values (already checked by {@link redisProblems}). A cluster without its own
 * REDIS_PREFIX gets the default prefix as a hash tag, `{tts}`, so that multi-key scripts stay in one slot.
 */
function redisTarget(values: Omit<Config, 'publicUrl' | 'redisTarget'>): RedisTarget | undefined {
  if (values.redisUrl) return { kind: 'standalone', url: values.redisUrl };
  if (values.redisSentinels && values.redisSentinelMaster)
    return {
      kind: 'sentinel',
      sentinels: values.redisSentinels,
      master: values.redisSentinelMaster,
      sentinelPassword: values.redisSentinelPassword,
      password: values.redisPassword,
    };
  if (values.redisClusterNodes)
    return { kind: 'cluster', nodes: values.redisClusterNodes, password: values.redisPassword };
  return undefined;
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

function isUnset(value: string | undefined): boolean {
  return value === undefined || value.trim() === '';
}
