/** Typed failures of the commands and of the embedded Redis, with the exit code a command reports. */

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

/** Thrown when the embedded `redis-server` does not come up; the message carries the tail of its log. */
export class EmbeddedRedisError extends Error {
  override name = 'EmbeddedRedisError';
}

/** Thrown when no `redis-server` binary is available and this process cannot install one. */
export class RedisUnavailableError extends Error {
  override name = 'RedisUnavailableError';
}

/** Another live process holds the data folder's instance lock (`<dataDir>/instance.lock`). */
export class FolderLockedError extends CommandError {
  override name = 'FolderLockedError';
  readonly holderPid: number;

  constructor(holder: { pid: number; command: string }) {
    super(`another ${holder.command} is running in this folder (pid ${holder.pid}); stop it or use another folder`);
    this.holderPid = holder.pid;
  }
}
