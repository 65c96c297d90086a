/**
 * The freshness model (`npm run bench -- freshness-model`): the refresh policies in virtual time
 * (support/freshness-model.ts), seconds of CPU, no Redis. Two sizes: the benchmark's (2,000 sources,
 * REFRESH_INTERVAL 1m, UPSTREAM_RATE_LIMIT 100, REFRESH_MAX_WAIT 10m, 30 changes a minute), to set beside a real
 * `npm run bench -- freshness`; and the university's (20,000 sources, 30m, 10/s, 4h), with the change rate scaled
 * so that each source sees as many changes per interval. Four policies: `fixed` (today's ticks), `adaptive`
 * (ours), `adaptive-uniform` (ours without the order: every unparked source planned at its deadline) and
 * `adaptive-linear` (frequency in proportion to the rate instead of its square root).
 *
 * Prints a table, writes `bench/.out/freshness-model/<date>.csv` (a row per size and policy) and `.png` (latency
 * by percentile per policy). Flags: `--sizes bench,university --policies … --seed 1 --window-intervals` (default
 * 30 at the benchmark's size, 20 at the university's) `--warmup-intervals` (default max(10, REFRESH_MAX_WAIT + 1
 * interval)) `--refresh-ms 250 --weight 2` (the class-soon factor of the weight) `--out PATH`.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type Panel, writeChart } from './support/chart.ts';
import { pairLatency, percentile } from './support/freshness-ledger.ts';
import {
  BENCH_SIZES,
  MODEL_POLICIES,
  type ModelOptions,
  type ModelPolicy,
  type ModelResult,
  type ModelSizes,
  modelWorld,
  runModel,
  UNIVERSITY_SIZES,
} from './support/freshness-model.ts';

interface ModelSize {
  name: 'bench' | 'university';
  sizes: ModelSizes;
  intervalMs: number;
  maxWaitMs: number;
  rateLimit: number;
  windowIntervals: number;
}

const MINUTE = 60_000;
/** The benchmark's change rate for its 2,000 sources at a 1-minute interval. */
const BENCH_CHANGES_PER_MINUTE = 30;
const SIZES: readonly ModelSize[] = [
  {
    name: 'bench',
    sizes: BENCH_SIZES,
    intervalMs: MINUTE,
    maxWaitMs: 10 * MINUTE,
    rateLimit: 100,
    windowIntervals: 30,
  },
  {
    name: 'university',
    sizes: UNIVERSITY_SIZES,
    intervalMs: 30 * MINUTE,
    maxWaitMs: 240 * MINUTE,
    rateLimit: 10,
    windowIntervals: 20,
  },
];

/** Sources of a size: groups, teachers and personal timetables. */
function sourceCount(sizes: ModelSizes): number {
  return sizes.groups * (1 + sizes.usersPerGroup) + sizes.teachers;
}

/** One row of the results. */
interface Row {
  size: ModelSize;
  result: ModelResult;
}

