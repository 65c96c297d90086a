import { describe, expect, it } from 'vitest';
import { toHttpError } from '../../src/http/errors.ts';
import { startDeadline } from '../../src/lib/deadline.ts';
import { boundedClient, type RequestPathLimits } from '../../src/upstream/bounded-client.ts';
import type { CallOptions, UniversityClient } from '../../src/upstream/client.ts';
import { UpstreamBusyError } from '../../src/upstream/errors.ts';
import { waitUntil } from '../../testkit/poll.ts';

/** A client whose searches and profile checks wait until released, recording the calls that reached it. */
function slowClient() {
  const waiting: (() => void)[] = [];
  const calls: { what: string; options: CallOptions | undefined }[] = [];
  const held =
    <T>(what: string, value: T) =>
    (...args: unknown[]) => {
      calls.push({ what, options: args.at(-1) as CallOptions | undefined });
      return new Promise<T>((resolve) => waiting.push(() => resolve(value)));
    };
  const client = {
    searchEmployees: held('search', []),
    me: held('me', { id: 1, firstName: 'Мария', lastName: 'Иванова' }),
    close: async () => undefined,
  } as unknown as UniversityClient;
  return {
    client,
    calls,
    releaseAll: () => {
      for (const release of waiting.splice(0)) release();
    },
  };
}

function limits(inFlight: number, line: number, deadlineMs = 10_000): RequestPathLimits {
  return { deadlineMs, minCallMs: 50, lanes: { credential: { inFlight, line }, lookup: { inFlight, line } } };
}

describe('boundedClient', () => {
  it('refuses calls beyond the line at once, without reaching the university, and admits those in line', async () => {
    const slow = slowClient();
    const bounded = boundedClient(slow.client, limits(2, 1));
    const first = [bounded.searchEmployees('ив'), bounded.searchEmployees('пе')];
    const inLine = bounded.searchEmployees('си');
    const refused = await bounded.searchEmployees('ко').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UpstreamBusyError);
    expect(slow.calls).toHaveLength(2);
    const answer = toHttpError(refused);
    expect(answer?.statusCode).toBe(503);
    expect(answer?.headers).toEqual({ 'retry-after': '5' });
    expect(answer?.message).toMatch(/too many requests are waiting for the university/);
    // A place comes free: the call in line goes.
    slow.releaseAll();
    await Promise.all(first);
    await waitUntil(() => slow.calls.length === 3, 'the call in line to go');
    slow.releaseAll();
    expect(await inLine).toEqual([]);
  });

  it('refuses a call still in line at its deadline, which it started when the call was made', async () => {
    const slow = slowClient();
    const bounded = boundedClient(slow.client, limits(1, 4, 200));
    const holding = bounded.searchEmployees('ив');
    const started = performance.now();
    const refused = await bounded.searchEmployees('пе').catch((error: unknown) => error);
    const waited = performance.now() - started;
    expect(refused).toBeInstanceOf(UpstreamBusyError);
    expect(waited).toBeGreaterThanOrEqual(190);
    expect(waited).toBeLessThan(1_000);
    expect(slow.calls).toHaveLength(1);
    // The call that ran carries the deadline down, to bound its budget wait and exchange too.
    const deadline = slow.calls[0]?.options?.deadline;
    expect(deadline?.ms).toBe(200);
    expect(deadline?.signal.aborted).toBe(true);
    slow.releaseAll();
    await holding;
  });

  it('refuses a call that gets its place too close to its deadline, without sending it', async () => {
    const slow = slowClient();
    const bounded = boundedClient(slow.client, { ...limits(1, 1, 300), minCallMs: 100 });
    const holding = bounded.searchEmployees('ив');
    const late = bounded.searchEmployees('пе').catch((error: unknown) => error);
    setTimeout(slow.releaseAll, 250);
    await holding;
    expect(await late).toBeInstanceOf(UpstreamBusyError);
    expect(slow.calls).toHaveLength(1);
  });

  it('keeps credential checks apart from searches: a full search lane never holds a sign-up', async () => {
    const slow = slowClient();
    const bounded = boundedClient(slow.client, limits(2, 2));
    const searches = Array.from({ length: 8 }, (_, i) => bounded.searchEmployees(`поиск ${i}`).catch((e) => e));
    const me = bounded.me('credential', undefined);
    await waitUntil(() => slow.calls.some((call) => call.what === 'me'), 'the sign-up to reach the university');
    expect(slow.calls.map((call) => call.what)).toEqual(['search', 'search', 'me']);
    slow.releaseAll();
    expect(await me).toMatchObject({ id: 1 });
    const refused = (await Promise.all(searches.slice(4))).filter((answer) => answer instanceof UpstreamBusyError);
    expect(refused).toHaveLength(4);
    await waitUntil(() => slow.calls.length === 5, 'the searches in line to go');
    slow.releaseAll();
    await Promise.all(searches);
  });

  it('uses a deadline the caller started, for calls that share one', async () => {
    const slow = slowClient();
    const bounded = boundedClient(slow.client, limits(1, 1));
    const deadline = startDeadline(3_000);
    const call = bounded.me('credential', undefined, { deadline });
    await waitUntil(() => slow.calls.length === 1, 'the call');
    expect(slow.calls[0]?.options?.deadline).toBe(deadline);
    slow.releaseAll();
    await call;
  });

  it('frees its place when a call fails', async () => {
    const failing = {
      searchEmployees: async () => {
        throw new Error('down');
      },
    } as unknown as UniversityClient;
    const bounded = boundedClient(failing, limits(1, 0));
    await expect(bounded.searchEmployees('ив')).rejects.toThrow('down');
    await expect(bounded.searchEmployees('ив')).rejects.toThrow('down');
  });
});
