/**
 * CPU per first publication, in one process (`npm run bench -- first-publish`): what the refresh-cycle
 * benchmark's first cycle costs a worker per job, without the machine's other load in the figure.
 *
 * A private redis-server and the simulator (seed 1, as the refresh-cycle benchmark's; in a child process, so that
 * its CPU is not counted); sources are activated as that benchmark does, then their refresh jobs run here through
 * the refresh processor itself (fetch, publication, learning), 16 at a time as a worker runs them, without BullMQ
 * (and with a rate limit the machine never reaches: the figure is CPU, not rate).
 * The first sources warm the process up and are not counted. Reported: CPU ms per first publication of the main
 * thread (the event loop) and of all threads (the thread pool compresses), from /proc and `process.cpuUsage()`.
 * CPU time hardly depends on what else runs on the machine; compare code before and after by running this in
 * alternating rounds (`--sources N --skip M` picks which sources a round publishes). With `--bullmq`, the measured
 * jobs go through BullMQ as in a worker process (its limiter at `--rate`, 100 by default), its cost included.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Job } from 'bullmq';
import { activateSource } from '../src/jobs/activation.ts';
import type { RefreshJobData, RefreshJobResult } from '../src/jobs/contract.ts';
import { enqueueRefresh } from '../src/jobs/queues.ts';
import { refreshProcessor } from '../src/jobs/refresh.ts';
import { seedTermCounts } from '../src/jobs/term-starts.ts';
import { startWorkers } from '../src/jobs/workers.ts';
import type { ServiceContext } from '../src/runtime/context.ts';
import type { SourceKey } from '../src/timetable/source.ts';
import { Cleanup, privateRedis, serviceEnvironment, sleep, tempDir } from '../testkit/processes.ts';
import { openBenchContext } from './support/bench-context.ts';
import { processCpu } from './support/cpu.ts';
import { publicSources } from './support/soak-setup.ts';

const CONCURRENCY = 16;
const WARM_UP = 100;

/** Runs the measurement and returns its figures. */
export async function runFirstPublishBenchmark(
  flags: readonly string[] = [],
): Promise<Record<string, number | string>> {
  const flag = (name: string, fallback: number) => {
    const index = flags.indexOf(`--${name}`);
    return index === -1 ? fallback : Number(flags[index + 1]);
  };
  const count = flag('sources', 600);
  const skip = flag('skip', 0);
  // Through BullMQ: the measured jobs are queued, then a worker set as a worker process runs (every queue) drains
  // them at this rate limit; the CPU of queuing them is not counted.
  const bullmq = flags.includes('--bullmq');
  const rate = flag('rate', bullmq ? 100 : 1000);
  const cleanup = new Cleanup();
  try {
    const dir = await tempDir(cleanup, 'first-publish');
    const redisUrl = await privateRedis(cleanup, join(dir, 'redis'));
    const simulatorUrl = await childSimulator(cleanup);
    const env = {
      ...serviceEnvironment(redisUrl, simulatorUrl),
      UPSTREAM_RATE_LIMIT: String(rate),
      WORKER_CONCURRENCY: String(CONCURRENCY),
    };
    const ctx = openBenchContext(cleanup, env, redisUrl);
    await seedTermCounts(ctx);
    const all = (await publicSources(simulatorUrl, 1500, 500)) as SourceKey[];
    // Groups and teachers mixed as in a whole cycle: three groups to a teacher.
    const mixed = all
      .slice(0, 1500)
      .flatMap((group, index) => (index % 3 === 2 ? [group, all[1500 + (index - 2) / 3] as SourceKey] : [group]));
    const warm = mixed.slice(0, WARM_UP);
    const measured = mixed.slice(WARM_UP + skip, WARM_UP + skip + count);
    for (const source of [...warm, ...measured]) await activateSource(ctx, source);
    const processor = refreshProcessor(ctx);
    const run = async (sources: readonly SourceKey[]) => {
      const outcomes: Record<string, number> = {};
      let next = 0;
      const lane = async () => {
        while (next < sources.length) {
          const source = sources[next] as SourceKey;
          next += 1;
          const job = {
            id: `first-${next}`,
            data: { source, reason: 'resync', requestedAt: Date.now() },
            attemptsMade: 0,
            attemptsStarted: 1,
            opts: { attempts: 5 },
          } as unknown as Job<RefreshJobData, RefreshJobResult>;
          const result = await processor(job, 'token', new AbortController().signal);
          outcomes[result.outcome] = (outcomes[result.outcome] ?? 0) + 1;
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, lane));
      return outcomes;
    };
    await run(warm);
    global.gc?.();
    const calls = async () => commandCalls(await ctx.redis.info('commandstats'));
    if (bullmq)
      for (const source of measured)
        await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'resync', now: Date.now(), followUp: true });
    const callsBefore = await calls();
    const before = { usage: process.cpuUsage(), proc: await processCpu([process.pid]), at: performance.now() };
    // The monotonic clock of a `--cpu-prof` profile's timestamps (µs): which part of a profile was measured.
    const window = [process.hrtime.bigint() / 1000n];
    const outcomes = bullmq ? await drain(ctx, redisUrl) : await run(measured);
    const usage = process.cpuUsage(before.usage);
    window.push(process.hrtime.bigint() / 1000n);
    const proc = await processCpu([process.pid]);
    const per = (ms: number) => Number((ms / measured.length).toFixed(2));
    const callsAfter = await calls();
    const commands = [...callsAfter]
      .map(([name, count]) => [name, (count - (callsBefore.get(name) ?? 0)) / measured.length] as const)
      .filter(([, count]) => count >= 0.5)
      .sort((a, b) => b[1] - a[1]);
    return {
      sources: measured.length,
      outcomes: JSON.stringify(outcomes),
      'CPU ms per first publication, all threads (cpuUsage)': per((usage.user + usage.system) / 1000),
      'CPU ms per first publication, all threads (/proc)': per(proc.all - before.proc.all),
      'CPU ms per first publication, event-loop thread (/proc)': per(proc.main - before.proc.main),
      'wall ms per first publication': per(performance.now() - before.at),
      'Redis commands per first publication (this process, INFO commandstats)': Number(
        commands.reduce((sum, [, count]) => sum + count, 0).toFixed(1),
      ),
      'Redis commands per first publication by name': commands
        .map(([name, count]) => `${name} ${count.toFixed(1)}`)
        .join(', '),
      'measured window, µs of the monotonic clock': window.join('–'),
    };
  } finally {
    await cleanup.run();
  }
}

