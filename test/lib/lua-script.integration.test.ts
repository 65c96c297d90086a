/**
 * Scripts run by their digest: a call ships `EVALSHA` and the 40-character digest, not the script's text, and
 * still works when the node forgot its scripts (`SCRIPT FLUSH`, a restart), on one server and on each node of a
 * Cluster, whose nodes keep separate script caches.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LuaScript, loadScript } from '../../src/lib/lua-script.ts';
import { silentLogger } from '../../src/logger.ts';
import { type EmbeddedRedis, startEmbeddedRedis } from '../../src/runtime/embedded-redis.ts';
import { type RedisClusterSet, startCluster } from '../support/redis-topologies.ts';

/** A real script of ours: extends a lock while its owner holds it (src/lib/extend-lock.lua). */
const EXTEND = loadScript(join(import.meta.dirname, '../../src/lib'), 'extend-lock');

/** Calls of `command` in a node's `INFO commandstats` (0 when never called since the last reset). */
async function calls(redis: Redis, command: 'eval' | 'evalsha'): Promise<number> {
  const stats = await redis.info('commandstats');
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
}

describe('on one server', () => {
  // Its own server: the test flushes the script cache and resets the counters, which would blur other files'.
  let dataDir: string;
  let server: EmbeddedRedis;
  let redis: Redis;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'tts-lua-script-'));
    server = await startEmbeddedRedis({ dataDir, logger: silentLogger(), persistence: false, shared: false });
    redis = new Redis(server.url);
  }, 60_000);
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('sends the text once, then only the digest', async () => {
    expect(EXTEND.sha).toMatch(/^[0-9a-f]{40}$/);
    await redis.script('FLUSH');
    await redis.set('lock', 'me');
    await redis.config('RESETSTAT');
    expect(await EXTEND.run(redis, ['lock'], ['me', 60_000])).toBe(1);
    // The first call found no script: one EVAL stored it.
    expect(await calls(redis, 'eval')).toBe(1);
    expect(await redis.script('EXISTS', EXTEND.sha)).toEqual([1]);

    await redis.config('RESETSTAT');
    expect(await EXTEND.run(redis, ['lock'], ['me', 60_000])).toBe(1);
    expect(await EXTEND.run(redis, ['lock'], ['other', 60_000])).toBe(0);
    expect(await calls(redis, 'evalsha')).toBe(2);
    expect(await calls(redis, 'eval')).toBe(0);
  });

  it('still works after SCRIPT FLUSH, and stores the script again', async () => {
    await redis.set('lock', 'me');
    expect(await EXTEND.run(redis, ['lock'], ['me', 60_000])).toBe(1);
    await redis.script('FLUSH');
    expect(await redis.script('EXISTS', EXTEND.sha)).toEqual([0]);
    expect(await EXTEND.run(redis, ['lock'], ['me', 60_000])).toBe(1);
    expect(await redis.script('EXISTS', EXTEND.sha)).toEqual([1]);
  });

  it('passes on errors other than NOSCRIPT', async () => {
    const failing = new LuaScript('failing', "return redis.error_reply('nope')");
    await expect(failing.run(redis, [])).rejects.toThrow(/nope/);
  });

  it('ships the text in a transaction, where a NOSCRIPT would come only after the other commands ran', async () => {
    await redis.script('FLUSH');
    await redis.set('lock', 'me');
    const results = await EXTEND.queue(redis.multi().set('other', '1'), ['lock'], ['me', 60_000]).exec();
    expect(results).toEqual([
      [null, 'OK'],
      [null, 1],
    ]);
  });
});

describe('on a Cluster', () => {
  let cluster: RedisClusterSet;
  let client: Cluster;

  beforeAll(async () => {
    cluster = await startCluster(3);
    client = new Cluster(cluster.nodes.map((node) => ({ host: '127.0.0.1', port: node.port })));
  }, 120_000);
  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
  }, 60_000);

  it('fills each node its script cache, and again on the node that flushed it', async () => {
    // Keys until every node holds one of them.
    const nodes = cluster.nodes.map((node) => new Redis({ host: '127.0.0.1', port: node.port }));
    try {
      const mine = await Promise.all(
        nodes.map(async (node) =>
          String(await node.cluster('NODES'))
            .split('\n')
            .find((line) => line.includes('myself')),
        ),
      );
      const byNode = new Map<number, string>();
      for (let index = 0; byNode.size < nodes.length; index += 1) {
        const key = `lock-${index}`;
        const slot = Number(await client.cluster('KEYSLOT', key));
        const position = mine.findIndex((line) => line !== undefined && ownsSlot(line, slot));
        if (position >= 0 && !byNode.has(position)) byNode.set(position, key);
      }
      for (const key of byNode.values()) await client.set(key, 'me');
      for (const key of byNode.values()) expect(await EXTEND.run(client, [key], ['me', 60_000])).toBe(1);
      for (const node of nodes) expect(await node.script('EXISTS', EXTEND.sha)).toEqual([1]);

      // One node forgets its scripts; the others keep theirs and get only digests.
      await nodes[0]?.script('FLUSH');
      for (const node of nodes) await node.config('RESETSTAT');
      for (const key of byNode.values()) expect(await EXTEND.run(client, [key], ['me', 60_000])).toBe(1);
      for (const [position, node] of nodes.entries()) {
        expect(await calls(node, 'evalsha')).toBe(1);
        expect(await calls(node, 'eval')).toBe(position === 0 ? 1 : 0);
        expect(await node.script('EXISTS', EXTEND.sha)).toEqual([1]);
      }
    } finally {
      for (const node of nodes) node.disconnect();
    }
  });
});

/** Whether a `CLUSTER NODES` line lists `slot` among its ranges (`0-5460 5461`). */
function ownsSlot(line: string, slot: number): boolean {
  return line
    .split(' ')
    .slice(8)
    .some((range) => {
      const [from, to = from] = range.split('-').map(Number);
      return from !== undefined && to !== undefined && slot >= from && slot <= to;
    });
}
