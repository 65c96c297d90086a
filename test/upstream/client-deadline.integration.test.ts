/**
 * A call's deadline bounds all of it (the wait for the budget and the exchange), against a loopback server
 * that answers slower than the deadline, and a budget that has no token to give.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toHttpError } from '../../src/http/errors.ts';
import { startDeadline } from '../../src/lib/deadline.ts';
import { silentLogger } from '../../src/logger.ts';
import type { UpstreamBudget } from '../../src/upstream/budget.ts';
import { createUniversityClient, type UniversityClient } from '../../src/upstream/client.ts';
import { UpstreamBudgetError, UpstreamTimeoutError } from '../../src/upstream/errors.ts';
import { type LocalServer, startLocalServer } from './local-server.ts';

const SLOW_MS = 3_000;
let server: LocalServer;
const clients: UniversityClient[] = [];

beforeAll(async () => {
  server = await startLocalServer();
  server.handle((_req, res) => {
    const timer = setTimeout(() => res.end('{"success": true, "users": []}'), SLOW_MS);
    res.on('close', () => clearTimeout(timer));
  });
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await server.close();
});

/** A client with per-phase timeouts far longer than the deadlines under test, so only the deadline can stop it. */
function client(budget?: UpstreamBudget): UniversityClient {
  const made = createUniversityClient({
    baseUrl: server.url,
    logger: silentLogger(),
    timeouts: { headersMs: 60_000, bodyMs: 60_000 },
    retry: { attempts: 3, baseDelayMs: 10, maxDelayMs: 10 },
    ...(budget ? { budget, budgetPriority: 'request' as const } : {}),
  });
  clients.push(made);
  return made;
}

/** A budget with no token to give for a minute; records the longest wait each take was allowed. */
function emptyBudget(allowed: (number | undefined)[]): UpstreamBudget {
  return {
    take: (endpoint, { maxWaitMs, signal }) => {
      allowed.push(maxWaitMs);
      if (maxWaitMs !== undefined && maxWaitMs < 60_000)
        return Promise.reject(new UpstreamBudgetError(endpoint, 60_000));
      return new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true }));
    },
  };
}

/** A budget whose take hangs (a Redis that stopped answering) until its signal aborts. */
const hangingBudget: UpstreamBudget = {
  take: (_endpoint, { signal }) =>
    new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true })),
};

async function timed(call: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  const error = await call.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  return { error, ms: performance.now() - started };
}

describe('a call with a deadline', () => {
  it('answers a timeout at its deadline when the university is slower, whatever the per-phase timeouts', async () => {
    const { error, ms } = await timed(client().searchEmployees('Иванов', { deadline: startDeadline(300) }));
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    expect((error as UpstreamTimeoutError).phase).toBe('deadline');
    // No retry after the deadline, although the client would retry a timeout.
    expect(ms).toBeLessThan(1_000);
    expect(toHttpError(error)?.statusCode).toBe(504);
  });

  it('counts the time spent before the call (in line for a place) against the same deadline', async () => {
    const deadline = startDeadline(1_000);
    await sleep(700);
    const { error, ms } = await timed(client().searchEmployees('Петров', { deadline }));
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    // About 300 ms were left; a call given the deadline afresh would take the whole second. The bound between
    // the two leaves room for a loaded machine.
    expect(ms).toBeLessThan(800);
  });

  it('waits for the budget no longer than the deadline leaves, and answers 503 for it', async () => {
    const allowed: (number | undefined)[] = [];
    const waiting = client(emptyBudget(allowed));
    // The budget may wait 2 s, the deadline leaves 1 s: the take is allowed 1 s and refused at once (in well
    // under half of it, even on a loaded machine).
    const { error, ms } = await timed(
      waiting.searchEmployees('Сидоров', { deadline: startDeadline(1_000), budgetWaitMs: 2_000 }),
    );
    expect(error).toBeInstanceOf(UpstreamBudgetError);
    expect(allowed[0]).toBeLessThanOrEqual(1_000);
    expect(allowed[0]).toBeGreaterThan(500);
    expect(ms).toBeLessThan(500);
    expect(toHttpError(error)?.statusCode).toBe(503);
    // Without a deadline or a wait of its own, a take has no bound: a refresh waits as long as it takes.
    const unbounded = waiting.searchEmployees('Сидоров', { signal: AbortSignal.timeout(300) });
    await expect(unbounded).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(allowed[1]).toBeUndefined();
  });

  it('stops a budget wait that hangs at the deadline, as a budget refusal (nothing was sent)', async () => {
    const seen = server.seen.length;
    const { error, ms } = await timed(
      client(hangingBudget).me('credential', undefined, { deadline: startDeadline(250) }),
    );
    expect(error).toBeInstanceOf(UpstreamBudgetError);
    expect(ms).toBeGreaterThanOrEqual(240);
    expect(ms).toBeLessThan(1_000);
    expect(server.seen.length).toBe(seen);
  });
});
