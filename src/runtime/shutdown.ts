import { withDeadline } from '../lib/deadline.ts';
import { DeadlineError } from '../lib/errors.ts';
import type { Logger } from '../logger.ts';

/** One thing to stop, with a name for the log. */
interface Step {
  name: string;
  stop: () => Promise<void>;
}

/**
 * The process's one ordered shutdown. Components register a stop step as they start; steps run in reverse
 * order of registration (the last thing started stops first: HTTP, then workers, queues, Redis, embedded
 * processes), each awaited, a failing step logged and skipped so that the rest still run.
 */
export class Shutdown {
  private readonly steps: Step[] = [];
  private readonly emergency: (() => void)[] = [];
  private running: Promise<void> | undefined;
  private readonly logger: Logger;
  private readonly stepTimeoutMs: number;

  /** `stepTimeoutMs`: a step still running after this long is abandoned (logged) so that the rest still run. */
  constructor(logger: Logger, stepTimeoutMs = 30_000) {
    this.logger = logger;
    this.stepTimeoutMs = stepTimeoutMs;
  }

  /** Registers a stop step. */
  add(name: string, stop: () => Promise<void>): void {
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
    this.logger.info({ reason }, 'shutting down');
    for (const step of [...this.steps].reverse()) {
      try {
        // An unreachable Redis must not hang the exit: a step still running after the timeout is left behind.
        await withDeadline(step.stop(), this.stepTimeoutMs);
      } catch (error) {
        if (error instanceof DeadlineError)
          this.logger.error(
            { step: step.name, timeoutMs: this.stepTimeoutMs },
            'shutdown step timed out; going on without it',
          );
        else this.logger.error({ err: error, step: step.name }, 'shutdown step failed');
      }
    }
    this.logger.info('shutdown complete');
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
