/**
 * Where the service's Redis is: one standalone server (a URL), a primary found through Redis Sentinel, or a
 * Redis Cluster. The configuration parses it once (`REDIS_URL`, `REDIS_SENTINELS`, `REDIS_CLUSTER_NODES`);
 * every connection of the service is made from it by `connectRedis` (redis-connection.ts), so that queues,
 * workers, stores, pub/sub, locks and budgets all follow the same topology.
 */
import type { Cluster, Redis } from 'ioredis';

/** A `host:port` of a sentinel or a cluster node. */
export interface RedisNode {
  readonly host: string;
  readonly port: number;
}

/** One of the three ways to reach Redis. */
export type RedisTarget =
  /** `redis://` or `rediss://`, credentials and database included. */
  | { readonly kind: 'standalone'; readonly url: string }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly RedisNode[];
      /** The name the sentinels monitor the primary under (`sentinel monitor <name> ...`). */
      readonly master: string;
      /** The sentinels' own password (`requirepass` of redis-sentinel), if they have one. */
      readonly sentinelPassword?: string | undefined;
      /** The primary's and replicas' password. */
      readonly password?: string | undefined;
    }
  | { readonly kind: 'cluster'; readonly nodes: readonly RedisNode[]; readonly password?: string | undefined };

/** A connection to any {@link RedisTarget}: ioredis' `Redis` (standalone, Sentinel) or its `Cluster`. */
export type RedisClient = Redis | Cluster;

/**
 * Parses `host:port,host:port` (an IPv6 address in brackets, `[::1]:26379`). Returns the nodes, or the
 * problem in words when an entry is not of that form.
 */
export function parseRedisNodes(value: string): RedisNode[] | string {
  const entries = value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  if (entries.length === 0) return 'must list at least one host:port';
  const nodes: RedisNode[] = [];
  for (const entry of entries) {
    const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([\w.-]+)):(\d{1,5})$/.exec(entry);
    const port = Number(match?.[3]);
    if (!match || port < 1 || port > 65535) return `"${entry}" is not host:port (e.g. redis-1:26379)`;
    nodes.push({ host: match[1] ?? match[2] ?? '', port });
  }
  return nodes;
}

/**
 * Whether every key starting with `prefix` has its Redis Cluster hash slot decided by the prefix alone: the
 * prefix holds a `{`, and a `}` after it with something in between (Redis hashes only the text between the
 * first `{` and the next `}`, and the whole key when that text is empty).
 */
export function hasHashTag(prefix: string): boolean {
  const open = prefix.indexOf('{');
  if (open < 0) return false;
  const close = prefix.indexOf('}', open + 1);
  return close > open + 1;
}

/** A `redis://` URL is a standalone target: tests and tools that know only a URL pass it as it is. */
export function redisTarget(target: RedisTarget | string): RedisTarget {
  return typeof target === 'string' ? { kind: 'standalone', url: target } : target;
}
