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
    const shutdown = new Shutdown(silentLogger(), { budgetMs: 50 });
    const order: string[] = [];
    shutdown.add('redis', async () => void order.push('redis'));
    shutdown.add('stuck', () => new Promise<void>(() => undefined));
    const started = Date.now();
    await shutdown.run('test');
    expect(order).toEqual(['redis']);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('shares one budget: a step that hangs leaves each later step its reserve, and each step is told its time', async () => {
    const shutdown = new Shutdown(silentLogger(), { budgetMs: 900, reserveMs: 300 });
    const budgets: Record<string, number> = {};
    shutdown.add('folder lock', async (ms) => {
      budgets.last = ms;
    });
    shutdown.add('redis', async (ms) => {
      budgets.redis = ms;
    });
    shutdown.add('workers', (ms) => {
      budgets.workers = ms;
      return new Promise<void>(() => undefined);
    });
    const started = performance.now();
    await shutdown.run('test');
    const tookMs = performance.now() - started;
    // 900 less 300 for each of the two later steps; what is left less 300 for the last one; the rest.
    expect(budgets.workers).toBe(300);
    expect(budgets.redis).toBeGreaterThan(200);
    expect(budgets.redis).toBeLessThanOrEqual(300);
    expect(budgets.last).toBeGreaterThan(450);
    expect(budgets.last).toBeLessThanOrEqual(600);
    expect(tookMs).toBeLessThan(900);
  });
});
