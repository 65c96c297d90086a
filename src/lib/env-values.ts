/**
 * Readers of environment variables as zod schemas: every one treats unset and blank alike, trims, applies its
 * default and reports what is wrong in words that name the expected form (never a secret's value).
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { z } from 'zod';
import { parseDurationMs } from './duration.ts';

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** True for a real calendar date written as YYYY-MM-DD. */
function isIsoDate(value: string): boolean {
  const match = ISO_DATE.exec(value);
  if (!match) return false;
  const [, y, m, d] = match.map(Number) as [number, number, number, number];
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

/** Unset and blank are the same: undefined; anything else is trimmed. */
export const optionalText = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));

export function text(fallback: string) {
  return optionalText.transform((value) => value ?? fallback);
}

export function matching(pattern: RegExp, message: string) {
  return optionalText.refine((value) => value === undefined || pattern.test(value), { message });
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

export function httpUrl(name: string) {
  return optionalText.refine((value) => value === undefined || isHttpUrl(value), {
    message: `${name} must be an http:// or https:// URL`,
  });
}

export function httpUrlOr(name: string, fallback: string) {
  return httpUrl(name).transform((value) => value ?? fallback);
}

function sortedDates(dates: readonly string[], ctx: z.RefinementCtx, shown = dates.length): readonly string[] {
  const bad = dates.filter((date) => !isIsoDate(date));
  if (bad.length > 0)
    ctx.addIssue({ code: 'custom', message: `not a valid YYYY-MM-DD date: ${bad.slice(0, shown).join(', ')}` });
  return Object.freeze([...new Set(dates)].sort());
}

export const dateList = optionalText.transform((value, ctx) => {
  const dates = (value ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  return sortedDates(dates, ctx);
});

/** A comma list of dates, or the path of a file with one date per line and `#` comments. */
export const holidayList = optionalText.transform((value, ctx) => {
  if (value === undefined) return sortedDates([], ctx);
  const looksLikeList = /^[\d\s,-]+$/.test(value);
  let content = value;
  if (!looksLikeList) {
    try {
      content = readFileSync(value, 'utf8');
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        message: `not a date list and not a readable file (${(error as Error).message})`,
      });
      return sortedDates([], ctx);
    }
  }
  const dates = content
    .split(looksLikeList ? ',' : '\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line !== '');
  return sortedDates(dates, ctx, 5);
});

export function duration(fallback: string, minMs: number) {
  return optionalText.transform((value, ctx) => {
    const ms = parseDurationMs(value ?? fallback);
    if (ms === undefined || ms < minMs) {
      const message = `must be a duration of at least ${minMs / 1000}s such as 90s, 15m, 1h or 1d (got "${value}")`;
      ctx.addIssue({ code: 'custom', message });
      return 0;
    }
    return ms;
  });
}

export function positiveNumber(fallback: number, integer: boolean, max = Number.MAX_SAFE_INTEGER) {
  if (integer) return wholeNumber(fallback, 1, max);
  return optionalText.transform((value, ctx) => {
    if (value === undefined) return fallback;
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed <= 0 || parsed > max)
      ctx.addIssue({ code: 'custom', message: `must be a positive number from >0 to ${max} (got "${value}")` });
    return parsed;
  });
}

/** A whole number from `min` to `max` (0 allowed when `min` is 0), else the default. */
export function wholeNumber(fallback: number, min: number, max: number) {
  return optionalText.transform((value, ctx) => {
    if (value === undefined) return fallback;
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < min || parsed > max)
      ctx.addIssue({ code: 'custom', message: `must be a whole number from ${min} to ${max} (got "${value}")` });
    return parsed;
  });
}

/** `true` or `false` (any case), else the default. */
export function flag(fallback: boolean) {
  return optionalText.transform((value, ctx) => {
    if (value === undefined) return fallback;
    if (value.toLowerCase() === 'true') return true;
    if (value.toLowerCase() === 'false') return false;
    ctx.addIssue({ code: 'custom', message: `must be true or false (got "${value}")` });
    return fallback;
  });
}

/** A secret: never echoed in an error message. */
export function secret(minLength: number) {
  return optionalText.refine((value) => value === undefined || value.length >= minLength, {
    message: `must be at least ${minLength} characters long (value not shown)`,
  });
}

/**
 * Fewest distinct characters, and fewest bits of empirical entropy, a typed secret may have. Measured over a
 * million random 16-hex-digit tokens (the shortest accepted), 3 in 100,000 fall below; longer ones never do.
 */
const MIN_DISTINCT_CHARACTERS = 6;
const MIN_SECRET_BITS = 32;
/** Fewest distinct bytes a 32-byte key may have: 32 random bytes show about 30, fewer than 16 is never luck. */
const MIN_DISTINCT_KEY_BYTES = 16;

/**
 * Shannon entropy of the text's own character frequencies, times its length: a cheap lower bound on guessing
 * work for keyboard patterns (`aaaaaaaaaaaaaaaa` has 0 bits, 16 random hex digits about 52).
 */
export function empiricalBits(value: string): number {
  const counts = new Map<string, number>();
  for (const char of value) counts.set(char, (counts.get(char) ?? 0) + 1);
  const length = [...value].length;
  let perChar = 0;
  for (const count of counts.values()) perChar -= (count / length) * Math.log2(count / length);
  return perChar * length;
}

/**
 * A bearer token typed by an operator (ADMIN_TOKEN): long enough, varied enough to resist guessing, and one
 * word, since `Authorization: Bearer <token>` is split at whitespace. Never echoed.
 */
