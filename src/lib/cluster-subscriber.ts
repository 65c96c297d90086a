/**
 * A subscriber connection on a Redis Cluster that says when it is lost. ioredis' `Cluster` subscribes through a
 * private `ClusterSubscriber`: when its node fails it subscribes again on another node by itself, emitting
 * nothing (no `close`, no `ready`), so a subscriber could not know that messages were lost meanwhile. In a Redis
 * Cluster a `PUBLISH` is sent to every node, so a plain `Redis` connection to any one node hears every message
 * (of `SUBSCRIBE`, not of the sharded `SSUBSCRIBE`); it emits `close` and `ready` like any connection, and its
 * retry strategy moves it to another node of the cluster on every reconnect.
 */
import { type Cluster, Redis, type RedisOptions } from 'ioredis';
import type { RedisNode } from './redis-target.ts';

/** Pause before the n-th reconnection (to the next node): the same backoff as every connection of ours. */
const retryDelay = (times: number) => Math.min(times * 200, 5_000);

/**
 * A plain connection named `connectionName` to one node of `cluster` (a random one, so that API processes
 * spread over the nodes), with the nodes' options (password, timeouts). Whenever it is lost it reconnects to
 * the next node: those the cluster knows now (`cluster.nodes()`, primaries and replicas), and `configured`
 * (REDIS_CLUSTER_NODES: the cluster may know none yet, or only dead ones). A closed connection to a node that
 * still runs moves too, which costs nothing: every node hears every message.
 */
export function clusterNodeSubscriber(
  cluster: Cluster,
  connectionName: string,
  configured: readonly RedisNode[],
): Redis {
  const candidates = () => knownNodes(cluster, configured);
  const first = candidates()[Math.floor(Math.random() * candidates().length)];
  if (first === undefined) throw new Error('a Redis Cluster without any known node');
  const subscriber: Redis = new Redis({
    // Options are replaced, not merged: the nodes' password, TLS and timeouts are carried over by hand.
    ...(cluster.options.redisOptions as Omit<RedisOptions, 'replyMapping'>),
    host: first.host,
    port: first.port,
    connectionName,
    // ioredis calls this before each reconnection, and its connector reads host and port from these options
    // when it opens the socket: changing them here is what moves the connection.
    retryStrategy: (times) => {
      const next = nextNode(candidates(), { host: subscriber.options.host, port: subscriber.options.port });
      if (next !== undefined) Object.assign(subscriber.options, { host: next.host, port: next.port });
      return retryDelay(times);
    },
  });
  return subscriber;
}

/** The nodes of `cluster` now and the configured ones, once each, in a stable order (address order). */
export function knownNodes(cluster: Pick<Cluster, 'nodes'>, configured: readonly RedisNode[]): RedisNode[] {
  const byAddress = new Map<string, RedisNode>();
  const add = (host: string | undefined, port: number | undefined) => {
    if (host !== undefined && port !== undefined) byAddress.set(`${host}:${port}`, { host, port });
  };
  for (const node of cluster.nodes('all')) add(node.options.host, node.options.port);
  for (const node of configured) add(node.host, node.port);
  return [...byAddress.keys()].sort().map((address) => byAddress.get(address) as RedisNode);
}

/** The node after `current` in `nodes`, round and round; the first when `current` is not among them. */
export function nextNode(
  nodes: readonly RedisNode[],
  current: { host?: string | undefined; port?: number | undefined },
): RedisNode | undefined {
  const index = nodes.findIndex((node) => node.host === current.host && node.port === current.port);
  return nodes[(index + 1) % nodes.length];
}
