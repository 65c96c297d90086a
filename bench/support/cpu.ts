/**
 * CPU accounting from /proc (Linux), so that a benchmark can say how much of the machine something else
 * used while it measured: benchmarks share these 2-core machines with test runs and compilers.
 */
import { readdir, readFile } from 'node:fs/promises';

/** Clock ticks per second of /proc times (USER_HZ, 100 on Linux). */
const TICKS = 100;

interface Sample {
  at: number;
  machineBusy: number;
  ours: number;
}

/** What {@link CpuMeter.stop} reports, in cores (CPU-seconds per second of wall time). */
export interface CpuUse {
  /** Every process of the machine. */
  machine: number;
  /** This process and its descendants (exited children count once reaped). */
  ours: number;
  /** Everything else: other people's work on the machine while we measured. */
  others: number;
}

/** Measures the CPU used between `start()` and `stop()`; on other systems every figure is NaN. */
export class CpuMeter {
  private first: Sample | undefined;

  async start(): Promise<void> {
    this.first = await sample();
  }

  async stop(): Promise<CpuUse> {
    const last = await sample();
    const first = this.first ?? last;
    const seconds = (last.at - first.at) / 1000;
    const machine = (last.machineBusy - first.machineBusy) / TICKS / seconds;
    const ours = (last.ours - first.ours) / TICKS / seconds;
    return { machine: round(machine), ours: round(ours), others: round(Math.max(0, machine - ours)) };
  }
}

function round(value: number): number {
  return Number(value.toFixed(2));
}

async function sample(): Promise<Sample> {
  try {
    return { at: Date.now(), machineBusy: await machineBusyTicks(), ours: await ourTicks() };
  } catch {
    return { at: Date.now(), machineBusy: Number.NaN, ours: Number.NaN };
  }
}

/** Busy ticks of all CPUs: everything but idle and iowait. */
async function machineBusyTicks(): Promise<number> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0] ?? '';
  const fields = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = fields.reduce((sum, value) => sum + value, 0);
  return total - (fields[3] ?? 0) - (fields[4] ?? 0);
}

/** utime + stime + cutime + cstime of this process and every live descendant. */
async function ourTicks(): Promise<number> {
  const stats = new Map<number, { parent: number; ticks: number }>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const text = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    if (fields.length < 15) continue;
    const ticks = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index] ?? 0), 0);
    stats.set(Number(name), { parent: Number(fields[1]), ticks });
  }
  const ours = new Set([process.pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, stat] of stats) {
      if (!ours.has(pid) && ours.has(stat.parent)) {
        ours.add(pid);
        grew = true;
      }
    }
  }
  return [...ours].reduce((sum, pid) => sum + (stats.get(pid)?.ticks ?? 0), 0);
}

/** CPU-milliseconds some processes used: all their threads, and their main threads alone. */
export interface ProcessCpu {
  /** Every thread: the event loop, libuv's thread pool, V8's helpers. */
  all: number;
  /** The main thread, where a Node process runs its event loop. */
  main: number;
}

/**
 * The CPU time `pids` have used so far (NaN where /proc is missing). Per job, its main-thread part is how long
 * a worker's event loop was busy: while it is, BullMQ starts no job, however much of the machine is idle.
 */
export async function processCpu(pids: readonly number[]): Promise<ProcessCpu> {
  let all = 0;
  let main = 0;
  for (const pid of pids) {
    all += await statTicks(`/proc/${pid}/stat`);
    main += await statTicks(`/proc/${pid}/task/${pid}/stat`);
  }
  return { all: (all * 1000) / TICKS, main: (main * 1000) / TICKS };
}

/** utime + stime of one stat file (a process's, or one of its threads'). */
async function statTicks(path: string): Promise<number> {
  const text = await readFile(path, 'utf8').catch(() => '');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return fields.length < 15 ? Number.NaN : Number(fields[11]) + Number(fields[12]);
}

/**
 * CPU-seconds used so far by these processes (every thread): the difference over a load run, divided by the
 * requests answered, is a server's CPU cost per request, which other work on the machine does not change as
 * much as it changes the request rate.
 */
export async function processCpuSeconds(pids: readonly number[]): Promise<number> {
  return (await processCpu(pids)).all / 1000;
}