export function bearerSecret(minLength: number) {
  return secret(minLength).superRefine((value, ctx) => {
    if (value === undefined || value.length < minLength) return;
    if (/\s/.test(value)) {
      ctx.addIssue({
        code: 'custom',
        message: 'must not contain spaces or other whitespace: a bearer token is one word (value not shown)',
      });
    } else if (
      new Set(value).size < MIN_DISTINCT_CHARACTERS ||
      empiricalBits(value) < MIN_SECRET_BITS ||
      isRepetition(value) ||
      isMostlyRuns(value)
    ) {
      ctx.addIssue({
        code: 'custom',
        message: `is too easy to guess: fewer than ${MIN_DISTINCT_CHARACTERS} different characters, too little entropy, a repeated pattern or runs such as abcdef or 654321 (value not shown); make one with: openssl rand -hex 24`,
      });
    }
  });
}

/** Shortest ascending or descending run (`abcd`, `4321`) that counts towards {@link isMostlyRuns}. */
const MIN_RUN = 4;

/**
 * True when at least half of the text is ascending or descending runs of consecutive characters
 * (`abcdefghijklmnop`, `0123456789abcdef`, `fedcba9876543210`): every character is different, so the distinct
 * count and the entropy of character frequencies both miss them. Of a million random 16-hex-digit tokens (the
 * shortest accepted) this refused 4; of 200,000 random 16-character base64url ones, none.
 */
export function isMostlyRuns(value: string): boolean {
  const codes = [...value].map((char) => char.codePointAt(0) as number);
  const inRun = codes.map(() => false);
  let start = 0;
  while (start < codes.length - 1) {
    const step = (codes[start + 1] as number) - (codes[start] as number);
    let end = start + 1;
    while (
      Math.abs(step) === 1 &&
      end + 1 < codes.length &&
      (codes[end + 1] as number) - (codes[end] as number) === step
    )
      end++;
    if (Math.abs(step) === 1 && end - start + 1 >= MIN_RUN) inRun.fill(true, start, end + 1);
    start = Math.abs(step) === 1 ? end : start + 1;
  }
  return inRun.filter(Boolean).length * 2 >= codes.length;
}

/** True when the text is a shorter text repeated (`passwordpassword`, `abcabcabc`). */
function isRepetition(value: string): boolean {
  return (value + value).indexOf(value, 1) < value.length;
}

const SECRET_KEY_FORM =
  'must be 32 bytes, as 64 hex digits or base64 (value not shown); make one with: openssl rand -hex 32';

export const secretKey = optionalText.transform((value, ctx) => {
  if (value === undefined) return undefined;
  const key = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  if (key.length !== 32) {
    ctx.addIssue({ code: 'custom', message: SECRET_KEY_FORM });
    return undefined;
  }
  // An all-zero or patterned key (`aaaa…`, `0123…` repeated) is typed, not random: it protects nothing.
  if (new Set(key).size < MIN_DISTINCT_KEY_BYTES) {
    const message = `is not random: it has only ${new Set(key).size} different bytes of 32 (value not shown); make one with: openssl rand -hex 32`;
    ctx.addIssue({ code: 'custom', message });
    return undefined;
  }
  return key;
});

/**
 * A rate limit written `<count>/<duration>` (`30/1m`: 30 requests a minute, all at once if need be), read into
 * the `{ count, periodMs }` of `lib/rate-limit.ts`.
 */
export function rate(fallback: string) {
  return optionalText.transform((value, ctx) => {
    const match = /^(\d+)\s*\/\s*(.+)$/.exec(value ?? fallback);
    const count = Number(match?.[1]);
    const periodMs = match ? parseDurationMs(match[2] as string) : undefined;
    if (periodMs === undefined || periodMs < 1_000 || !(count >= 1)) {
      const message = `must be <count>/<duration> such as 30/1m or 5/15m, at least 1 per 1s (got "${value}")`;
      ctx.addIssue({ code: 'custom', message });
      return { count: 1, periodMs: 1_000 };
    }
    return { count, periodMs };
  });
}

/** An IPv4 or IPv6 address, optionally a CIDR range (`10.0.0.0/8`, `fd00::/8`). */
function isAddressOrRange(value: string): boolean {
  const [address = '', bits, ...rest] = value.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  const prefix = Number(bits);
  return /^\d+$/.test(bits) && prefix <= (family === 4 ? 32 : 128);
}

/**
 * Which proxies' `X-Forwarded-For` to believe, as fastify's `trustProxy` takes it: `false` (unset: the
 * connection's own address is the client), `true` (any: only behind a proxy that overwrites the header), or a
 * comma list of proxy addresses and CIDR ranges. A hop count is refused: fastify trusts nothing for one (a
 * direct client could otherwise claim any address by sending enough hops), which would silently key every
 * limit by the proxy's address.
 */
export const trustProxy = optionalText.transform((value, ctx): boolean | string[] => {
  if (value === undefined || value.toLowerCase() === 'false') return false;
  if (value.toLowerCase() === 'true') return true;
  if (/^\d+$/.test(value)) {
    const message = `a hop count (${value}) cannot tell a proxy from a client: list the proxies' addresses or CIDR ranges instead, or true`;
    ctx.addIssue({ code: 'custom', message });
    return false;
  }
  const entries = value.split(',').map((part) => part.trim());
  const bad = entries.filter((entry) => !isAddressOrRange(entry));
  if (bad.length > 0) {
    const message = `must be true, false or a comma list of proxy addresses/CIDR ranges (not: ${bad.join(', ')})`;
    ctx.addIssue({ code: 'custom', message });
  }
  return entries;
});
