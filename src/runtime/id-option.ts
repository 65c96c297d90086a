import { ID_RANGE, InvalidIdError } from '../upstream/errors.ts';
import { validateId } from '../upstream/values.ts';
import { UsageError } from './errors.ts';

/** An id given on the command line (`--group 42`), validated like every id from outside; else a usage error. */
export function idOption(flag: string, value: unknown): number {
  try {
    return validateId(flag, value);
  } catch (error) {
    if (error instanceof InvalidIdError)
      throw new UsageError(`${flag} must be an id, ${ID_RANGE} (got "${String(value)}")`);
    throw error;
  }
}
