/**
 * `npm run bench`: runs every benchmark in one process and prints its figures as JSON lines, with the
 * machine and date, for bench/RESULTS.md. `npm run bench -- NAME…` runs only those. Ratios are always measured within
 * one run. Flags after the names (`npm run bench -- scale --sizes 500,1000`) go to the benchmarks that take
 * any (the others take none).
 */
import { cpus, totalmem } from 'node:os';
import { runCaldavPushBenchmark } from './caldav-push.ts';
import { runFeedServingBenchmark } from './feed-serving.ts';
import { runFirstPublishBenchmark } from './first-publish.ts';
import { runFreshnessBenchmark } from './freshness.ts';
import { runFreshnessModel } from './freshness-model.ts';
import { runGooglePushBenchmark } from './google-push.ts';
import { runNotifyBenchmark } from './notify.ts';
import { runRefreshCycleBenchmark } from './refresh-cycle.ts';
import { runScaleBenchmark } from './scale.ts';
import { runTimetableBenchmark } from './timetable.ts';

const machine = `${cpus().length}× ${cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
process.stdout.write(`${JSON.stringify({ date: new Date().toISOString(), machine })}\n`);
const benchmarks: Record<string, (flags: readonly string[]) => Promise<Record<string, number | string>>> = {
  timetable: () => runTimetableBenchmark(),
  'feed-serving': () => runFeedServingBenchmark(),
  'refresh-cycle': () => runRefreshCycleBenchmark(),
  'google-push': () => runGooglePushBenchmark(),
  'caldav-push': () => runCaldavPushBenchmark(),
  // Change notifications on Telegram, MAX and e-mail at once: 50 of 500 sources changed, drained at each
  // channel's rate (~45 s).
  notify: runNotifyBenchmark,
  // Not in a plain `npm run bench`: ~25 minutes at its default sizes on a quiet machine, and 4.5 GiB of Redis.
  scale: runScaleBenchmark,
  // Not in a plain `npm run bench` either: two phases of ~6 minutes (fixed and adaptive refresh policy).
  freshness: runFreshnessBenchmark,
  // Not in a plain `npm run bench`: a model (virtual time, under a minute), not a measurement of the service.
  'freshness-model': runFreshnessModel,
  // Not in a plain `npm run bench`: a worker's CPU per first publication, in one process, for comparing code.
  'first-publish': runFirstPublishBenchmark,
};
/** Run only when named: too long for a plain `npm run bench`, or a model rather than a measurement. */
const ON_REQUEST = new Set(['scale', 'freshness', 'freshness-model', 'first-publish']);
const args = process.argv.slice(2);
const firstFlag = args.findIndex((arg) => arg.startsWith('--'));
// `npm run bench -- timetable` runs only the named benchmarks.
const only = firstFlag === -1 ? args : args.slice(0, firstFlag);
const flags = firstFlag === -1 ? [] : args.slice(firstFlag);
for (const [name, run] of Object.entries(benchmarks)) {
  if (only.length > 0 ? !only.includes(name) : ON_REQUEST.has(name)) continue;
  const started = Date.now();
  const figures = await run(flags);
  process.stdout.write(`${JSON.stringify({ benchmark: name, seconds: (Date.now() - started) / 1000, ...figures })}\n`);
}
