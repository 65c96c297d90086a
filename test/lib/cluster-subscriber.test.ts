import type { Cluster } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { knownNodes, nextNode } from '../../src/lib/cluster-subscriber.ts';

/** A cluster that knows the nodes at these ports (as `cluster.nodes()` answers: connections with options). */
function clusterOf(...ports: number[]): Pick<Cluster, 'nodes'> {
  return {
    nodes: () =>
      ports.map((port) => ({ options: { host: '10.0.0.1', port } })) as unknown as ReturnType<Cluster['nodes']>,
  };
}

describe('knownNodes', () => {
  it('lists the nodes the cluster knows and the configured ones, once each, in address order', () => {
    expect(
      knownNodes(clusterOf(7002, 7001), [
        { host: '10.0.0.1', port: 7001 },
        { host: 'redis-0', port: 7000 },
      ]),
    ).toEqual([
      { host: '10.0.0.1', port: 7001 },
      { host: '10.0.0.1', port: 7002 },
      { host: 'redis-0', port: 7000 },
    ]);
  });

  it('falls back to the configured nodes while the cluster knows none', () => {
    expect(knownNodes(clusterOf(), [{ host: 'redis-0', port: 7000 }])).toEqual([{ host: 'redis-0', port: 7000 }]);
  });
});

describe('nextNode', () => {
  const nodes = [
    { host: 'a', port: 1 },
    { host: 'b', port: 1 },
    { host: 'c', port: 1 },
  ];

  it('moves to the node after the current one, round and round', () => {
    expect(nextNode(nodes, { host: 'a', port: 1 })).toEqual({ host: 'b', port: 1 });
    expect(nextNode(nodes, { host: 'c', port: 1 })).toEqual({ host: 'a', port: 1 });
  });

  it('starts from the first node when the current one is no longer known, and has none to give when none is', () => {
    expect(nextNode(nodes, { host: 'gone', port: 1 })).toEqual({ host: 'a', port: 1 });
    expect(nextNode([], { host: 'a', port: 1 })).toBeUndefined();
  });

  it('moves to another port on the same host', () => {
    expect(
      nextNode(
        [
          { host: 'a', port: 1 },
          { host: 'a', port: 2 },
        ],
        { host: 'a', port: 2 },
      ),
    ).toEqual({ host: 'a', port: 1 });
  });
});
