import { withDeadline } from '../lib/deadline.ts';
import { DeadlineError } from '../lib/errors.ts';
import type { Logger } from '../logger.ts';

/**
 * How long the whole ordered shutdown may take. Docker Compose and `docker stop` send SIGKILL 10 s after
 * SIGTERM (Kubernetes 30 s, systemd 90 s): the process is gone well before, whatever state Redis is in, and
 * what could not finish is left as after a crash (BullMQ retries a job whose lock expires).
 */
export const SHUTDOWN_BUDGET_MS = 8_000;

/** Kept back for each later step, so that a step that hangs never eats the time of those after it. */
export const STEP_RESERVE_MS = 1_000;

/**
 * How long the process may stay after the ordered shutdown before it is ended anyway: a handle nobody
 * closed (a reconnecting client, a timer of a library) would otherwise keep it running for ever.
 */
export const EXIT_GRACE_MS = 500;

/** One thing to stop, with a name for the log. */
interface Step {
  name: string;
  stop: (budgetMs: number) => Promise<void>;
}

/** Options of {@link Shutdown}; tests shorten them. */
export interface ShutdownOptions {
  /** The whole shutdown's time; default {@link SHUTDOWN_BUDGET_MS}. */
  budgetMs?: number;
  /** Time kept back for each later step; default {@link STEP_RESERVE_MS}. */
  reserveMs?: number;
}

/**
 * The process's one ordered shutdown. Components register a stop step as they start; steps run in reverse
 * order of registration (the last thing started stops first: HTTP, then workers, queues, Redis, embedded
 * processes), each awaited, a failing step logged and skipped so that the rest still run.
 *
 * The whole shutdown has one budget. A step gets what is left of it minus a reserve for each step after it,
 * and is told how much that is (`stop(budgetMs)`), so that it can give up gracefully in time (workers stop
 * waiting for their jobs, Redis clients disconnect instead of waiting for QUIT's answer); a step still
 * running then is abandoned, logged, and the next one runs.
 */
export class Shutdown {
  private readonly steps: Step[] = [];
  private readonly emergency: (() => void)[] = [];
  private running: Promise<void> | undefined;
  private readonly logger: Logger;
  private readonly budgetMs: number;
  private readonly reserveMs: number;

  constructor(logger: Logger, options: ShutdownOptions = {}) {
    this.logger = logger;
    this.budgetMs = options.budgetMs ?? SHUTDOWN_BUDGET_MS;
    this.reserveMs = options.reserveMs ?? STEP_RESERVE_MS;
  }

  /** Registers a stop step; `stop` is given the milliseconds it has before the shutdown goes on without it. */
  add(name: string, stop: (budgetMs: number) => Promise<void>): void {
    this.steps.push({ name, stop });
  }

  /** Registers a synchronous last resort for an exit that cannot wait (second signal): kill a child. */
  onEmergencyExit(action: () => void): void {
    this.emergency.push(action);
  }

  /** Runs every step once, in reverse order; later calls return the same promise. */
  run(reason: string): Promise<void> {
    this.running ??= this.runSteps(reason);
    return this.running;
  }

  private async runSteps(reason: string): Promise<void> {
    const started = performance.now();
    this.logger.info({ reason, budgetMs: this.budgetMs }, 'shutting down');
    const steps = [...this.steps].reverse();
    for (const [index, step] of steps.entries()) {
      const left = this.budgetMs - (performance.now() - started);
      const later = steps.length - index - 1;
      // At least a moment, even past the budget: a step that stops at once (a lock file) still runs.
      const budgetMs = Math.max(
        100,
        Math.round(Math.min(left, Math.max(left - later * this.reserveMs, this.reserveMs))),
      );
      try {
        await withDeadline(step.stop(budgetMs), budgetMs);
      } catch (error) {
        if (error instanceof DeadlineError)
          this.logger.error({ step: step.name, budgetMs }, 'shutdown step timed out; going on without it');
        else this.logger.error({ err: error, step: step.name }, 'shutdown step failed');
      }
    }
    this.logger.info({ tookMs: Math.round(performance.now() - started) }, 'shutdown complete');
  }

  /**
   * Ends the process soon after the ordered shutdown, with `process.exitCode`: a process that still runs
   * {@link EXIT_GRACE_MS} later is held by something nobody closed (an abandoned step's client reconnecting,
   * a library's timer), named in the log, and a supervisor must not have to kill it. The timer itself does
   * not keep the process alive: one that ends by itself ends at once.
   */
  exitSoon(graceMs = EXIT_GRACE_MS): void {
    const timer = setTimeout(() => {
      const left: Record<string, number> = {};
      for (const kind of process.getActiveResourcesInfo()) left[kind] = (left[kind] ?? 0) + 1;
      this.logger.warn({ left }, 'still running after the shutdown: exiting anyway');
      process.exit();
    }, graceMs);
    timer.unref();
  }

  /**
   * Resolves with the signal's name on the first SIGINT or SIGTERM. A second signal while shutting down
   * exits at once with status 130, for people whose patience has run out.
   */
  untilSignal(): Promise<string> {
    return new Promise((done) => {
      let received = false;
      const onSignal = (signal: NodeJS.Signals) => {
        if (received) {
          this.logger.warn({ signal }, 'second signal: exiting without waiting');
          for (const action of this.emergency) {
            try {
              action();
            } catch {
              // Exiting anyway: nothing useful can be done about a failed last resort.
            }
          }
          process.exit(130);
        }
        received = true;
        done(signal);
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    });
  }
}
