/**
 * An independent reading of docs/design.md "Expansion semantics", written for the tests: day by day, plain
 * `Date.UTC` arithmetic, no code shared with src/timetable. Slow on purpose: it is the oracle.
 */
const DAY = 86_400_000;

/** UTC midnight of an ISO date. */
export function utcMidnight(iso: string): number {
  const [year = NaN, month = NaN, day = NaN] = iso.split('-').map(Number);
  return Date.UTC(year, month - 1, day);
}

function isoOf(millis: number): string {
  return new Date(millis).toISOString().slice(0, 10);
}

/** ISO weekday of a UTC midnight: 1 = Monday … 7 = Sunday. */
export function weekdayOf(millis: number): number {
  const weekday = new Date(millis).getUTCDay();
  return weekday === 0 ? 7 : weekday;
}

function mondayOf(millis: number): number {
  return millis - (weekdayOf(millis) - 1) * DAY;
}

/** "1 September, or 2 September when 1 September is a Sunday." */
function defaultAnchorOfYear(year: number): number {
  const first = Date.UTC(year, 8, 1);
  return weekdayOf(first) === 7 ? first + DAY : first;
}

/** "The anchor in force for a date is the latest anchor on or before it"; undefined when there is none. */
export function anchorInForce(millis: number, anchors: readonly string[]): number | undefined {
  if (anchors.length === 0) {
    const year = new Date(millis).getUTCFullYear();
    const own = defaultAnchorOfYear(year);
    return own <= millis ? own : defaultAnchorOfYear(year - 1);
  }
  let best: number | undefined;
  for (const anchor of anchors) {
    const at = utcMidnight(anchor);
    if (at <= millis && (best === undefined || at > best)) best = at;
  }
  return best;
}

/** "The week containing it is week 1 (odd)": odd when a whole even number of weeks lies between the Mondays. */
export function isOddWeek(millis: number, anchors: readonly string[]): boolean {
  const anchor = anchorInForce(millis, anchors);
  if (anchor === undefined) throw new Error(`no anchor in force on ${isoOf(millis)}`);
  const weeksBetween = Math.round((mondayOf(millis) - mondayOf(anchor)) / (7 * DAY));
  return weeksBetween % 2 === 0;
}

/** The rule's inputs. */
export interface RuleEntry {
  startDate: string;
  finishDate: string;
  weekday: number;
  weekType: number;
}

/** Every date d with start ≤ d ≤ finish, weekday(d) = day_week, parity matching, not a holiday. */
export function bruteForceDates(
  entry: RuleEntry,
  anchors: readonly string[],
  holidays: ReadonlySet<string>,
  window: { from?: string; to?: string } = {},
): string[] {
  const dates: string[] = [];
  for (let day = utcMidnight(entry.startDate); day <= utcMidnight(entry.finishDate); day += DAY) {
    const iso = isoOf(day);
    if (window.from !== undefined && iso < window.from) continue;
    if (window.to !== undefined && iso > window.to) continue;
    if (weekdayOf(day) !== entry.weekday) continue;
    if (entry.weekType === 1 && !isOddWeek(day, anchors)) continue;
    if (entry.weekType === 2 && isOddWeek(day, anchors)) continue;
    if (holidays.has(iso)) continue;
    dates.push(iso);
  }
  return dates;
}
