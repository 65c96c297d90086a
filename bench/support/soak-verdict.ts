/**
 * The soak's pass/fail rules: does memory or a queue grow without bound? A soak cannot run forever, so it
 * judges the trend of the part of the run after the warm-up and asks what it would do over an hour.
 *
 * Memory (RSS of every service process, Redis `used_memory`): a least-squares line through the floors (the
 * lowest sample of each interval) of the second half of the run (the first half is warm-up: caches and
 * retained job histories fill). The slope is extrapolated to an hour and compared with the line's value at
 * the start of that window: growth % per hour = slope × 3600 s / value × 100. More than
 * `maxGrowthPercentPerHour` fails, when each half of the window grows that fast too (see memoryFinding). A process that
 * was restarted is judged on the samples of its last incarnation, after a warm-up of its own
 * (`restartWarmUpSeconds`: a fresh worker's heap and caches fill as slowly as the first ones did); one restarted
 * too late for that is reported, not judged. The window must span `minJudgedSeconds`:
 * over a few minutes, garbage-collection sawtooth alone extrapolates to tens of percent an hour, so a short
 * run reports its trends without judging them.
 *
 * Redis keeps a bounded history of finished jobs (`removeOnComplete`/`removeOnFail` counts in
 * src/jobs/queues.ts), which fills linearly for over an hour at the soak's rate before it is trimmed. Growth
 * that this history explains is bounded by design, not a leak: for Redis the judged series is `used_memory`
 * minus `historyBytesPerJob` × jobs kept, with the bytes per job measured on the queues (about 1 KB).
 *
 * Queues (refresh, push): at the end, the backlog — the smallest depth seen during the last interval, so
 * that the burst of scheduled ticks at the start of an interval is not taken for backlog — must be no more
 * than the jobs the workers completed during that interval: it could be worked off within one interval at
 * the rate just achieved. Over a judged window, the depth's trend must also not add more than one
 * interval's work within an hour.
 */

/** One sample of a series: seconds since the start, value, and which incarnation of the process it was. */
export interface TrendPoint {
  t: number;
  value: number;
  /** A process id: samples of an earlier incarnation than the last are left out. */
  epoch?: number | string;
}

/** A least-squares line. */
export interface Line {
  slope: number;
  intercept: number;
}

