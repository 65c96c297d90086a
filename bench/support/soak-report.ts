/** What the soak makes of its samples: the progress line, the verdict of its rules, the chart's panels. */
import type { Panel, SeriesPoint } from './chart.ts';
import { num, type Row } from './soak-sampler.ts';
import { type Finding, memoryFinding, queueFindings, type TrendPoint, type VerdictRules } from './soak-verdict.ts';

/** `[ 3:20 / 60:00] RSS api 120 w1 95 w2 90 MiB · Redis 45 MiB · refresh 12 waiting …`. */
export function progressLine(row: Row, total: number): string {
  const clock = (s: number) => `${Math.floor(s / 60)}:${String(Math.floor(s % 60)).padStart(2, '0')}`;
  const t = num(row, 'elapsed_s') ?? 0;
  const value = (key: string) => num(row, key) ?? '–';
  return `[${clock(t).padStart(5)} / ${clock(total)}] ${[
    `RSS api ${value('api_rss_mib')} w1 ${value('worker-1_rss_mib')} w2 ${value('worker-2_rss_mib')} MiB`,
    `Redis ${value('redis_used_mib')} MiB`,
    `refresh ${value('refresh_waiting')}+${value('refresh_active')} queued, ${value('refresh_done')} done`,
    `push ${value('push_waiting')}+${value('push_delayed')} queued, ${value('push_done')} done`,
    `lag p99 ${value('api_lag_p99_ms')}/${value('worker-1_lag_p99_ms')}/${value('worker-2_lag_p99_ms')} ms`,
    `feeds ${value('feed_rps')}/s p99 ${value('feed_p99_ms')} ms, ${value('feed_errors')} errors`,
    `Google ${value('google_writes')} writes`,
  ].join(' · ')}`;
}

/** Applies the rules of support/soak-verdict.ts to the samples. */
export function judge(
  rows: readonly Row[],
  names: readonly string[],
  rules: VerdictRules,
  bytesPerJob: number,
): Finding[] {
  const series = (value: (row: Row) => number | null, epoch?: (row: Row) => number | string | null): TrendPoint[] =>
    rows.flatMap((row) => {
      const v = value(row);
      const t = num(row, 'elapsed_s');
      if (v === null || t === null) return [];
      const e = epoch?.(row);
      return [{ t, value: v, ...(e === undefined || e === null ? {} : { epoch: e }) }];
    });
  const findings: Finding[] = [];
  for (const name of names)
    findings.push(
      memoryFinding(
        `${name} RSS`,
        series(
          (row) => num(row, `${name}_rss_mib`),
          (row) => row[`${name}_pid`] ?? null,
        ),
        rules,
      ),
    );
  // Redis without the bounded history of finished jobs (see soak-verdict.ts).
  findings.push(
    memoryFinding(
      `Redis used_memory without the kept job history (${Math.round(bytesPerJob)} B a job)`,
      series((row) => {
        const used = num(row, 'redis_used_mib');
        const kept = (num(row, 'refresh_kept') ?? 0) + (num(row, 'push_kept') ?? 0);
        return used === null ? null : used - (kept * bytesPerJob) / 2 ** 20;
      }),
      rules,
    ),
  );
  for (const queue of ['refresh', 'push'])
    findings.push(
      ...queueFindings(
        `${queue} queue`,
        {
          depth: series(
            (row) =>
              (num(row, `${queue}_waiting`) ?? 0) +
              (num(row, `${queue}_active`) ?? 0) +
              (num(row, `${queue}_delayed`) ?? 0),
          ),
          done: series((row) => num(row, `${queue}_done`)),
        },
        rules,
      ),
    );
  return findings;
}

/** The chart's panels, from the samples. */
export function panels(rows: readonly Row[], names: readonly string[], sampleSeconds: number): Panel[] {
  const points = (pairs: readonly (readonly [string, string])[]): SeriesPoint[] =>
    rows.flatMap((row) =>
      pairs.map(([series, key]) => ({ x: (num(row, 'elapsed_s') ?? 0) / 60, series, value: num(row, key) })),
    );
  return [
    {
      title: 'Memory of each process (resident set size)',
      yTitle: 'MiB',
      points: points([
        ...names.map((name) => [name, `${name}_rss_mib`] as const),
        ['redis-server', 'redis_rss_mib'],
        ['soak driver', 'driver_rss_mib'],
      ]),
    },
    {
      title: 'Redis memory',
      yTitle: 'MiB',
      points: points([
        ['used_memory', 'redis_used_mib'],
        ['used_memory_rss', 'redis_rss_mib'],
      ]),
    },
    {
      title: 'Queue depths (sampled)',
      yTitle: 'jobs',
      points: points([
        ['refresh waiting', 'refresh_waiting'],
        ['refresh active', 'refresh_active'],
        ['refresh delayed (retries)', 'refresh_delayed'],
        ['push waiting', 'push_waiting'],
        ['push active', 'push_active'],
        ['push delayed (retries)', 'push_delayed'],
      ]),
    },
    {
      title: 'Finished jobs Redis keeps (bounded by the queues’ retention counts)',
      yTitle: 'jobs',
      points: points([
        ['refresh', 'refresh_kept'],
        ['push', 'push_kept'],
      ]),
    },
    {
      title: 'Event-loop lag, p99 since the previous sample',
      yTitle: 'ms',
      points: points(names.map((name) => [name, `${name}_lag_p99_ms`] as const)),
    },
    {
      title: `Work done, per ${sampleSeconds} s sample`,
      yTitle: `count per ${sampleSeconds} s`,
      steps: true,
      points: points([
        ['refresh jobs finished', 'refresh_done'],
        ['push jobs finished', 'push_done'],
        ['upstream requests', 'upstream_requests'],
        ['Google API requests', 'google_requests'],
        ['Google writes', 'google_writes'],
        ['Google faults injected', 'google_faulted'],
      ]),
    },
    {
      title: `Feed requests (subscribers), per ${sampleSeconds} s sample`,
      yTitle: 'requests/s',
      points: points([
        ['answered', 'feed_rps'],
        ['5xx or transport errors', 'feed_error_rps'],
      ]),
    },
    {
      title: 'Feed latency, p99 of the requests of each sample',
      yTitle: 'ms',
      points: points([['p99', 'feed_p99_ms']]),
    },
  ];
}
