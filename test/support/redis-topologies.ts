/**
 * Real Redis topologies on loopback for the Sentinel and Cluster tests: `redis-server` processes (and
 * `redis-server --sentinel`, the same binary Debian's redis-sentinel links to) started in a temporary folder
 * on free ports, without persistence, and stopped (SIGKILL) with the folder removed by `stop()`.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import type { RedisNode } from '../../src/lib/redis-target.ts';
import { until } from '../../testkit/poll.ts';

const run = promisify(execFile);
const HOST = '127.0.0.1';

/** One redis-server process. */
export interface RedisProcess {
  readonly port: number;
  readonly process: ChildProcess;
  /** `kill -9`. Resolves once the process is gone. */
  kill(): Promise<void>;
}

/** A primary, its replica and one sentinel monitoring them. */
export interface SentinelSet {
  /** The name the sentinel monitors the primary under. */
  readonly master: string;
  readonly sentinels: readonly RedisNode[];
  readonly primary: RedisProcess;
  readonly replica: RedisProcess;
  readonly sentinel: RedisProcess;
  /** The environment of a service on this set. */
  readonly env: Record<string, string | undefined>;
  /** The port the sentinel names as the primary now. */
  currentPrimaryPort(): Promise<number | undefined>;
  stop(): Promise<void>;
}

/** A Redis Cluster of primaries without replicas. */
export interface RedisClusterSet {
  readonly nodes: readonly RedisProcess[];
  /** The environment of a service on this cluster (the prefix is the caller's). */
  readonly env: Record<string, string | undefined>;
  stop(): Promise<void>;
}

/**
 * Starts a primary, a replica of it and one sentinel (quorum 1, the primary down after 1 s without an answer,
 * a failover given 5 s), and waits until the replica is in sync and the sentinel knows it: a `kill -9` of the
 * primary then fails over within a few seconds.
 */
export async function startSentinelSet(master = 'tts-primary'): Promise<SentinelSet> {
  const dir = await mkdtemp(join(tmpdir(), 'tts-sentinel-'));
  const started: RedisProcess[] = [];
  try {
    const primary = await startServer(dir, 'primary', await freePort(), []);
    started.push(primary);
    const replica = await startServer(dir, 'replica', await freePort(), ['--replicaof', HOST, String(primary.port)]);
    started.push(replica);
    const sentinelPort = await freePort();
    const config = join(dir, 'sentinel.conf');
    await writeFile(
      config,
      [
        `port ${sentinelPort}`,
        `bind ${HOST}`,
        `dir ${dir}`,
        `sentinel monitor ${master} ${HOST} ${primary.port} 1`,
        `sentinel down-after-milliseconds ${master} 1000`,
        `sentinel failover-timeout ${master} 5000`,
        `sentinel parallel-syncs ${master} 1`,
        '',
      ].join('\n'),
    );
    const sentinel = await startProcess(sentinelPort, [config, '--sentinel']);
    started.push(sentinel);
    await waitFor(async () => {
      const info = (await query(primary, (redis) => redis.info('replication'))) ?? '';
      return /connected_slaves:1/.test(info) && /state=online/.test(info);
    }, 'the replica to be in sync');
    await waitFor(async () => {
      const replicas = await query(sentinel, (redis) => redis.call('SENTINEL', 'REPLICAS', master));
      return Array.isArray(replicas) && replicas.length === 1;
    }, 'the sentinel to know the replica');
    const sentinels = [{ host: HOST, port: sentinelPort }];
    return {
      master,
      sentinels,
      primary,
      replica,
      sentinel,
      env: {
        REDIS_URL: undefined,
        REDIS_SENTINELS: `${HOST}:${sentinelPort}`,
        REDIS_SENTINEL_MASTER: master,
      },
      currentPrimaryPort: async () => {
        const address = await query(sentinel, (redis) => redis.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', master));
        return Array.isArray(address) ? Number(address[1]) : undefined;
      },
      stop: () => stopAll(started, dir),
    };
  } catch (error) {
    await stopAll(started, dir);
    throw error;
  }
}

/**
 * Starts `primaries` cluster-enabled servers, joins them with `redis-cli --cluster create` (no replicas) and
 * waits until every node says the cluster is ok.
 */
export async function startCluster(primaries = 3): Promise<RedisClusterSet> {
  const dir = await mkdtemp(join(tmpdir(), 'tts-cluster-'));
  const started: RedisProcess[] = [];
  try {
    for (let index = 0; index < primaries; index += 1) {
      // The cluster bus listens on port + 10000, so both must be free (and the port below 55536).
      const port = await freeClusterPort();
      started.push(
        await startServer(dir, `node-${index}`, port, [
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(dir, `nodes-${index}.conf`),
          '--cluster-node-timeout',
          '5000',
        ]),
      );
    }
    const addresses = started.map((node) => `${HOST}:${node.port}`);
    await run('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'], {
      timeout: 60_000,
    });
    for (const node of started) {
      await waitFor(
        async () => /cluster_state:ok/.test(String(await query(node, (redis) => redis.call('CLUSTER', 'INFO')))),
        `cluster node ${node.port} to be ok`,
      );
    }
    return {
      nodes: started,
      env: { REDIS_URL: undefined, REDIS_CLUSTER_NODES: addresses.join(',') },
      stop: () => stopAll(started, dir),
    };
  } catch (error) {
    await stopAll(started, dir);
    throw error;
  }
}

