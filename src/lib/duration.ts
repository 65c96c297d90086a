const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a human duration (`90s`, `15m`, `1h`, `1d`, `250ms`, or a bare number of seconds) into
 * milliseconds; `undefined` when the text is not a duration.
 */
export function parseDurationMs(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!match) return undefined;
  const amount = Number(match[1]);
  const unit = UNITS[match[2] ?? 's'] ?? 1_000;
  return Math.round(amount * unit);
}
