/**
 * The service's whole configuration, parsed once from the environment into a typed, frozen object. Every
 * setting is one row of {@link SETTINGS}: the variable it is read from, the schema that reads it (default
 * included) and what the reference says of it; the `Config` type, the list of variables, the parsing, and
 * docs/configuration.md and .env.example (`npm run docs`) are derived from that table.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { z } from 'zod';
import {
  bearerSecret,
  dateList,
  duration,
  flag,
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
  wholeNumber,
} from './lib/env-values.ts';
import { hasHashTag, parseRedisNodes, type RedisTarget } from './lib/redis-target.ts';
import { LOG_LEVELS, type LogLevel } from './logger.ts';
import type { QuietHours } from './timetable/notify-change.ts';
import { canonicalTimeZone } from './timetable/vtimezone.ts';

/** Whether `value` is a proxy URL undici's `ProxyAgent` takes: http, https or socks5 (socks as its alias). */
function isProxyUrl(value: string): boolean {
  try {
    return ['http:', 'https:', 'socks5:', 'socks:'].includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

/** Whether `value` is an SMTP relay's URL with a host: `smtp://` or `smtps://`. */
function isSmtpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'smtp:' || url.protocol === 'smtps:') && url.hostname !== '';
  } catch {
    return false;
  }
}

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

/**
 * Whole seconds from 1 s to 30 s (the `FEED_PUBLIC_MAX_AGE` of the feeds' `Cache-Control`): a proxy may serve a
 * copy this old, and a published change must reach its clients within a minute.
 */
const publicMaxAge = duration('30s', 1_000).transform((ms, ctx) => {
  if (ms !== 0 && (ms % 1_000 !== 0 || ms > 30_000))
    ctx.addIssue({ code: 'custom', message: `must be whole seconds from 1s to 30s such as 10s (got ${ms / 1_000}s)` });
  return ms / 1_000;
});

/** How background refreshes are planned (docs/design.md#freshness). */
export type RefreshPolicy = 'adaptive' | 'fixed';

const refreshPolicy = matching(/^(adaptive|fixed)$/, 'must be adaptive or fixed').transform(
  (value) => (value ?? 'adaptive') as RefreshPolicy,
);

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

/** `HH-HH` or `HH:MM-HH:MM` (local), or `off`: the hours change notifications wait out. */
const quietHours = optionalText.transform((value, ctx): QuietHours | undefined => {
  const text = value ?? '23-07';
  if (text.toLowerCase() === 'off') return undefined;
  const match = /^(\d{1,2})(?::(\d{2}))?-(\d{1,2})(?::(\d{2}))?$/.exec(text);
  const minute = (hours?: string, minutes?: string) =>
    hours === undefined || Number(hours) > 23 || Number(minutes ?? 0) > 59
      ? undefined
      : Number(hours) * 60 + Number(minutes ?? 0);
  const fromMinute = minute(match?.[1], match?.[2]);
  const toMinute = minute(match?.[3], match?.[4]);
  if (fromMinute === undefined || toMinute === undefined || fromMinute === toMinute) {
    ctx.addIssue({ code: 'custom', message: `must be off or two different local times such as 23-07 (got "${text}")` });
    return undefined;
  }
  return { fromMinute, toMinute };
});

/** Default of `FEED_CACHE_MB`. */
export const DEFAULT_FEED_CACHE_MB = 256;

/**
 * The sections of the settings reference (docs/configuration.md and .env.example, both generated from this file
 * by `npm run docs`), in the order they are shown, each with what its settings have in common.
 */
export const SETTING_GROUPS = {
  university: {
    title: 'University API',
    intro:
      'Where the timetables come from, and how hard the service may ask. The API itself is described in ' +
      'docs/university-api.md.',
  },
  limits: {
    title: 'Abuse limits',
    intro:
      'Requests that cost the university a call, or store something for an anonymous client, are limited per ' +
      'client address and in total: `<count>/<duration>` (`30/1m`: 30 a minute, refilled evenly), answered `429` ' +
      "with `Retry-After` beyond them. An IPv6 client is its /64, and its /48 has four times a client's allowance. " +
      'Behind a reverse proxy set `TRUST_PROXY`, or every client is the proxy; behind a campus NAT, raise the ' +
      'per-client limits for the number of people behind it (and the totals with them). How the limits work and ' +
      'what they were measured to do: docs/operations.md#abuse-limits.',
  },
  redis: {
    title: 'Redis',
    intro:
      'Unset, `start`, `api`, `worker` and `demo` run a private `redis-server` with its data and address under ' +
      '`DATA_DIR`. Set at most one of `REDIS_URL`, `REDIS_SENTINELS`, `REDIS_CLUSTER_NODES` (docs/redis.md says ' +
      'which to choose). `docker-compose.yml` sets `REDIS_URL` to its own Redis, and reads `REDIS_MAXMEMORY`, ' +
      "that Redis's memory ceiling (default `1gb`), which the service itself does not read.",
  },
  http: {
    title: 'HTTP',
    intro: 'Where the service listens, and the address it hands out in links.',
  },
  timetable: {
    title: 'Timetable semantics',
    intro:
      "How the university's rules become dated events: the rules are in docs/design.md#expansion-semantics. " +
      'Changing one of these re-renders the feeds it affects at their next refresh.',
  },
  feeds: {
    title: 'Feed serving (api role)',
    intro: 'What an api process keeps in memory to answer feeds (docs/design.md#feed-cache-and-its-budget).',
  },
  refresh: {
    title: 'Refresh jobs (worker role)',
    intro: 'How worker processes refresh timetables and what they keep of a class that disappears.',
  },
  secrets: {
    title: 'Secrets',
    intro:
      'Tokens and keys. They are never echoed in an error message nor written to a log. A bearer token must have ' +
      'at least 16 characters and be one word, and is refused when guessable (see `ADMIN_TOKEN`).',
  },
  google: {
    title: 'Google Calendar push',
    intro:
      'Without `GOOGLE_CLIENT_ID`, `GOOGLE_CLIENT_SECRET` and `SECRET_KEY` the Google routes answer `503` and push ' +
      'jobs do nothing. Setting up the OAuth client: docs/operations.md#google.',
  },
  caldav: {
    title: 'CalDAV push',
    intro:
      'Pushing timetables into CalDAV calendars (Yandex, iCloud, Nextcloud, Fastmail, any RFC 4791 server) with ' +
      "the person's own login and app password, kept sealed with `SECRET_KEY`.",
  },
  notify: {
    title: 'Change notifications',
    intro:
      'Telling people that a class moved, was cancelled or added: a MAX bot (on with `MAX_BOT_TOKEN`, docs/max.md), ' +
      'a Telegram bot (on with `TELEGRAM_BOT_TOKEN`, docs/telegram.md), e-mail (on with `SMTP_URL`, `MAIL_FROM` and ' +
      '`SECRET_KEY`, docs/email.md) and signed webhooks for integrators (`POST /admin/webhooks`).',
  },
  httpLimits: {
    title: 'HTTP server limits',
    intro:
      'A slow or idle client must not hold a connection forever, nor lock others out (docs/design.md#http). ' +
      'These bound one address, not one person: on the public internet a reverse proxy in front is expected to ' +
      'limit its clients.',
  },
  logging: {
    title: 'Logging',
    intro: 'Logs go to stdout (pino); credentials, tokens and authorization headers are never logged.',
  },
} as const;

