/**
 * How much memory an api process takes to serve every feed, against its `FEED_CACHE_MB` budget.
 *
 * A private Redis, the simulator (in this process) with `--groups` groups, and the service as child processes:
 * a worker publishes every group's feed (each requested once, fetched on demand), then stops. A fresh api is
 * started on that Redis and its RSS read idle; then every feed is requested in gzip, then in identity, then in
 * br, then in gzip again, and its RSS read after each pass (after a pause, so that garbage may be collected).
 *
 *   node scripts/feed-cache-memory.ts [--groups 1500] [--budget 256]    (the Docker image's MALLOC_* settings unless
 *   the environment sets them, and SERVICE_NODE_OPTIONS as NODE_OPTIONS)
 */
import { parseArgs } from 'node:util';
import { rssMiB } from '../bench/support/soak-probes.ts';
import {
  Cleanup,
  getUntilOk,
  imageAllocator,
  privateRedis,
  privateSimulator,
  rawRequest,
  type ServiceChild,
  serviceEnvironment,
  sleep,
  spawnRole,
  tempDir,
} from '../testkit/processes.ts';

const { values } = parseArgs({
  options: { groups: { type: 'string', default: '1500' }, budget: { type: 'string', default: '256' } },
});
const groups = Number(values.groups);
const budget = Number(values.budget);
const CONCURRENCY = 16;
/** Pause before RSS is read: V8 gives unused heap pages back some seconds after the process goes idle. */
const SETTLE_MS = 15_000;

/** Runs `each` over `items`, `CONCURRENCY` at a time. */
async function inLanes<T>(items: readonly T[], each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    for (let index = next++; index < items.length; index = next++) await each(items[index] as T);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
}

async function pass(api: ServiceChild, paths: readonly string[], encoding: string | undefined): Promise<number> {
  let bytes = 0;
  await inLanes(paths, async (path) => {
    const answer = await rawRequest(`${api.url}${path}`, {
      headers: encoding === undefined ? {} : { 'accept-encoding': encoding },
    });
    if (answer.status !== 200) throw new Error(`GET ${path} (${encoding}) answered ${answer.status}`);
    bytes += answer.body.length;
  });
  return bytes;
}

/** RSS after a pause, and how much of it the JavaScript heap and the memory outside it (Buffers) take. */
async function settledRss(api: ServiceChild, adminToken: string): Promise<number> {
  await sleep(SETTLE_MS);
  const page = await rawRequest(`${api.url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } });
  const metric = (name: string) => {
    const line: string | undefined = page.body
      .toString()
      .split('\n')
      .find((candidate) => candidate.startsWith(`timetable_nodejs_${name} `));
    return Math.round(Number(line?.split(' ')[1]) / 1024 / 1024);
  };
  const rss = Math.round((await rssMiB(api.pid)) ?? Number.NaN);
  console.log(
    `  heap ${metric('heap_size_used_bytes')}/${metric('heap_size_total_bytes')} MiB used/total, external ${metric('external_memory_bytes')} MiB`,
  );
  return rss;
}

const cleanup = new Cleanup();
try {
  const dir = await tempDir(cleanup, 'feed-cache-memory');
  const redisUrl = await privateRedis(cleanup, dir);
  const simulator = await privateSimulator(cleanup, { groups });
  const service = serviceEnvironment(redisUrl, simulator.url);
  const env: Record<string, string> = {
    ...imageAllocator(),
    ...service,
    UPSTREAM_RATE_LIMIT: '1000',
    WORKER_CONCURRENCY: '16',
    FIRST_REQUESTS_PER_CLIENT: '1000000/1m',
    FIRST_REQUESTS_TOTAL: '1000000/1m',
    FEED_CACHE_MB: String(budget),
  };
  const { groups: all } = (await (await fetch(`${simulator.url}/_sim/groups`)).json()) as { groups: { id: number }[] };
  const paths = all.map((group) => `/feeds/groups/${group.id}.ics`);

  const started = Date.now();
  const worker = await spawnRole(cleanup, 'worker', env, dir);
  const publisher = await spawnRole(cleanup, 'api', env, dir);
  await inLanes(
    paths,
    async (path) => void (await getUntilOk(`${publisher.url}${path}`, { 'accept-encoding': 'gzip' })),
  );
  await publisher.stop();
  await worker.stop();
  console.log(`${paths.length} group feeds published in ${Math.round((Date.now() - started) / 1000)} s`);

  const api = await spawnRole(cleanup, 'api', env, dir);
  const idle = await settledRss(api, service.ADMIN_TOKEN);
  console.log(`api idle: ${idle} MiB RSS (budget ${budget} MiB)`);
  for (const encoding of ['gzip', undefined, 'br', 'gzip']) {
    const bytes = await pass(api, paths, encoding);
    const rss = await settledRss(api, service.ADMIN_TOKEN);
    console.log(
      `every feed in ${encoding ?? 'identity'}: ${Math.round(bytes / 1024 / 1024)} MiB of bodies, api ${rss} MiB RSS (${rss - idle} above idle)`,
    );
  }
} finally {
  await cleanup.run();
}
