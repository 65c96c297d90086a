/**
 * `npm run bench`: runs every benchmark in one process and prints its figures as JSON lines, with the
 * machine and date, for bench/RESULTS.md. `npm run bench -- NAME…` runs only those. Ratios are always measured within
 * one run.
 */
import { cpus, totalmem } from 'node:os';
import { runFeedServingBenchmark } from './feed-serving.ts';
import { runGooglePushBenchmark } from './google-push.ts';
import { runRefreshCycleBenchmark } from './refresh-cycle.ts';
import { runTimetableBenchmark } from './timetable.ts';

const machine = `${cpus().length}× ${cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
process.stdout.write(`${JSON.stringify({ date: new Date().toISOString(), machine })}\n`);
const benchmarks: Record<string, () => Promise<Record<string, number | string>>> = {
  timetable: runTimetableBenchmark,
  'feed-serving': runFeedServingBenchmark,
  'refresh-cycle': runRefreshCycleBenchmark,
  'google-push': runGooglePushBenchmark,
};
// `npm run bench -- timetable` runs only the named benchmarks.
const only = process.argv.slice(2);
for (const [name, run] of Object.entries(benchmarks)) {
  if (only.length > 0 && !only.includes(name)) continue;
  const started = Date.now();
  const figures = await run();
  process.stdout.write(`${JSON.stringify({ benchmark: name, seconds: (Date.now() - started) / 1000, ...figures })}\n`);
}
