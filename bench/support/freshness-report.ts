/**
 * The freshness benchmark's report (pure but for the files): figures per phase, the ratios adaptive/fixed, the
 * goals with pass or fail, the CSV of every (change, feed) pair and the chart of latency over time.
 */
import type { Chart, SeriesPoint } from './chart.ts';
import { type LatencyFigures, type PairRecord, pairLatency, phaseLatency } from './freshness-ledger.ts';

/** What the report needs of a phase. */
export interface PhaseSummary {
  policy: string;
  records: readonly PairRecord[];
  changesMade: number;
  requestsPerSecond: number;
}

/** A goal of the benchmark, judged. */
export interface Goal {
  figure: string;
  goal: string;
  value: number;
  pass: boolean;
}

/** Seconds with one decimal; `∞` for a figure that includes changes that never arrived. */
export function seconds(value: number): string {
  if (Number.isNaN(value)) return '–';
  return value === Number.POSITIVE_INFINITY ? '∞' : value.toFixed(1);
}

function latencyFigures(prefix: string, figures: LatencyFigures): Record<string, number | string> {
  return {
    [`${prefix} changes`]: figures.changes,
    [`${prefix} p50 s`]: seconds(figures.pairP50),
    [`${prefix} p95 s`]: seconds(figures.pairP95),
    [`${prefix} all feeds p50 s`]: seconds(figures.changeP50),
    [`${prefix} all feeds p95 s`]: seconds(figures.changeP95),
    [`${prefix} (change, feed) pairs`]: figures.pairs,
    [`${prefix} pairs never arrived`]: figures.missingPairs,
    [`${prefix} changes never fully arrived`]: figures.missingChanges,
  };
}

/** The flat figures of one phase, named after its policy. */
export function phaseFigures(phase: PhaseSummary): Record<string, number | string> {
  const latency = phaseLatency(phase.records);
  const kinds = { group: 0, teacher: 0, personal: 0 };
  for (const pair of phase.records) kinds[pair.kind] += 1;
  return {
    [`${phase.policy}: changes made`]: phase.changesMade,
    [`${phase.policy}: upstream requests/s`]: Number(phase.requestsPerSecond.toFixed(2)),
    [`${phase.policy}: pairs by feed kind (group/teacher/personal)`]: `${kinds.group}/${kinds.teacher}/${kinds.personal}`,
    ...latencyFigures(`${phase.policy}: group-visible`, latency.group),
    ...latencyFigures(`${phase.policy}: personal-only`, latency.personal),
  };
}

/** The goals, judged on the adaptive phase against the fixed one (p95 per (change, feed) pair). */
export function goals(fixed: PhaseSummary, adaptive: PhaseSummary): Goal[] {
  const a = phaseLatency(adaptive.records);
  const f = phaseLatency(fixed.records);
  const groupRatio = a.group.pairP95 / f.group.pairP95;
  const personalRatio = a.personal.pairP95 / f.personal.pairP95;
  const requestRatio = adaptive.requestsPerSecond / fixed.requestsPerSecond;
  return [
    { figure: 'group-visible p95, adaptive/fixed', goal: '≤ 0.25', value: groupRatio, pass: groupRatio <= 0.25 },
    { figure: 'personal-only p95, adaptive/fixed', goal: '≤ 1', value: personalRatio, pass: personalRatio <= 1 },
    {
      figure: 'upstream requests/s, adaptive/fixed',
      goal: '1 ± 0.05',
      value: requestRatio,
      pass: Math.abs(requestRatio - 1) <= 0.05,
    },
  ];
}

const CSV_HEADER = 'policy,change,entry,room,personal_only,feed_kind,source,made_s,arrived_s,latency_s';

/** One CSV row per (change, feed) pair of every phase; `arrived_s` and `latency_s` empty when it never arrived. */
export function csv(phases: readonly PhaseSummary[]): string {
  const rows = phases.flatMap((phase) =>
    phase.records.map((pair) => {
      const latency = pairLatency(pair);
      return [
        phase.policy,
        pair.change,
        pair.entryId,
        pair.room,
        pair.personalOnly,
        pair.kind,
        pair.source,
        (pair.madeMs / 1000).toFixed(3),
        pair.arrivedMs === undefined ? '' : (pair.arrivedMs / 1000).toFixed(3),
        Number.isFinite(latency) ? latency.toFixed(3) : '',
      ].join(',');
    }),
  );
  return `${[CSV_HEADER, ...rows].join('\n')}\n`;
}

/** A panel per phase: each change's latency until all its feeds served it, by when it was made. */
export function latencyChart(phases: readonly PhaseSummary[], subtitle: string[]): Chart {
  const points = phases.map((phase) => changePoints(phase.records));
  // One y axis for every phase, so that the policies compare at a glance.
  const top = Math.max(1, ...points.flat().map((point) => point.value ?? 0));
  return {
    title: 'Freshness: time until every affected feed serves a room change',
    subtitle,
    xTitle: 'change made at, minutes since the window started',
    panels: phases.map((phase, index) => ({
      title: `REFRESH_POLICY=${phase.policy}`,
      yTitle: 's until all its feeds',
      markers: true,
      points: points[index] ?? [],
      yDomain: [0, Math.ceil(top / 10) * 10] as const,
    })),
  };
}

function changePoints(records: readonly PairRecord[]): SeriesPoint[] {
  const byChange = new Map<number, { x: number; series: string; value: number }>();
  for (const pair of records) {
    const series = pair.personalOnly ? 'personal-only' : 'group-visible';
    const known = byChange.get(pair.change);
    const latency = pairLatency(pair);
    byChange.set(pair.change, { x: pair.madeMs / 60_000, series, value: Math.max(known?.value ?? 0, latency) });
  }
  return [...byChange.values()]
    .sort((a, b) => a.x - b.x)
    .map((point) => ({ ...point, value: Number.isFinite(point.value) ? point.value : null }));
}