/** Runs the model at the chosen sizes and policies and returns the figures. */
export async function runFreshnessModel(argv: readonly string[] = []): Promise<Record<string, number | string>> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      sizes: { type: 'string', default: SIZES.map((size) => size.name).join(',') },
      policies: { type: 'string', default: MODEL_POLICIES.join(',') },
      seed: { type: 'string', default: '1' },
      'window-intervals': { type: 'string' },
      'warmup-intervals': { type: 'string' },
      'refresh-ms': { type: 'string', default: '250' },
      weight: { type: 'string', default: '2' },
      out: { type: 'string' },
    },
  });
  const number = (value: string | undefined, name: string): number => {
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < 0) throw new Error(`--${name} takes a non-negative number`);
    return parsed;
  };
  const list = (value: string | undefined) =>
    String(value)
      .split(',')
      .map((item) => item.trim());
  const sizes = list(values.sizes).map((name) => {
    const size = SIZES.find((known) => known.name === name);
    if (!size) throw new Error(`unknown size ${name} (bench, university)`);
    return size;
  });
  const policies = list(values.policies).map((name) => {
    if (!MODEL_POLICIES.includes(name as ModelPolicy)) throw new Error(`unknown policy ${name}`);
    return name as ModelPolicy;
  });
  const seed = number(values.seed, 'seed');
  const started = new Date();
  const rows: Row[] = [];
  for (const size of sizes) {
    const world = modelWorld(size.sizes, seed);
    const sources = sourceCount(size.sizes);
    const intervals = (ms: number) => ms / size.intervalMs;
    const warmupIntervals =
      values['warmup-intervals'] === undefined
        ? Math.max(10, intervals(size.maxWaitMs) + 1)
        : number(values['warmup-intervals'], 'warmup-intervals');
    const windowIntervals =
      values['window-intervals'] === undefined
        ? size.windowIntervals
        : number(values['window-intervals'], 'window-intervals');
    // As many changes per source per interval as the benchmark makes.
    const perMinute = (BENCH_CHANGES_PER_MINUTE * (sources / sourceCount(BENCH_SIZES)) * MINUTE) / size.intervalMs;
    for (const policy of policies) {
      const options: ModelOptions = {
        policy,
        refreshIntervalMs: size.intervalMs,
        refreshMaxWaitMs: size.maxWaitMs,
        upstreamRateLimit: size.rateLimit,
        changesPerMinute: perMinute,
        electiveShare: 0.15,
        zipf: 1,
        seed,
        warmupMs: warmupIntervals * size.intervalMs,
        windowMs: windowIntervals * size.intervalMs,
        refreshMs: number(values['refresh-ms'], 'refresh-ms'),
        weight: number(values.weight, 'weight'),
        stepMs: 250,
      };
      const clock = performance.now();
      const result = runModel(world, options);
      process.stderr.write(
        `freshness-model ${size.name} ${policy}: ${((performance.now() - clock) / 1000).toFixed(1)} s, ` +
          `${result.changes} changes\n`,
      );
      rows.push({ size, result });
    }
  }
  process.stdout.write(table(rows));
  const outBase = resolve(
    values.out ?? join('bench/.out/freshness-model', started.toISOString().slice(0, 16).replace(':', '-')),
  );
  await mkdir(dirname(outBase), { recursive: true });
  await writeFile(`${outBase}.csv`, csv(rows));
  await writeChart(`${outBase}.png`, {
    title: 'Freshness model: latency of a change to each feed that shows it, by percentile',
    subtitle: [
      `${started.toISOString().slice(0, 16)}Z · seed ${seed} · virtual time · class-soon factor ${values.weight}`,
      'bench: 2,000 sources, 1m, 100/s, max wait 10m · university: 20,000 sources, 30m, 10/s, max wait 4h',
    ],
    xTitle: 'percentile of (change, feed) pairs',
    panels: panels(rows),
  });
  return Object.assign(
    { csv: `${outBase}.csv`, png: `${outBase}.png` },
    ...rows.map(({ size, result }) => flat(`${size.name} ${result.policy}`, result)),
  );
}

/** A figure in seconds with one decimal, `∞` when some pair never arrived. */
function s(value: number): string {
  if (Number.isNaN(value)) return '–';
  return value === Number.POSITIVE_INFINITY ? '∞' : value.toFixed(1);
}

/** The 99th percentile of the group-visible pairs: the tail a parked feed's longest wait makes. */
function groupP99(result: ModelResult): number {
  return percentile(result.records.filter((pair) => !pair.personalOnly).map(pairLatency), 99);
}

function flat(prefix: string, result: ModelResult): Record<string, number | string> {
  const { group, personal } = result.latency;
  return {
    [`${prefix}: requests/s`]: Number(result.requestsPerSecond.toFixed(2)),
    [`${prefix}: group-visible p50 s`]: s(group.pairP50),
    [`${prefix}: group-visible p95 s`]: s(group.pairP95),
    [`${prefix}: group-visible all feeds p95 s`]: s(group.changeP95),
    [`${prefix}: personal-only p50 s`]: s(personal.pairP50),
    [`${prefix}: personal-only p95 s`]: s(personal.pairP95),
  };
}

const COLUMNS = [
  'size',
  'policy',
  'req/s',
  'asked/s',
  'rot/park/over/rel',
  'rel asked',
  'group p50',
  'p95',
  'p99',
  'all feeds p95',
  'personal p50',
  'p95',
  'changes',
  'parked',
  'spread again',
] as const;

