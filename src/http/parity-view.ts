/** What `GET /admin/parity` answers: the term starts in force, where each came from, and what it governs. */
import { dateParts } from '../timetable/dates.ts';
import { defaultTermStart } from '../timetable/parity.ts';
import {
  DEFAULT_RULE,
  defaultTermStarts,
  describeSource,
  type TermStart,
  type TermStartSource,
  termCoverage,
} from '../timetable/terms.ts';

/** One term start as the admin API shows it. */
export interface TermStartView {
  date: string;
  source: TermStartSource;
  /** "configured in WEEK_PARITY_ANCHORS", "inferred from 120 of 134 entries starting July–December 2018", … */
  from: string;
  entries?: number;
  halfYearEntries?: number;
  /** Monday of week 1 (odd). */
  firstWeek: string;
  /** First and last date whose parity this term start decides (no `lastDate` for the latest one). */
  firstDate: string;
  lastDate?: string;
  weeks?: number;
  /** The dates it governs in words: "2018-09-01 to 2019-02-03, 22 weeks", or "every date from 2019-02-04 on". */
  covers: string;
  /** True for the latest term start: it governs every later date (and earlier ones count back from the first). */
  openEnded: boolean;
}

/** The whole answer. */
export interface ParityView {
  /** Where the term starts come from: `WEEK_PARITY_ANCHORS`, the timetables, or the 1 September default. */
  source: TermStartSource;
  rule: string;
  termStarts: TermStartView[];
  /**
   * Whether these term starts are the ones stored in force (what every feed was rendered with), or resolved
   * from the counts now because none are stored yet.
   */
  stored: boolean;
  /** Version of the counts they were resolved from (raised on every change of the counts). */
  countsVersion?: number;
  /** The counts behind inferred term starts: distinct upstream entries per start date, over every stored timetable. */
  counts: Record<string, number>;
}

/** What the view is made of: the term starts in force and the counts behind them. */
export interface ParityState {
  /** Stored term starts, or undefined when none are stored yet. */
  stored: { version: number; termStarts: readonly TermStart[] } | undefined;
  /** The term starts resolved from the counts now (shown when none are stored). */
  resolved: readonly TermStart[];
  counts: ReadonlyMap<string, number>;
}

const RULES: Record<TermStartSource, string> = {
  configured: 'WEEK_PARITY_ANCHORS: the configured term starts',
  inferred:
    'inferred from every stored timetable: per half-year, the start date most entries share; dates before the earliest count back from it',
  default: DEFAULT_RULE,
};

/**
 * The view of the term starts in force. With none configured or inferred, the default ones that govern
 * `now` and the following year are shown, each closed by the next.
 */
export function parityView(state: ParityState, now: number): ParityView {
  const terms = state.stored?.termStarts ?? state.resolved;
  const counts = Object.fromEntries([...state.counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const basis = {
    stored: state.stored !== undefined,
    ...(state.stored ? { countsVersion: state.stored.version } : {}),
    counts,
  };
  const [first] = terms;
  // All term starts in force come from one place: configured ones replace inferred ones entirely.
  if (first !== undefined)
    return { source: first.source, rule: RULES[first.source], termStarts: viewsOf(terms), ...basis };
  const today = Math.floor(now / 86_400_000);
  const { year } = dateParts(today);
  const current = defaultTermStart(year) <= today ? year : year - 1;
  const shown = defaultTermStarts(current, current + 1);
  return { source: 'default', rule: RULES.default, termStarts: viewsOf(shown, `${current + 2}-09-01`), ...basis };
}

function viewsOf(terms: readonly TermStart[], end?: string): TermStartView[] {
  const coverage = termCoverage(terms, end);
  return terms.map((term, index) => {
    const covered = coverage[index];
    const view: TermStartView = {
      date: term.date,
      source: term.source,
      from: describeSource(term),
      firstWeek: covered?.firstWeek ?? term.date,
      firstDate: covered?.from ?? term.date,
      covers:
        covered?.until === undefined
          ? `every date from ${term.date} on`
          : `${covered.from} to ${covered.until}, ${covered.weeks ?? 0} weeks`,
      openEnded: covered?.until === undefined,
    };
    if (term.entries !== undefined) view.entries = term.entries;
    if (term.halfYearEntries !== undefined) view.halfYearEntries = term.halfYearEntries;
    if (covered?.until !== undefined) view.lastDate = covered.until;
    if (covered?.weeks !== undefined) view.weeks = covered.weeks;
    return view;
  });
}
