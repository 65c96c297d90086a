import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { Shutdown } from '../../src/runtime/shutdown.ts';

describe('Shutdown', () => {
  it('runs steps in reverse order of registration, once, past a failing step', async () => {
    const shutdown = new Shutdown(silentLogger());
    const order: string[] = [];
    shutdown.add('redis', async () => void order.push('redis'));
    shutdown.add('workers', async () => {
      order.push('workers');
      throw new Error('boom');
    });
    shutdown.add('http', async () => void order.push('http'));
    await Promise.all([shutdown.run('test'), shutdown.run('again')]);
    expect(order).toEqual(['http', 'workers', 'redis']);
  });

  it('gives up on a step that hangs, so that the steps after it still run', async () => {
    const shutdown = new Shutdown(silentLogger(), 50);
    const order: string[] = [];
    shutdown.add('redis', async () => void order.push('redis'));
    shutdown.add('stuck', () => new Promise<void>(() => undefined));
    const started = Date.now();
    await shutdown.run('test');
    expect(order).toEqual(['redis']);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