/** A section of the settings reference. */
export type SettingGroup = keyof typeof SETTING_GROUPS;

/** What the settings reference says of one setting. Text is Markdown; `docs/….md` paths become links there. */
export interface SettingDoc {
  readonly group: SettingGroup;
  /** What it does, what it accepts, and what follows from it. */
  readonly meaning: string;
  /** The value the code applies when the variable is unset, as one would write it: `NAME=<default>` changes nothing. */
  readonly default?: string;
  /** The default in words where no value says it ("inferred from the timetables"), or what to add to `default`. */
  readonly defaultText?: string;
  /** A value one might set (it must be valid: a test loads it). */
  readonly example?: string;
  /** How to come by a value, where a literal example would be a bad idea (secrets). */
  readonly exampleText?: string;
}

/** One setting: the environment variable it is read from, how (the schema applies the default), and its doc. */
function setting<const E extends string, T extends z.ZodType>(
  env: E,
  schema: T,
  doc: SettingDoc,
): { env: E; schema: T; doc: SettingDoc } {
  return { env, schema, doc };
}

/** Every setting, by its name in {@link Config}: the one source of the list, the parsing and the reference. */
const SETTINGS = {
  universityApiUrl: setting('UNIVERSITY_API_URL', httpUrl('UNIVERSITY_API_URL'), {
    group: 'university',
    meaning:
      'Base URL of the university API (http or https). Required by `start`, `api`, `worker` and ' +
      "`docker compose up`; `demo` runs its bundled simulator instead, and Docker Compose's `simulator` profile " +
      'uses `http://simulator:4010`. `render --group`, `--employee` and `--me` need it too, except in the folder ' +
      'of a running `demo`.',
    defaultText: 'none',
    example: 'https://university.example/api',
  }),
  universityAuthHeader: setting(
    'UNIVERSITY_AUTH_HEADER',
    matching(HEADER_NAME, 'must be an HTTP header name').transform((value) => value ?? 'Authorization'),
    {
      group: 'university',
      meaning: "Header that carries a user's university credential on the `@me` endpoints.",
      default: 'Authorization',
      example: 'X-Auth-Token',
    },
  ),
  universityAuthScheme: setting('UNIVERSITY_AUTH_SCHEME', authScheme, {
    group: 'university',
    meaning:
      'Scheme written before the credential in that header; empty (`UNIVERSITY_AUTH_SCHEME=`) sends the ' +
      'credential bare.',
    default: 'Bearer',
    example: 'Token',
  }),
  universityCredential: setting('UNIVERSITY_CREDENTIAL', optionalText, {
    group: 'university',
    meaning: "A user's own university credential, read only by `render --me`. A secret: never logged.",
    defaultText: 'none',
    exampleText: 'your own credential, as the university gave it',
  }),
  universityTokenHelpUrl: setting('UNIVERSITY_TOKEN_HELP_URL', httpUrl('UNIVERSITY_TOKEN_HELP_URL'), {
    group: 'university',
    meaning:
      "A page of the university's information system where a student finds the token to sign in with; the sign-in " +
      'form on `/` links to it. Unset, the form says in general words where the token comes from.',
    defaultText: 'none',
    example: 'https://university.example/profile/tokens',
  }),
  redisUrl: setting('REDIS_URL', matching(/^rediss?:\/\/./, 'must be a redis:// or rediss:// URL'), {
    group: 'redis',
    meaning:
      '`redis://` or `rediss://` URL of one Redis (its password, if any, in the URL). Unset, with no Sentinel or ' +
      'Cluster either, `start`, `api`, `worker` and `demo` run a private `redis-server` under `DATA_DIR`, for ' +
      'one machine only (docs/operations.md#the-embedded-redis).',
    defaultText: 'unset: an embedded Redis',
    example: 'redis://127.0.0.1:6379',
  }),
  redisSentinels: setting('REDIS_SENTINELS', redisNodes, {
    group: 'redis',
    meaning:
      'Redis Sentinel: the sentinels to ask for the current primary (`host:port,…`), with ' +
      '`REDIS_SENTINEL_MASTER` (both or neither). Every connection follows a failover by itself.',
    defaultText: 'none',
    example: 'sentinel-1:26379,sentinel-2:26379,sentinel-3:26379',
  }),
  redisSentinelMaster: setting(
    'REDIS_SENTINEL_MASTER',
    matching(/^[\w.-]{1,128}$/, "must be the monitored primary's name: letters, digits, _ . -"),
    {
      group: 'redis',
      meaning: 'The name the sentinels monitor the primary under (letters, digits, `_ . -`), with `REDIS_SENTINELS`.',
      defaultText: 'none',
      example: 'timetable',
    },
  ),
  redisSentinelPassword: setting('REDIS_SENTINEL_PASSWORD', secret(1), {
    group: 'redis',
    meaning:
      "The sentinels' own password (`requirepass` in `sentinel.conf`), if they have one; only with " +
      '`REDIS_SENTINELS`. A secret.',
    defaultText: 'none',
    exampleText: 'the `requirepass` of `sentinel.conf`',
  }),
  redisClusterNodes: setting('REDIS_CLUSTER_NODES', redisNodes, {
    group: 'redis',
    meaning:
      "Redis Cluster: a few of its nodes (`host:port,…`); the others are discovered. All keys share the prefix's " +
      'hash tag, so the service lives on one primary of the cluster.',
    defaultText: 'none',
    example: 'redis-1:6379,redis-2:6379,redis-3:6379',
  }),
  redisPassword: setting('REDIS_PASSWORD', secret(1), {
    group: 'redis',
    meaning:
      'The data password of the Sentinel-managed servers or of the cluster nodes; only with `REDIS_SENTINELS` or ' +
      '`REDIS_CLUSTER_NODES` (with `REDIS_URL`, put it in the URL). A secret.',
    defaultText: 'none',
    exampleText: "the servers' `requirepass`",
  }),
  redisPrefix: setting(
    'REDIS_PREFIX',
    matching(/^[\w{}:-]{1,64}$/, 'must be 1-64 letters, digits, _ - : { }').transform((value) => value ?? 'tts'),
    {
      group: 'redis',
      meaning:
        'Prefix of every key and queue (1–64 letters, digits, `_ - : { }`). On Redis Cluster it must hold a hash ' +
        'tag (`{…}`), so that every key and queue shares one slot.',
      default: 'tts',
      defaultText: '`{tts}` on a cluster',
      example: '{uni-x}',
    },
  ),
  port: setting('PORT', positiveNumber(8080, true, 65535), {
    group: 'http',
    meaning: 'HTTP port. Every role serves on it, a worker only `/healthz`, `/readyz` and `/metrics`.',
    default: '8080',
    example: '3000',
  }),
  host: setting(
    'HOST',
    matching(/^[\w.:%[\]-]{1,253}$/, 'must be an IP address or host name such as 0.0.0.0, :: or 127.0.0.1').transform(
      (value) => value ?? '0.0.0.0',
    ),
    {
      group: 'http',
      meaning:
        'Address HTTP listens on: `0.0.0.0` every IPv4 interface, `::` every interface, `127.0.0.1` loopback only ' +
        '(`demo` always listens on loopback).',
      default: '0.0.0.0',
      example: '127.0.0.1',
    },
  ),
  publicUrl: setting('PUBLIC_URL', httpUrl('PUBLIC_URL'), {
    group: 'http',
    meaning:
      'Base URL of the links the service hands out (feed URLs; Google returns to `$PUBLIC_URL/google/callback`); ' +
      "a trailing slash is dropped. The consent cookie's `Secure` flag follows it, so behind a proxy that ends " +
      'TLS set the `https://` address people use.',
    defaultText: '`http://localhost:$PORT`',
    example: 'https://timetable.example.edu',
  }),
  timezone: setting('TIMEZONE', timezone, {
    group: 'timetable',
    meaning:
      "IANA zone of the university's wall-clock times, canonicalised at start (`US/Eastern` becomes " +
      '`America/New_York`), so that every TZID has its VTIMEZONE.',
    default: 'Europe/Moscow',
    example: 'Asia/Yekaterinburg',
  }),
  weekParityAnchors: setting('WEEK_PARITY_ANCHORS', dateList, {
    group: 'timetable',
    meaning:
      'Comma list of `YYYY-MM-DD` term starts (first study days), each starting a week count (week 1 is odd). ' +
      "Set, it pins parity: exactly these dates, nothing inferred. Unset, each half-year's term start is the " +
      'start date most entries of the stored timetables share, and with no data at all 1 September of every ' +
      'year (docs/design.md#expansion-semantics; how to check and pin it: docs/how-it-works.md#week-parity).',
    defaultText: 'inferred from the timetables',
    example: '2025-09-01,2026-02-09',
  }),
  holidays: setting('HOLIDAYS', holidayList, {
    group: 'timetable',
    meaning:
      'Dates without classes: a comma list of `YYYY-MM-DD`, or the path of a file with one date per line and ' +
      '`#` comments.',
    defaultText: 'none',
    example: '2025-11-04,2026-01-01,2026-01-07',
  }),
  refreshIntervalMs: setting('REFRESH_INTERVAL', duration('30m', 60_000), {
    group: 'timetable',
    meaning:
      'The longest an active source waits between two refreshes (parked ones excepted: `REFRESH_MAX_WAIT`), at ' +
      'least `1m`; background refreshes spend what refreshing every active source once per interval would cost ' +
      '(docs/design.md#freshness). Feeds also carry it as `REFRESH-INTERVAL` and `X-PUBLISHED-TTL`. Durations: ' +
      '`ms`, `s`, `m`, `h`, `d`; a bare number is seconds.',
    default: '30m',
    example: '15m',
  }),
  refreshMaxWaitMs: setting('REFRESH_MAX_WAIT', duration('4h', 60_000), {
    group: 'timetable',
    meaning:
      'The longest a parked source waits between two refreshes: one shown to equal what other sources already ' +
      "tell (a personal timetable equal to its group's, a teacher whose classes are all in refreshed groups). It " +
      'is refreshed at once when a related source changes. Not shorter than `REFRESH_INTERVAL`.',
    defaultText: '4h, or `REFRESH_INTERVAL` when that is longer',
    example: '2h',
  }),
  refreshPolicy: setting('REFRESH_POLICY', refreshPolicy, {
    group: 'timetable',
    meaning:
      '`adaptive`: background refreshes go where changes are (related sources at once, parked sources, order by ' +
      'expected value; docs/design.md#freshness). `fixed`: every active source on its own tick, every ' +
      '`REFRESH_INTERVAL` ±25%, as releases before it did.',
    default: 'adaptive',
    example: 'fixed',
  }),
  upstreamRateLimit: setting('UPSTREAM_RATE_LIMIT', positiveNumber(10, false, 10_000), {
    group: 'university',
    meaning:
      'Upstream requests per second, over all workers and API processes together: every call (retries, ' +
      'sign-up checks and teacher searches included) takes a token of this one budget, and refresh job starts are ' +
      'paced by it. Refreshes leave a reserve of it to calls a person waits for.',
    default: '10',
    example: '20',
  }),
  upstreamTimeoutMs: setting('UPSTREAM_TIMEOUT', duration('15s', 1_000), {
    group: 'university',
    meaning:
      'Timeout of one upstream request: the wait for its headers, and again for its body (`ms`, `s`, `m`, `h`, ' +
      '`d`; a bare number is seconds).',
    default: '15s',
    example: '30s',
  }),
  upstreamRequestWaitMs: setting('UPSTREAM_REQUEST_WAIT', duration('2s', 0), {
    group: 'university',
    meaning:
      'How long a request (sign-up, credential replacement, teacher search) waits for its share of ' +
      '`UPSTREAM_RATE_LIMIT` before answering `503` with `Retry-After`; refreshes always wait. It counts within ' +
      'the 5 s a call made inside a request gets end to end.',
    default: '2s',
    example: '1s',
  }),
  trustProxy: setting('TRUST_PROXY', trustProxy, {
    group: 'limits',
    meaning:
      'Whose `X-Forwarded-For` names the client: `true` (any proxy; only behind one that overwrites the header) ' +
      "or a comma list of the proxies' addresses/CIDR ranges; `false` is the same as unset. A hop count is " +
      'refused: it cannot tell a proxy from a client. nginx on the same machine: `127.0.0.1`; ' +
      '`docker-compose.yml` sets the private ranges Docker gives its networks.',
    defaultText: "unset (`false`): the connection's address is the client",
    example: '127.0.0.1,10.0.0.0/8',
  }),
  firstRequestsPerClient: setting('FIRST_REQUESTS_PER_CLIENT', rate('30/1m'), {
    group: 'limits',
    meaning:
      'First requests for a group or teacher feed or page never fetched yet (each costs the university a call), ' +
      'per client address.',
    default: '30/1m',
    example: '100/1m',
  }),
  firstRequestsTotal: setting('FIRST_REQUESTS_TOTAL', rate('120/1m'), {
    group: 'limits',
    meaning:
      'The same over all clients. First requests for ids nobody vouches for (a group not in the group directory, ' +
      'a teacher the university never named) may take only half of it: the rest stays for ids that are likely ' +
      'real.',
    default: '120/1m',
    example: '600/1m',
  }),
  signUpsPerClient: setting('SIGN_UPS_PER_CLIENT', rate('20/10m'), {
    group: 'limits',
    meaning: 'Sign-ups and credential replacements (each asks the university who the credential is), per client.',
    default: '20/10m',
    example: '200/10m',
  }),
  signUpsTotal: setting('SIGN_UPS_TOTAL', rate('60/1m'), {
    group: 'limits',
    meaning: 'The same over all clients.',
    default: '60/1m',
    example: '300/1m',
  }),
  failedSignUpsPerClient: setting('FAILED_SIGN_UPS_PER_CLIENT', rate('5/15m'), {
    group: 'limits',
    meaning:
      'Sign-ups and replacements the university refused, per client: after 5, one more try every 3 minutes with ' +
      'a credential new to the service (at the default). A credential the university accepted here in the last ' +
      '180 days is never refused by the failure limits.',
    default: '5/15m',
    example: '20/15m',
  }),
  failedSignUpsTotal: setting('FAILED_SIGN_UPS_TOTAL', rate('30/15m'), {
    group: 'limits',
    meaning:
      'The same over all clients (it bounds a guesser spread over many addresses). Once it is spent, only ' +
      'clients refused twice or more within their own refill time are refused (one refusal may be a typo, and ' +
      "behind a NAT anyone's), and only for credentials new to the service.",
    default: '30/15m',
    example: '100/15m',
  }),
  failedSignUpsPerAccepted: setting('FAILED_SIGN_UPS_PER_ACCEPTED', positiveNumber(1, true, 100), {
    group: 'limits',
    meaning:
      "How much a client's failure budget (`FAILED_SIGN_UPS_PER_CLIENT`) grows for each distinct person (university " +
      'user) whose credential the university accepted from it within `ACCEPTED_CREDENTIALS_WINDOW`, beyond the ' +
      "first: a campus NAT that has shown many students gets room for their typos, a lone guesser's budget stays " +
      'the base however many tokens of his own he sends. Capped by `FAILED_SIGN_UPS_MAX_PER_CLIENT`; to turn the ' +
      'growth off, set that to the base count.',
    default: '1',
    example: '2',
  }),
  acceptedCredentialsWindowMs: setting('ACCEPTED_CREDENTIALS_WINDOW', duration('24h', 3_600_000), {
    group: 'limits',
    meaning: "How long a credential the university accepted from a client widens that client's failure budget.",
    default: '24h',
    example: '12h',
  }),
  failedSignUpsMaxPerClient: setting('FAILED_SIGN_UPS_MAX_PER_CLIENT', positiveNumber(60, true, 10_000), {
    group: 'limits',
    meaning:
      'The most a grown failure budget of one client holds, per the period of `FAILED_SIGN_UPS_PER_CLIENT` (never ' +
      'less than its base count; equal to it, the budget never grows). It bounds the university checks one ' +
      'address may spend on guesses: at the defaults 60 per 15 minutes, reached only once 56 different people ' +
      'signed in from it within a day (a lecture hall behind one NAT), never by one person alone.',
    default: '60',
    example: '120',
  }),
  signUpsInFlightPerClient: setting('SIGN_UPS_IN_FLIGHT_PER_CLIENT', positiveNumber(8, true, 1_000), {
    group: 'limits',
    meaning:
      'Sign-ups and replacements of one client waiting for the university at once, per API process (beyond it: ' +
      '`429`).',
    default: '8',
    example: '32',
  }),
  searchesPerClient: setting('SEARCHES_PER_CLIENT', rate('30/1m'), {
    group: 'limits',
    meaning: 'Teacher searches that miss the cache (kept an hour), per client.',
    default: '30/1m',
    example: '100/1m',
  }),
  searchesTotal: setting('SEARCHES_TOTAL', rate('120/1m'), {
    group: 'limits',
    meaning: 'The same over all clients.',
    default: '120/1m',
    example: '600/1m',
  }),
  googleConnectsPerClient: setting('GOOGLE_CONNECTS_PER_CLIENT', rate('10/10m'), {
    group: 'limits',
    meaning: '`GET /google/connect` (each stores a pending consent), per client.',
    default: '10/10m',
    example: '50/10m',
  }),
  googleConnectsTotal: setting('GOOGLE_CONNECTS_TOTAL', rate('60/1m'), {
    group: 'limits',
    meaning: 'The same over all clients.',
    default: '60/1m',
    example: '200/1m',
  }),
  caldavConnectsPerClient: setting('CALDAV_CONNECTS_PER_CLIENT', rate('10/10m'), {
    group: 'limits',
    meaning: '`POST /caldav/connect` and a new app password on a manage page (each asks a CalDAV server), per client.',
    default: '10/10m',
    example: '30/10m',
  }),
  caldavConnectsTotal: setting('CALDAV_CONNECTS_TOTAL', rate('60/1m'), {
    group: 'limits',
    meaning: 'The same over all clients.',
    default: '60/1m',
    example: '200/1m',
  }),
  variantRendersPerClient: setting('VARIANT_RENDERS_PER_CLIENT', rate('20/1m'), {
    group: 'limits',
    meaning:
      'New feed variants (`?title=…`, `subgroup`, `exclude` not rendered yet) per client. Cached variants, ones ' +
      'rendered before for an earlier publication, and the saved options a plain personal feed URL serves are ' +
      'free.',
    default: '20/1m',
    example: '100/1m',
  }),
  feedCacheMb: setting('FEED_CACHE_MB', positiveNumber(DEFAULT_FEED_CACHE_MB, true, 65_536), {
    group: 'feeds',
    meaning:
      "MiB of an api process's memory for feeds: trusted copies and the last good ones served through a Redis " +
      'outage, in every form made (gzip, and identity and brotli once a client asks for them). The cache fills ' +
      'three quarters of it, the least recently served going first; the rest pays for what keeping them costs ' +
      'beyond their bytes. Each feed counts its forms plus about 3 KB of prepared headers: the gzip forms of ' +
      '20,000 group feeds take about 120 MiB and count about 180, within the 192 filled at the default. An api ' +
      'takes this plus a baseline, about 350 MiB at 20,000 sources (docs/operations.md#memory-of-an-api). ' +
      'Subscriber variants (`?title=…`) have their own 64 MiB apart from it.',
    default: String(DEFAULT_FEED_CACHE_MB),
    example: '512',
  }),
  feedPublicMaxAgeSeconds: setting('FEED_PUBLIC_MAX_AGE', publicMaxAge, {
    group: 'feeds',
    meaning:
      'How long the caching proxy (deploy/nginx.conf) and calendar apps may keep a group or teacher feed without ' +
      'asking again: its `Cache-Control: public, max-age`, in whole seconds from 1s to 30s. A change published ' +
      "reaches the proxy's clients at most this much later; more than 30 s would break the minute promised. " +
      'Lower means more revalidations (a 304 without a body each) for changes seen sooner.',
    default: '30s',
    example: '10s',
  }),
  workerConcurrency: setting('WORKER_CONCURRENCY', positiveNumber(8, true, 1_000), {
    group: 'refresh',
    meaning: 'Refresh jobs at once per worker process (the upstream rate limit still holds over all of them).',
    default: '8',
    example: '16',
  }),
  workerNice: setting('WORKER_NICE', wholeNumber(5, 0, 19), {
    group: 'refresh',
    meaning:
      'How much lower a `worker` process runs than the api on the CPU (its Unix niceness, 0 to 19): a first ' +
      'publication of every feed is CPU work, and where workers share cores with the api it must not slow feeds ' +
      'already published. The `start` role (api and worker in one process) keeps its priority; with Docker, give ' +
      'the containers CPU shares instead (docker-compose.yml does). `0` leaves the priority as it is.',
    default: '5',
    example: '10',
  }),
  refreshAttempts: setting('REFRESH_ATTEMPTS', positiveNumber(5, true, 100), {
    group: 'refresh',
    meaning:
      'Tries of a failing refresh before its feed is marked stale; retries back off exponentially, with jitter, ' +
      'from `REFRESH_BACKOFF`.',
    default: '5',
    example: '3',
  }),
  refreshBackoffMs: setting('REFRESH_BACKOFF', duration('15s', 10), {
    group: 'refresh',
    meaning: 'First retry delay of a failed refresh; doubles each retry, with jitter.',
    default: '15s',
    example: '30s',
  }),
  confirmDelayMs: setting('CONFIRM_DELAY', duration('1m', 10), {
    group: 'refresh',
    meaning:
      'A refresh that would remove more than half of the future classes is published only after a re-fetch ' +
      'this much later returns the same timetable.',
    default: '1m',
    example: '5m',
  }),
  cancelledRetentionMs: setting('CANCELLED_RETENTION', duration('14d', 0), {
    group: 'refresh',
    meaning:
      'How long a removed future class stays in feeds as `STATUS:CANCELLED` (one whose time comes meanwhile ' +
      'stays for good: the past is history).',
    default: '14d',
    example: '7d',
  }),
  cancelledTitlePrefix: setting('CANCELLED_TITLE_PREFIX', cancelledTitlePrefix, {
    group: 'refresh',
    meaning:
      'Put before the title of a cancelled class, in feeds and in Google (several apps ignore ' +
      '`STATUS:CANCELLED`); no line breaks or other control characters. Empty keeps titles as they are, and ' +
      'Google deletes cancelled classes at once.',
    default: 'Отменено: ',
    example: 'Cancelled: ',
  }),
  inactiveAfterMs: setting('INACTIVE_AFTER', duration('30d', 60_000), {
    group: 'refresh',
    meaning:
      'A source whose feed nobody requested for this long stops being refreshed, unless a Google calendar ' +
      'follows it. Its feed is still served, and the next request wakes it up.',
    default: '30d',
    example: '90d',
  }),
  adminToken: setting('ADMIN_TOKEN', bearerSecret(16), {
    group: 'secrets',
    meaning:
      'Bearer token of the admin routes (and the password of the queue board): at least 16 characters, no ' +
      'whitespace (a bearer token is one word), and not guessable: fewer than 6 different characters, under 32 ' +
      'bits of character entropy, a repeated pattern (`aaaaaaaaaaaaaaaa`, `passwordpassword`) or half made of ' +
      'ascending or descending runs of 4 or more (`abcdefghijklmnop`, `0123456789abcdef`) is refused.',
    defaultText: 'unset: admin routes answer `503`',
    exampleText: 'made by `openssl rand -hex 24`',
  }),
  metricsToken: setting('METRICS_TOKEN', bearerSecret(16), {
    group: 'secrets',
    meaning:
      'Bearer token `/metrics` asks for (`401` with `code` `METRICS_UNAUTHORIZED` without it), for a scraper that ' +
      'comes through a proxy; the same rules as `ADMIN_TOKEN`. Unset, `/metrics` is for a scraper inside the ' +
      'network: `deploy/nginx.conf` does not pass it.',
    defaultText: 'unset: `/metrics` is open',
    exampleText: 'made by `openssl rand -hex 24`',
  }),
  secretKey: setting('SECRET_KEY', secretKey, {
    group: 'secrets',
    meaning:
      '32 bytes (64 hex digits or base64) for AES-256-GCM encryption of stored credentials, Google refresh ' +
      'tokens, CalDAV app passwords and webhook secrets, and the key of credential digests; needed by sign-ups, ' +
      'calendar push and webhooks. A key with fewer than 16 different bytes (all zero, a repeated pattern) is ' +
      'refused as not random. Changing it makes stored refresh tokens and app passwords unreadable: their ' +
      'targets show `needs-consent` or `needs-password`.',
    defaultText: 'unset: sign-ups, calendar push and webhooks answer `503`',
    exampleText: 'made by `openssl rand -hex 32`',
  }),
  googleClientId: setting('GOOGLE_CLIENT_ID', optionalText, {
    group: 'google',
    meaning:
      'OAuth client for Google push: the id of a *Web application* client whose redirect URI is ' +
      '`$PUBLIC_URL/google/callback`. `GOOGLE_CLIENT_SECRET` is required with it.',
    defaultText: 'unset: Google push is off',
    example: '1234567890-abcdef.apps.googleusercontent.com',
  }),
  googleClientSecret: setting('GOOGLE_CLIENT_SECRET', secret(1), {
    group: 'google',
    meaning: "The OAuth client's secret, required once `GOOGLE_CLIENT_ID` is set. A secret.",
    defaultText: 'none',
    exampleText: 'from the Google Cloud console, with the client id',
  }),
  googleApiRootUrl: setting('GOOGLE_API_ROOT_URL', httpUrlOr('GOOGLE_API_ROOT_URL', 'https://www.googleapis.com/'), {
    group: 'google',
    meaning: 'Google API root; tests point it at the fake Google server.',
    default: 'https://www.googleapis.com/',
    example: 'http://127.0.0.1:4020/',
  }),
  googleOauthTokenUrl: setting(
    'GOOGLE_OAUTH_TOKEN_URL',
    httpUrlOr('GOOGLE_OAUTH_TOKEN_URL', 'https://oauth2.googleapis.com/token'),
    {
      group: 'google',
      meaning: "Google's OAuth token endpoint (the fake Google server's in tests).",
      default: 'https://oauth2.googleapis.com/token',
      example: 'http://127.0.0.1:4020/token',
    },
  ),
  googleOauthAuthUrl: setting(
    'GOOGLE_OAUTH_AUTH_URL',
    httpUrlOr('GOOGLE_OAUTH_AUTH_URL', 'https://accounts.google.com/o/oauth2/v2/auth'),
    {
      group: 'google',
      meaning: "Google's consent page (the fake Google server's in tests).",
      default: 'https://accounts.google.com/o/oauth2/v2/auth',
      example: 'http://127.0.0.1:4020/auth',
    },
  ),
  googleUserRateLimit: setting('GOOGLE_USER_RATE_LIMIT', positiveNumber(500, true, 570), {
    group: 'google',
    meaning:
      'Calendar API requests per minute per Google user, over all workers (Google allows 600; at most 570, to ' +
      'keep a margin for arrival jitter).',
    default: '500',
    example: '300',
  }),
  googleRateLimit: setting('GOOGLE_RATE_LIMIT', positiveNumber(100, false, 10_000), {
    group: 'google',
    meaning: 'Calendar API requests per second over all users and workers.',
    default: '100',
    example: '50',
  }),
  googleQuotaPauseMs: setting('GOOGLE_QUOTA_PAUSE', duration('6h', 1_000), {
    group: 'google',
    meaning: 'How long a calendar rests after Google answers "Calendar usage limits exceeded" (`quotaExceeded`).',
    default: '6h',
    example: '12h',
  }),
  googleReconcileIntervalMs: setting('GOOGLE_RECONCILE_INTERVAL', duration('6h', 60_000), {
    group: 'google',
    meaning:
      "How often each connected calendar is compared with what Google really holds, and the target's index " +
      'repaired from it.',
    default: '6h',
    example: '24h',
  }),
  pushConcurrency: setting('PUSH_CONCURRENCY', positiveNumber(4, true, 1_000), {
    group: 'google',
    meaning: 'Push jobs at once per worker process.',
    default: '4',
    example: '8',
  }),
  caldavRateLimit: setting('CALDAV_RATE_LIMIT', positiveNumber(5, false, 1_000), {
    group: 'caldav',
    meaning:
      'Requests per second to one CalDAV server host, over all targets and workers (Yandex is known to throttle ' +
      'and answer `504`). A host answering `429`, `503` or `504` also cools down for its `Retry-After`.',
    default: '5',
    example: '2',
  }),
  caldavReconcileIntervalMs: setting('CALDAV_RECONCILE_INTERVAL', duration('6h', 60_000), {
    group: 'caldav',
    meaning:
      "How often each CalDAV calendar is listed (its sync token or ETags) and the target's index repaired from " +
      'it: resources deleted by hand come back if still wanted, duplicates go.',
    default: '6h',
    example: '24h',
  }),
  caldavPauseMs: setting('CALDAV_PAUSE', duration('6h', 1_000), {
    group: 'caldav',
    meaning: 'How long a CalDAV target rests after its server answers `403` (forbidden) or `507` (storage full).',
    default: '6h',
    example: '12h',
  }),
  caldavRequestTimeoutMs: setting('CALDAV_REQUEST_TIMEOUT', duration('30s', 1_000), {
    group: 'caldav',
    meaning:
      'Time a CalDAV server has to answer one request whole (connecting, headers and every byte of the body); ' +
      'beyond it the request counts as failed and is tried again later. A server trickling its answer cannot ' +
      'hold a connect page or a push worker longer than this per request.',
    default: '30s',
    example: '60s',
  }),
  caldavPushJobTimeoutMs: setting('CALDAV_PUSH_JOB_TIMEOUT', duration('10m', 1_000), {
    group: 'caldav',
    meaning:
      'Time one CalDAV push job may take, all its requests together; beyond it the job stops, counts as failed ' +
      'for now and is tried again later (what it wrote is kept), and the host rests for `CALDAV_REQUEST_TIMEOUT`. ' +
      'A server answering every request just under its deadline cannot hold a worker for longer. A first push of ' +
      'a large calendar to a slow server may take a few jobs.',
    default: '10m',
    example: '30m',
  }),
  caldavMaxResponseMb: setting('CALDAV_MAX_RESPONSE_MB', positiveNumber(4, true, 64), {
    group: 'caldav',
    meaning:
      "MiB of a CalDAV server's listing of a calendar (its resources' names and ETags, about 400 bytes per event: " +
      '4 MiB holds some 10,000 events) read at most; a larger one fails the push. Other answers (discovery, a ' +
      "calendar's properties) are capped at 256 KiB, and XML nested deeper than 64 levels or packed with more " +
      'than one element per 16 bytes is refused before it is parsed.',
    default: '4',
    example: '16',
  }),
  caldavAllowPrivate: setting('CALDAV_ALLOW_PRIVATE', flag(false), {
    group: 'caldav',
    meaning:
      '`true` lets CalDAV targets point at loopback and private addresses (tests, a server on your own network). ' +
      'Otherwise such servers are refused, so that nobody can make the service send requests into its own network.',
    default: 'false',
    example: 'true',
  }),
  telegramBotToken: setting('TELEGRAM_BOT_TOKEN', secret(1), {
    group: 'notify',
    meaning:
      "The Telegram bot's token from @BotFather; set, the bot runs (one worker long-polls it, or Telegram calls " +
      '`TELEGRAM_WEBHOOK_URL`) and timetable pages link to it. A secret.',
    defaultText: 'unset: no Telegram bot',
    exampleText: 'from @BotFather, `/newbot`',
  }),
  telegramApiRoot: setting('TELEGRAM_API_ROOT', httpUrlOr('TELEGRAM_API_ROOT', 'https://api.telegram.org'), {
    group: 'notify',
    meaning: 'Root of the Telegram Bot API; tests point it at a fake one, a deployment at a local Bot API server.',
    default: 'https://api.telegram.org',
    example: 'http://127.0.0.1:8081',
  }),
  telegramWebhookUrl: setting(
    'TELEGRAM_WEBHOOK_URL',
    matching(/^https?:\/\/[^\s]+\/telegram\/webhook$/, 'must be an http(s) URL ending in /telegram/webhook'),
    {
      group: 'notify',
      meaning:
        'Set, Telegram sends updates to this address (`$PUBLIC_URL/telegram/webhook`, checked with a secret ' +
        'header) and no worker long-polls. Unset, exactly one worker at a time long-polls.',
      defaultText: 'unset: long polling',
      example: 'https://timetable.example.edu/telegram/webhook',
    },
  ),
  telegramRateLimit: setting('TELEGRAM_RATE_LIMIT', positiveNumber(25, false, 1_000), {
    group: 'notify',
    meaning:
      'Telegram messages per second over all workers (Telegram allows about 30; one chat gets at most one a ' +
      'second whatever this says).',
    default: '25',
    example: '10',
  }),
  telegramMaxSourcesPerChat: setting('TELEGRAM_MAX_SOURCES_PER_CHAT', positiveNumber(10, true, 1_000), {
    group: 'notify',
    meaning:
      'Timetables one Telegram chat (or MAX dialog) may follow; beyond it `/start` says to leave one first ' +
      '(`/list`, `/stop`).',
    default: '10',
    example: '20',
  }),
  telegramLinksPerClient: setting('TELEGRAM_LINKS_PER_CLIENT', rate('60/1m'), {
    group: 'limits',
    meaning:
      "Requests for a page's «Уведомления в Telegram» link (`GET /telegram/start`) per client address, and as " +
      'many for its «Уведомления в MAX» link (`GET /max/start`, counted apart); a person follows one a visit.',
    default: '60/1m',
    example: '200/1m',
  }),
  telegramCommandBurst: setting('TELEGRAM_COMMAND_BURST', positiveNumber(3, true, 100), {
    group: 'notify',
    meaning:
      'Commands one chat (or MAX dialog) may send at once before the bot answers it one a second; commands beyond that (one ' +
      'a second on average) get a single «Слишком часто: подождите секунду» and are otherwise ignored.',
    default: '3',
    example: '5',
  }),
  telegramPollLockMs: setting('TELEGRAM_POLL_LOCK', duration('15s', 3_000), {
    group: 'notify',
    meaning:
      'Lifetime of the lock held by the one worker that long-polls Telegram; another worker takes over within ' +
      'this (and a third of it) after the holder dies.',
    default: '15s',
    example: '30s',
  }),
  telegramProxy: setting(
    'TELEGRAM_PROXY',
    secret(1).refine((value) => value === undefined || isProxyUrl(value), {
      message: 'must be an http://, https:// or socks5:// URL of a proxy (value not shown)',
    }),
    {
      group: 'notify',
      meaning:
        'A proxy every request to the Telegram Bot API goes through (`http://`, `https://` or `socks5://`, with ' +
        '`user:pass@` if it needs them), for networks that cannot reach Telegram directly. Nothing else uses it. ' +
        'A secret: it may hold a password.',
      defaultText: 'unset: Telegram directly',
      example: 'socks5://user:pass@proxy.example.net:1080',
    },
  ),
  maxBotToken: setting('MAX_BOT_TOKEN', secret(1), {
    group: 'notify',
    meaning:
      "The MAX bot's token (the MAX platform for partners, business.max.ru: «Чат-боты» → the bot → «⋮» → " +
      '«Настройки», as dev.max.ru and docs/max.md say); set, the bot runs (one worker long-polls it, or MAX calls ' +
      '`MAX_WEBHOOK_URL`) and timetable pages link to it, first among the messengers. A secret.',
    defaultText: 'unset: no MAX bot',
    exampleText: 'from the MAX platform for partners',
  }),
  maxApiRoot: setting('MAX_API_ROOT', httpUrlOr('MAX_API_ROOT', 'https://platform-api2.max.ru'), {
    group: 'notify',
    meaning: 'Root of the MAX Bot API; tests point it at a fake one.',
    default: 'https://platform-api2.max.ru',
    example: 'http://127.0.0.1:8082',
  }),
  maxWebhookUrl: setting(
    'MAX_WEBHOOK_URL',
    matching(
      /^https:\/\/[^\s:/]+(?::443)?\/[^\s]*max\/webhook$/,
      'must be an https URL on port 443 ending in /max/webhook',
    ),
    {
      group: 'notify',
      meaning:
        'Set, MAX sends updates to this address (`$PUBLIC_URL/max/webhook`, HTTPS on port 443 with a publicly ' +
        'trusted certificate, checked with the `X-Max-Bot-Api-Secret` header) and no worker long-polls. Unset, ' +
        'exactly one worker at a time long-polls.',
      defaultText: 'unset: long polling',
      example: 'https://timetable.example.edu/max/webhook',
    },
  ),
  maxRateLimit: setting('MAX_RATE_LIMIT', positiveNumber(30, false, 1_000), {
    group: 'notify',
    meaning:
      'Requests per second to the MAX Bot API over all workers, polls and replies included (MAX allows 30 a bot; ' +
      'one dialog gets at most two messages a second whatever this says).',
    default: '30',
    example: '10',
  }),
  maxPollLockMs: setting('MAX_POLL_LOCK', duration('15s', 3_000), {
    group: 'notify',
    meaning:
      'Lifetime of the lock held by the one worker that long-polls MAX; another worker takes over within this ' +
      '(and a third of it) after the holder dies.',
    default: '15s',
    example: '30s',
  }),
  smtpUrl: setting(
    'SMTP_URL',
    secret(1).refine((value) => value === undefined || isSmtpUrl(value), {
      message: 'must be an smtp:// or smtps:// URL such as smtps://user:pass@smtp.example.edu:465 (value not shown)',
    }),
    {
      group: 'notify',
      meaning:
        'The SMTP relay change mails go through: `smtps://` (TLS from the start) or `smtp://` (STARTTLS; required ' +
        'when it logs in with `user:pass@` to another host, unless `?requireTLS=false`). Set together with ' +
        '`MAIL_FROM` and `SECRET_KEY`, timetable pages offer e-mail. A secret: it holds a password.',
      defaultText: 'unset: no e-mail',
      example: 'smtps://timetable:secret@smtp.example.edu:465',
    },
  ),
  mailFrom: setting(
    'MAIL_FROM',
    matching(
      /^(?:[^<>\r\n]*<[^\s@<>]+@[^\s@<>]+>|[^\s@<>]+@[^\s@<>]+)$/,
      'must be an address, or a name and <address>',
    ),
    {
      group: 'notify',
      meaning:
        'The sender of change mails: `timetable@example.edu` or `Расписание <timetable@example.edu>`. Its domain ' +
        'names the mails (`Message-ID`) and must pass SPF, DKIM and DMARC at the relay (docs/email.md).',
      defaultText: 'unset: no e-mail',
      example: 'Расписание <timetable@example.edu>',
    },
  ),
  mailRateLimit: setting('MAIL_RATE_LIMIT', positiveNumber(5, false, 1_000), {
    group: 'notify',
    meaning: 'Mails per second over all workers; a relay that allows fewer answers 4xx, and the mail is retried.',
    default: '5',
    example: '1',
  }),
  mailDigestTime: setting(
    'MAIL_DIGEST_TIME',
    matching(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be HH:MM').transform((value) => value ?? '19:00'),
    {
      group: 'notify',
      meaning:
        'Local time (`TIMEZONE`) the daily digest is mailed at to those who chose it instead of a mail per change; ' +
        'a change to a class that starts before then is mailed at once.',
      default: '19:00',
      example: '07:30',
    },
  ),
  mailConfirmationsPerAddress: setting('MAIL_CONFIRMATIONS_PER_ADDRESS', rate('3/1d'), {
    group: 'limits',
    meaning: 'Confirmation mails one address gets, whoever asks, so that a form cannot be used to flood a mailbox.',
    default: '3/1d',
    example: '5/1d',
  }),
  mailConfirmationsPerClient: setting('MAIL_CONFIRMATIONS_PER_CLIENT', rate('10/1h'), {
    group: 'limits',
    meaning: 'E-mail sign-ups (confirmation mails asked for) per client address.',
    default: '10/1h',
    example: '30/1h',
  }),
  notifyHorizonMs: setting('NOTIFY_HORIZON', duration('14d', 60_000), {
    group: 'notify',
    meaning: 'Only changes to classes starting within this are told (never to classes that have started).',
    default: '14d',
    example: '7d',
  }),
  notifyQuietHours: setting('NOTIFY_QUIET_HOURS', quietHours, {
    group: 'notify',
    meaning:
      'Local hours (`TIMEZONE`) in which messages to people (Telegram, MAX, e-mail) wait for the morning, ' +
      'unless a class they tell of starts before then; `off` sends at once. Webhooks are never held.',
    default: '23-07',
    example: '22:30-08:00',
  }),
  webhookAllowPrivate: setting('WEBHOOK_ALLOW_PRIVATE', flag(false), {
    group: 'notify',
    meaning:
      '`true` lets webhooks point at loopback and private addresses (tests, a receiver on your own network). ' +
      'Otherwise such URLs are refused, and so is a host name that resolves to one.',
    default: 'false',
    example: 'true',
  }),
  logLevel: setting('LOG_LEVEL', logLevel, {
    group: 'logging',
    meaning:
      '`trace`, `debug`, `info`, `warn`, `error`, `fatal` or `silent`. Output is pretty when stdout is a ' +
      "terminal, JSON lines otherwise; pretty output shows a logged error's stack only at `debug` (JSON lines " +
      'always carry it).',
    default: 'info',
    example: 'debug',
  }),
  dataDir: setting('DATA_DIR', text('.data'), {
    group: 'redis',
    meaning:
      "Folder of the embedded Redis: its data (`redis/`, AOF on) and address file (`redis.json`), the folder's " +
      "instance lock, and the demo's files. It is made readable by you alone (folders 0700, files 0600); a " +
      'folder you chose that exists already (`.`, your home) keeps its own mode.',
    default: '.data',
    example: '/var/lib/timetable-sync',
  }),
  httpRequestTimeoutMs: setting('HTTP_REQUEST_TIMEOUT', duration('30s', 1_000), {
    group: 'httpLimits',
    meaning: 'Time a client has to send a whole request, body included; `408` beyond it.',
    default: '30s',
    example: '60s',
  }),
  httpHeadersTimeoutMs: setting('HTTP_HEADERS_TIMEOUT', duration('10s', 1_000), {
    group: 'httpLimits',
    meaning: "Time a client has to send a request's headers (at most `HTTP_REQUEST_TIMEOUT`).",
    default: '10s',
    example: '5s',
  }),
  httpIdleTimeoutMs: setting('HTTP_IDLE_TIMEOUT', duration('60s', 1_000), {
    group: 'httpLimits',
    meaning: 'A connection without traffic either way for this long is closed.',
    default: '60s',
    example: '120s',
  }),
  httpKeepAliveTimeoutMs: setting('HTTP_KEEP_ALIVE_TIMEOUT', duration('72s', 1_000), {
    group: 'httpLimits',
    meaning:
      "How long a kept-alive connection waits for its next request; keep it above a reverse proxy's idle timeout.",
    default: '72s',
    example: '75s',
  }),
  httpMaxConnections: setting('HTTP_MAX_CONNECTIONS', positiveNumber(4096, true, 1_000_000), {
    group: 'httpLimits',
    meaning:
      'Open connections per process. At the cap a new one replaces the oldest that has sent nothing, else the one ' +
      'kept alive the longest, else the oldest still sending its request, and is closed at once only when all are ' +
      'being answered. From three quarters of it on, kept-alive connections wait 5 s at most and silent ones 3 s.',
    default: '4096',
    example: '16384',
  }),
  httpMaxConnectionsPerAddress: setting('HTTP_MAX_CONNECTIONS_PER_ADDRESS', positiveNumber(256, true, 1_000_000), {
    group: 'httpLimits',
    meaning:
      'Open connections per client address (an IPv6 client is its /64). At the cap a new one replaces one of that ' +
      "address's connections as above, so slow or silent sockets do not lock the address out. Not applied to the " +
      'proxies `TRUST_PROXY` names (with `true`, to nobody).',
    default: '256',
    example: '1024',
  }),
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

/** Every variable the service reads, in the order of {@link SETTINGS}. */
export const ENV_VARIABLES: readonly EnvName[] = Object.values(SETTINGS).map((entry) => entry.env);

/** Every setting's variable and doc, the source of docs/configuration.md and .env.example (`npm run docs`). */
export const SETTING_DOCS: readonly ({ readonly env: EnvName } & SettingDoc)[] = Object.values(SETTINGS).map(
  (entry) => ({ env: entry.env, ...entry.doc }),
);

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
  // Unset, the longest wait of a parked source follows a long REFRESH_INTERVAL; set, it must not undercut it.
  const refreshMaxWaitMs = Math.max(partial.refreshMaxWaitMs, partial.refreshIntervalMs);
  if (!isUnset(env.REFRESH_MAX_WAIT) && partial.refreshMaxWaitMs < partial.refreshIntervalMs) {
    throw new ConfigError([
      'REFRESH_MAX_WAIT: must not be shorter than REFRESH_INTERVAL (a parked source waits longer, never less)',
    ]);
  }
  if (partial.httpHeadersTimeoutMs > partial.httpRequestTimeoutMs) {
    throw new ConfigError([
      'HTTP_HEADERS_TIMEOUT: must not be longer than HTTP_REQUEST_TIMEOUT (headers are part of the request)',
    ]);
  }
  // On a cluster the default prefix becomes a hash tag (a prefix of one's own must hold one: redisProblems).
  const redisPrefix =
    partial.redisClusterNodes && isUnset(env.REDIS_PREFIX) ? `{${partial.redisPrefix}}` : partial.redisPrefix;
  return Object.freeze({ ...partial, publicUrl, redisPrefix, refreshMaxWaitMs, redisTarget: redisTarget(partial) });
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
