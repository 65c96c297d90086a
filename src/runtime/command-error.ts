import { InvalidIdError } from '../upstream/errors.ts';
import { validateId } from '../upstream/values.ts';

/** Exit code for bad command-line usage (BSD sysexits EX_USAGE). */
export const EXIT_USAGE = 64;

/** A failure a command reports as one line on stderr and an exit code, without a stack trace. */
export class CommandError extends Error {
  override name = 'CommandError';
  readonly exitCode: number;

  constructor(message: string, exitCode = 1, options?: ErrorOptions) {
    super(message, options);
    this.exitCode = exitCode;
  }
}

/** The command was called wrongly: exit 64 with the message and the usage line. */
export class UsageError extends CommandError {
  override name = 'UsageError';

  constructor(message: string) {
    super(message, EXIT_USAGE);
  }
}

/** An id given on the command line (`--group 42`), validated like every id from outside; else a usage error. */
export function idOption(flag: string, value: unknown): number {
  try {
    return validateId(flag, value);
  } catch (error) {
    if (error instanceof InvalidIdError)
      throw new UsageError(`${flag} must be a positive integer id (got "${String(value)}")`);
    throw error;
  }
}