/** Runs a worker set until the refresh queue is drained; resolves to the counts of completed and failed jobs. */
async function drain(ctx: ServiceContext, redisUrl: string): Promise<Record<string, number>> {
  const workers = await startWorkers(ctx, redisUrl);
  try {
    for (;;) {
      const counts = await ctx.queues.refresh.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
      if (Object.values(counts).every((count) => count === 0)) break;
      await sleep(100);
    }
  } finally {
    await workers.close();
  }
  return ctx.queues.refresh.getJobCounts('completed', 'failed');
}

/** Calls per command from `INFO commandstats` (`cmdstat_get:calls=12,…`). */
function commandCalls(info: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(match[1] as string, Number(match[2]));
  return calls;
}

/** The simulator in a child process of its own (its CPU is not this process's); resolves to its URL. */
async function childSimulator(cleanup: Cleanup): Promise<string> {
  const code = `const { startSimulator } = await import(${JSON.stringify(new URL('../src/simulator/index.ts', import.meta.url).href)});
const simulator = await startSimulator({ port: 0, seed: 1 });
process.stdout.write(simulator.url + '\\n');`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  cleanup.add('simulator', async () => {
    child.kill();
    await new Promise((resolve) => child.once('exit', resolve));
  });
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const line = text.split('\n')[0];
      if (text.includes('\n') && line) resolve(line.trim());
    });
    child.once('exit', (code) => reject(new Error(`the simulator exited with ${code}`)));
  });
}
