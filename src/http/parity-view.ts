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
}

/** The whole answer. */
export interface ParityView {
  /** Where the term starts come from: `WEEK_PARITY_ANCHORS`, the timetables, or the 1 September default. */
  source: TermStartSource;
  rule: string;
  termStarts: TermStartView[];
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
export function parityView(terms: readonly TermStart[], now: number): ParityView {
  const [first] = terms;
  // All term starts in force come from one place: configured ones replace inferred ones entirely.
  if (first !== undefined) return { source: first.source, rule: RULES[first.source], termStarts: viewsOf(terms) };
  const today = Math.floor(now / 86_400_000);
  const { year } = dateParts(today);
  const current = defaultTermStart(year) <= today ? year : year - 1;
  const shown = defaultTermStarts(current, current + 1);
  return { source: 'default', rule: RULES.default, termStarts: viewsOf(shown, `${current + 2}-09-01`) };
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
    };
    if (term.entries !== undefined) view.entries = term.entries;
    if (term.halfYearEntries !== undefined) view.halfYearEntries = term.halfYearEntries;
    if (covered?.until !== undefined) view.lastDate = covered.until;
    if (covered?.weeks !== undefined) view.weeks = covered.weeks;
    return view;
  });
}
