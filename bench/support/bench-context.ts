/**
 * The service context a benchmark drives the service through (activating sources, reading stores), on the
 * benchmark's private Redis: opened with the children's environment and closed by the benchmark's cleanup.
 */
import { loadConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/logger.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { openServiceContext } from '../../src/runtime/service-context.ts';
import type { Cleanup } from '../../testkit/processes.ts';

/** Opens the context on `redisUrl` with `env` (the children's settings), closed at `cleanup`. */
export function openBenchContext(cleanup: Cleanup, env: Record<string, string>, redisUrl: string): ServiceContext {
  const opened = openServiceContext({
    config: loadConfig({ ...env, PORT: '1' }),
    logger: silentLogger(),
    redis: redisUrl,
    role: 'bench',
  });
  cleanup.add('bench context', opened.close);
  return opened.context;
}
