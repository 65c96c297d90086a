/**
 * A progress report for long operator commands (`resync --wait`): counts, rate and time left. On a terminal
 * it is one line redrawn in place; elsewhere (CI logs, pipes) a plain line every few seconds or every tenth
 * of the work, without control characters, so that a log file stays readable.
 */

/** How far the work is. */
export interface ProgressCounts {
  total: number;
  done: number;
  failed: number;
}

/** Where and how the report is written. */
export interface ProgressOptions {
  write: (text: string) => void;
  /** A terminal: redraw one line with `\r`. */
  tty: boolean;
  now?: () => number;
  /** Not on a terminal: at most one line per this many ms, besides one per tenth of the work (default 5 s). */
  plainIntervalMs?: number;
}

const BAR_WIDTH = 24;
/** Redraws of the terminal line at most this often: more is flicker, and costs the terminal. */
const REDRAW_MS = 100;
/**
 * How often the report is looked at without a change: the rate and time left move while no job ends (a
 * long refresh, a stalled queue), and a change skipped for being too soon after a redraw is drawn then.
 */
const TICK_MS = 1_000;
/**
 * The rate and the time left are shown once the work has run this long (or is finished): from the first few
 * milliseconds, one job that ended at once reads as hundreds a second and the estimate as nothing left.
 */
const MIN_PACE_MS = 1_000;

/** A rate of finished jobs: `12.3/s`, or per minute below one a second (`24/min`). */
export function formatRate(perSecond: number): string {
  if (!Number.isFinite(perSecond) || perSecond <= 0) return '0/s';
  if (perSecond >= 100) return `${Math.round(perSecond)}/s`;
  if (perSecond >= 1) return `${perSecond.toFixed(1)}/s`;
  return `${Math.round(perSecond * 60)}/min`;
}

/** A duration for people: `45s`, `3m 05s`, `2h 07m`. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, '0')}m`;
}

/** Jobs finished per second since the start; and the time the rest will take at that rate (undefined: unknown). */
export function pace(counts: ProgressCounts, elapsedMs: number): { perSecond: number; leftMs: number | undefined } {
  const finished = counts.done + counts.failed;
  const perSecond = elapsedMs > 0 ? (finished * 1000) / elapsedMs : 0;
  const remaining = Math.max(0, counts.total - finished);
  return { perSecond, leftMs: perSecond > 0 ? (remaining / perSecond) * 1000 : remaining === 0 ? 0 : undefined };
}

/** One report line: `[#####-----] 412/1000 41% · done 405 · failed 7 · 12.3/s · 48s left`. */
export function progressLine(counts: ProgressCounts, elapsedMs: number, withBar: boolean): string {
  const finished = counts.done + counts.failed;
  const share = counts.total > 0 ? finished / counts.total : 1;
  const filled = Math.round(share * BAR_WIDTH);
  const bar = withBar ? `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ` : '';
  const { perSecond, leftMs } = pace(counts, elapsedMs);
  const measured = elapsedMs >= MIN_PACE_MS || finished >= counts.total;
  const left = leftMs === undefined ? 'time left unknown' : `${formatDuration(leftMs)} left`;
  const speed = measured ? `${formatRate(perSecond)} · ${left}` : 'measuring rate';
  return `${bar}${finished}/${counts.total} ${Math.floor(share * 100)}% · done ${counts.done} · failed ${counts.failed} · ${speed}`;
}

/**
 * A running report: call {@link ProgressReport.update} with every change, {@link ProgressReport.end} once. From
 * the first update until the end it also redraws every second by itself (see {@link TICK_MS}).
 */
export class ProgressReport {
  readonly #options: Required<ProgressOptions>;
  readonly #started: number;
  #lastWrite = Number.NEGATIVE_INFINITY;
  #lastTenth = 0;
  #drawn = false;
  #latest: ProgressCounts | undefined;
  #shown: ProgressCounts | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: ProgressOptions) {
    this.#options = { now: Date.now, plainIntervalMs: 5_000, ...options };
    this.#started = this.#options.now();
  }

  /** Time since the report began. */
  elapsedMs(): number {
    return this.#options.now() - this.#started;
  }

  /** Shows `counts` if it is time to (the terminal line at most every 100 ms; a plain line as said above). */
  update(counts: ProgressCounts): void {
    this.#latest = counts;
    this.#timer ??= setInterval(() => this.#tick(), TICK_MS).unref();
    const now = this.#options.now();
    const tenth = counts.total > 0 ? Math.floor(((counts.done + counts.failed) * 10) / counts.total) : 10;
    const interval = this.#options.tty ? REDRAW_MS : this.#options.plainIntervalMs;
    if (now - this.#lastWrite < interval && tenth === this.#lastTenth) return;
    this.#lastTenth = tenth;
    this.#show(counts, now);
  }

  /** Draws the last counts once more (complete), and leaves the terminal line behind with a line break. */
  end(): void {
    clearInterval(this.#timer);
    const latest = this.#latest;
    const shown = this.#shown;
    const same = shown !== undefined && latest !== undefined && sameCounts(shown, latest);
    if (latest !== undefined && !same) this.#show(latest, this.#options.now());
    if (this.#options.tty && this.#drawn) this.#options.write('\n');
  }

  /** Redraws the latest counts once the line is a redraw (terminal) or a plain interval old. */
  #tick(): void {
    const latest = this.#latest;
    if (latest === undefined) return;
    const now = this.#options.now();
    const interval = this.#options.tty ? REDRAW_MS : this.#options.plainIntervalMs;
    if (now - this.#lastWrite >= interval) this.#show(latest, now);
  }

  #show(counts: ProgressCounts, now: number): void {
    this.#lastWrite = now;
    this.#shown = counts;
    const line = progressLine(counts, now - this.#started, this.#options.tty);
    // `\x1b[K` clears what a longer previous line left on the right.
    this.#options.write(this.#options.tty ? `\r${line}\x1b[K` : `${line}\n`);
    this.#drawn = true;
  }
}

function sameCounts(a: ProgressCounts, b: ProgressCounts): boolean {
  return a.total === b.total && a.done === b.done && a.failed === b.failed;
}