/** The least-squares line through the points (`slope` per second); undefined below 2 distinct times. */
export function fitLine(points: readonly TrendPoint[]): Line | undefined {
  const n = points.length;
  if (n < 2) return undefined;
  const meanT = points.reduce((sum, p) => sum + p.t, 0) / n;
  const meanV = points.reduce((sum, p) => sum + p.value, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (const p of points) {
    sxx += (p.t - meanT) ** 2;
    sxy += (p.t - meanT) * (p.value - meanV);
  }
  if (sxx === 0) return undefined;
  const slope = sxy / sxx;
  return { slope, intercept: meanV - slope * meanT };
}

/** Settings of the rules. */
export interface VerdictRules {
  /** Length of the run, s. */
  durationSeconds: number;
  /** More memory growth than this, extrapolated to an hour, fails. */
  maxGrowthPercentPerHour: number;
  /** Trend windows shorter than this are reported, not judged. */
  minJudgedSeconds: number;
  /** The refresh interval, s: the queue rules' unit of work. */
  intervalSeconds: number;
  /** Samples this long after a process's restart are still its warm-up. */
  restartWarmUpSeconds: number;
}

/** The outcome of one rule on one series. */
export interface Finding {
  subject: string;
  /** `fail` breaks the run; `note` is reported only (too few samples, window too short). */
  status: 'ok' | 'fail' | 'note';
  message: string;
}

/** The samples after warm-up (the second half), of the last incarnation only, after its own warm-up. */
export function judgedWindow(points: readonly TrendPoint[], rules: VerdictRules): TrendPoint[] {
  const last = points[points.length - 1]?.epoch;
  const born = restartedAt(points);
  const from = Math.max(rules.durationSeconds / 2, born === undefined ? 0 : born + rules.restartWarmUpSeconds);
  return points.filter((p) => p.epoch === last && p.t >= from);
}

/** When the last incarnation of a process started, if it is not the first one. */
function restartedAt(points: readonly TrendPoint[]): number | undefined {
  const last = points[points.length - 1]?.epoch;
  const incarnation = points.filter((p) => p.epoch === last);
  return incarnation.length < points.length ? incarnation[0]?.t : undefined;
}

/**
 * The floor of each slice of `seconds`: the lowest sample in it. Memory after a collection is what a leak
 * raises; the sawtooth of allocation between collections is not growth.
 */
export function floors(points: readonly TrendPoint[], seconds: number): TrendPoint[] {
  const slices = new Map<number, TrendPoint>();
  const first = points[0]?.t ?? 0;
  for (const p of points) {
    const slice = Math.floor((p.t - first) / seconds);
    const low = slices.get(slice);
    if (low === undefined || p.value < low.value) slices.set(slice, p);
  }
  return [...slices.values()].sort((a, b) => a.t - b.t);
}

/** Growth % an hour of the line through `points`, relative to the line's value at the first point. */
function growthPercent(points: readonly TrendPoint[]): { percent: number; perHour: number; start: number } | undefined {
  const line = fitLine(points);
  const first = points[0];
  if (line === undefined || first === undefined) return undefined;
  const start = line.intercept + line.slope * first.t;
  const perHour = line.slope * 3600;
  return { percent: start > 0 ? (perHour / start) * 100 : Number.POSITIVE_INFINITY, perHour, start };
}

function signed(percent: number): string {
  return `${percent >= 0 ? '+' : ''}${percent.toFixed(1)} %/h`;
}

/**
 * The memory rule on one series (MiB or bytes: the rule is relative). The line goes through the floors of
 * the judged window (one per interval); the run fails only when the window grows faster than allowed and so
 * does each of its halves: a leak grows all the time, while a heap that the collector shrank and that grows
 * back to its usual size does so once, in one half.
 */
export function memoryFinding(subject: string, points: readonly TrendPoint[], rules: VerdictRules): Finding {
  const window = judgedWindow(points, rules);
  const low = floors(window, rules.intervalSeconds);
  const whole = growthPercent(low.length >= 3 ? low : window);
  const span = (window[window.length - 1]?.t ?? 0) - (window[0]?.t ?? 0);
  const born = restartedAt(points);
  if (born !== undefined && span < rules.minJudgedSeconds)
    return {
      subject,
      status: 'note',
      message: `restarted at ${Math.round(born / 60)} min: its own warm-up (${Math.round(rules.restartWarmUpSeconds / 60)} min) leaves ${Math.round(span / 60)} min of the run, less than ${rules.minJudgedSeconds / 60}; not judged`,
    };
  if (whole === undefined)
    return { subject, status: 'note', message: `too few samples after warm-up (${window.length}) to judge` };
  const middle = low.length >= 3 ? ((low[0]?.t ?? 0) + (low[low.length - 1]?.t ?? 0)) / 2 : 0;
  const halves = [low.filter((p) => p.t <= middle), low.filter((p) => p.t >= middle)].map(growthPercent);
  const trend = `${signed(whole.percent)} (${whole.perHour.toFixed(1)}/h from ${whole.start.toFixed(1)}, floors over the last ${Math.round(span / 60)} min; halves ${halves.map((half) => (half === undefined ? '?' : signed(half.percent))).join(', ')})`;
  if (span < rules.minJudgedSeconds)
    return {
      subject,
      status: 'note',
      message: `${trend}: window shorter than ${rules.minJudgedSeconds / 60} min, not judged`,
    };
  // Halves need floors of their own: with fewer, no half could be fitted and nothing could ever fail.
  if (low.length < 3)
    return {
      subject,
      status: 'note',
      message: `${trend}: only ${low.length} interval floors in the window (3 needed), not judged`,
    };
  const limit = rules.maxGrowthPercentPerHour;
  const growing = [whole, ...halves].every((fit) => fit !== undefined && fit.percent > limit);
  if (growing) return { subject, status: 'fail', message: `${trend} > ${limit} %/h throughout: grows without bound` };
  return { subject, status: 'ok', message: `${trend}: not above ${limit} %/h throughout` };
}

/** A queue's depth over the run and the jobs its workers completed per sample. */
export interface QueueSeries {
  /** Jobs waiting, prioritized, active or delayed. */
  depth: readonly TrendPoint[];
  /** Jobs finished (completed or failed) since the previous sample. */
  done: readonly TrendPoint[];
}

/** The queue rules on one queue. */
export function queueFindings(subject: string, queue: QueueSeries, rules: VerdictRules): Finding[] {
  const end = queue.depth[queue.depth.length - 1]?.t ?? 0;
  const lastInterval = (points: readonly TrendPoint[]) => points.filter((p) => p.t > end - rules.intervalSeconds);
  const tail = lastInterval(queue.depth);
  if (tail.length === 0) return [{ subject, status: 'note', message: 'no samples' }];
  const backlog = Math.min(...tail.map((p) => p.value));
  const done = lastInterval(queue.done).reduce((sum, p) => sum + p.value, 0);
  const findings: Finding[] = [];
  const capacity = Math.max(done, 1);
  findings.push(
    backlog > 0 && done === 0
      ? {
          subject,
          status: 'fail',
          message: `backlog at the end ${backlog} jobs and none completed in the last interval: the queue is stalled`,
        }
      : backlog > capacity
        ? {
            subject,
            status: 'fail',
            message: `backlog at the end ${backlog} jobs > ${done} completed in the last interval: it cannot be drained within one interval`,
          }
        : {
            subject,
            status: 'ok',
            message: `backlog at the end ${backlog} jobs ≤ ${done} completed in the last interval`,
          },
  );
  const window = judgedWindow(queue.depth, rules);
  const line = fitLine(window);
  const span = (window[window.length - 1]?.t ?? 0) - (window[0]?.t ?? 0);
  if (line !== undefined && span >= rules.minJudgedSeconds) {
    const perHour = line.slope * 3600;
    findings.push(
      perHour > capacity
        ? {
            subject,
            status: 'fail',
            message: `depth trend +${perHour.toFixed(0)} jobs/h > one interval's work (${capacity}): grows without bound`,
          }
        : {
            subject,
            status: 'ok',
            message: `depth trend ${perHour.toFixed(0)} jobs/h ≤ one interval's work (${capacity})`,
          },
    );
  }
  return findings;
}