/** A redis-server with its own folder under `dir`, without persistence, on `port`. */
async function startServer(dir: string, name: string, port: number, args: string[]): Promise<RedisProcess> {
  const folder = join(dir, name);
  await mkdir(folder);
  return startProcess(port, ['--dir', folder, '--save', '', '--appendonly', 'no', ...args]);
}

/** Spawns `redis-server` with `args` (port and loopback address added) and waits until it answers PING. */
async function startProcess(port: number, args: string[]): Promise<RedisProcess> {
  const child = spawn('redis-server', [...args, '--port', String(port), '--bind', HOST], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  // A test that times out may never reach its stop(): the servers still end with the test process.
  const orphanGuard = () => child.kill('SIGKILL');
  process.once('exit', orphanGuard);
  child.once('exit', () => process.off('exit', orphanGuard));
  const server: RedisProcess = {
    port,
    process: child,
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((done) => child.once('exit', done));
      child.kill('SIGKILL');
      await gone;
    },
  };
  await waitFor(async () => (await query(server, (redis) => redis.ping())) === 'PONG', `redis on ${port}`);
  return server;
}

/** Runs `use` on a short-lived connection that never retries; undefined when the server does not answer. */
async function query<T>(server: RedisProcess, use: (redis: Redis) => Promise<T>): Promise<T | undefined> {
  const redis = new Redis({
    host: HOST,
    port: server.port,
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: 2_000,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await use(redis);
  } catch {
    return undefined;
  } finally {
    redis.disconnect();
  }
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  if (!(await until(check, (ok) => ok, timeoutMs))) throw new Error(`timed out waiting for ${what}`);
}

async function stopAll(started: readonly RedisProcess[], dir: string): Promise<void> {
  await Promise.all(started.map((server) => server.kill()));
  await rm(dir, { recursive: true, force: true });
}

/** A port free a moment ago on loopback. */
async function freePort(): Promise<number> {
  const port = await tryPort(0);
  if (port === undefined) throw new Error('no free port');
  return port;
}

/** `port` (0: any) if it could be listened on a moment ago. */
function tryPort(port: number): Promise<number | undefined> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(undefined));
    server.listen(port, HOST, () => {
      const address = server.address();
      server.close(() => done(typeof address === 'object' && address ? address.port : undefined));
    });
  });
}

/** A port below 55536 that is free, and whose cluster bus port (+10000) is free too. */
async function freeClusterPort(): Promise<number> {
  for (let tries = 0; tries < 200; tries += 1) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if ((await tryPort(port)) === port && (await tryPort(port + 10_000)) === port + 10_000) return port;
  }
  throw new Error('no free port pair for a cluster node');
}