/** The results as an aligned text table. */
function table(rows: readonly Row[]): string {
  const lines = rows.map(({ size, result }) => {
    const { group, personal } = result.latency;
    return [
      size.name,
      result.policy,
      result.requestsPerSecond.toFixed(2),
      result.askedPerSecond.toFixed(2),
      [result.rotationPerSecond, result.parkedPerSecond, result.overduePerSecond, result.relatedPerSecond]
        .map((v) => v.toFixed(1))
        .join('/'),
      result.relatedAskedPerSecond.toFixed(1),
      s(group.pairP50),
      s(group.pairP95),
      s(groupP99(result)),
      s(group.changeP95),
      s(personal.pairP50),
      s(personal.pairP95),
      `${group.changes}+${personal.changes}`,
      String(result.parked),
      String(result.spreadAgain),
    ];
  });
  const all = [[...COLUMNS], ...lines];
  const widths = COLUMNS.map((_, column) => Math.max(...all.map((line) => (line[column] ?? '').length)));
  const render = (line: readonly string[]) =>
    line.map((cell, column) => (column < 2 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)));
  return `${['latency in seconds; req/s over the window, by why; rel asked = related refreshes asked per s', ...all.map((line) => render(line).join('  '))].join('\n')}\n`;
}

const CSV_HEADER = [
  'size',
  'policy',
  'sources',
  'refresh_interval_s',
  'rate_limit',
  'asked_per_s',
  'requests_per_s',
  'rotation_per_s',
  'parked_per_s',
  'overdue_per_s',
  'related_per_s',
  'related_asked_per_s',
  'parked_sources',
  'group_changes',
  'group_pairs',
  'group_p50_s',
  'group_p95_s',
  'group_p99_s',
  'group_all_feeds_p50_s',
  'group_all_feeds_p95_s',
  'personal_changes',
  'personal_p50_s',
  'personal_p95_s',
  'pairs_never_arrived',
  'changes_spread_again',
].join(',');

/** One row per size and policy; an infinite figure (some pair never arrived) is written `inf`. */
function csv(rows: readonly Row[]): string {
  const n = (value: number, digits = 3) => (Number.isFinite(value) ? value.toFixed(digits) : 'inf');
  const lines = rows.map(({ size, result }) => {
    const { group, personal } = result.latency;
    return [
      size.name,
      result.policy,
      result.sources,
      size.intervalMs / 1000,
      size.rateLimit,
      n(result.askedPerSecond),
      n(result.requestsPerSecond),
      n(result.rotationPerSecond),
      n(result.parkedPerSecond),
      n(result.overduePerSecond),
      n(result.relatedPerSecond),
      n(result.relatedAskedPerSecond),
      result.parked,
      group.changes,
      group.pairs,
      n(group.pairP50),
      n(group.pairP95),
      n(groupP99(result)),
      n(group.changeP50),
      n(group.changeP95),
      personal.changes,
      n(personal.pairP50),
      n(personal.pairP95),
      group.missingPairs + personal.missingPairs,
      result.spreadAgain,
    ].join(',');
  });
  return `${[CSV_HEADER, ...lines].join('\n')}\n`;
}

/** The latency axis's ticks: a symlog scale's own are too few to read a second from ten. */
const LATENCY_TICKS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000];

/** Per size, group-visible and personal-only: latency at each percentile, one line per policy. */
function panels(rows: readonly Row[]): Panel[] {
  const bySize = new Map<string, Row[]>();
  for (const row of rows) bySize.set(row.size.name, [...(bySize.get(row.size.name) ?? []), row]);
  const percentiles = Array.from({ length: 50 }, (_, index) => 2 * (index + 1));
  return [...bySize.entries()].flatMap(([name, sizeRows]) =>
    (['group-visible', 'personal-only'] as const).map((kind) => ({
      title: `${name}: ${kind} changes`,
      yTitle: 's (log scale)',
      log: true,
      yTicks: LATENCY_TICKS,
      points: sizeRows.flatMap(({ result }) => {
        const latencies = result.records
          .filter((pair) => pair.personalOnly === (kind === 'personal-only'))
          .map(pairLatency);
        return percentiles.map((p) => {
          const value = percentile(latencies, p);
          return { x: p, series: result.policy, value: Number.isFinite(value) ? value : null };
        });
      }),
    })),
  );
}
