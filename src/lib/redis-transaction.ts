/** Redis transactions whose failures are thrown. */
import type { ChainableCommander } from 'ioredis';

/**
 * Runs a MULTI and throws the first command error: ioredis reports those per command in the result, not as a
 * rejection, so an unchecked `exec()` would take a half-failed transaction for a success.
 */
export async function execOrThrow(multi: ChainableCommander): Promise<void> {
  const results = await multi.exec();
  if (results === null) throw new Error('Redis transaction was aborted');
  const failed = results.find(([error]) => error !== null);
  if (failed) throw failed[0] as Error;
}
