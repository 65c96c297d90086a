/** `Retry-After` (RFC 9110 §10.2.3), as the university and Google send it. */

/**
 * The wait a `Retry-After` header asks for, in ms from `nowMs`: delay-seconds (fractions tolerated) or an HTTP
 * date (a date in the past is 0); undefined when the header is absent or unreadable. An array (a header given
 * twice) is read by its first value.
 */
export function parseRetryAfter(
  header: string | readonly string[] | null | undefined,
  nowMs: number,
): number | undefined {
  const value = (Array.isArray(header) ? header[0] : (header as string | null | undefined))?.trim();
  if (value === undefined || value === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  if (!/[a-z]/i.test(value)) return undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** Whole seconds, at least one: what `Retry-After` says for a wait of `ms`. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** A wait of `ms` in whole seconds as a person reads it: "1 second", "180 seconds" (at least one). */
export function secondsText(ms: number): string {
  const seconds = retryAfterSeconds(ms);
  return seconds === 1 ? '1 second' : `${seconds} seconds`;
}
