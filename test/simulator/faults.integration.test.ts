import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/index.ts';
import { until } from '../../testkit/poll.ts';
import { call, start } from './helpers.ts';

describe('simulator fault injection', () => {
  let sim: RunningSimulator;
  let groupPath: string;

  const addFault = async (rule: Record<string, unknown>): Promise<string> => {
    const { status, body } = await call<{ id: string }>(sim.url, '/_sim/faults', { method: 'POST', body: rule });
    expect(status).toBe(201);
    expect(typeof body.id).toBe('string');
    return body.id;
  };

  beforeAll(async () => {
    sim = await start({ groups: 40, employees: 80, users: 5 });
    const groups = (await call<{ groups: { id: number }[] }>(sim.url, '/_sim/groups')).body.groups;
    groupPath = `/groups/${groups[0]?.id}/schedule`;
  });

  afterEach(async () => {
    expect((await call(sim.url, '/_sim/faults', { method: 'DELETE' })).status).toBe(204);
  });

  afterAll(async () => {
    await sim.close();
  });

  it('adds latency, summing every matching latency rule', async () => {
    // Lower bounds are exact (the delays are awaited); the one upper bound has a 500 ms margin for slow CI.
    await addFault({ kind: 'latency', latencyMs: 200 });
    await addFault({ endpoint: 'groupSchedule', kind: 'latency', latencyMs: 600 });
    let started = performance.now();
    expect((await call(sim.url, groupPath)).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(790);
    started = performance.now();
    await call(sim.url, '/employees?q=ов');
    const search = performance.now() - started;
    expect(search).toBeGreaterThanOrEqual(190);
    expect(search).toBeLessThan(700);
  });

  it('answers a chosen status with success:false and a default or given error', async () => {
    await addFault({ kind: 'status', times: 1 });
    await addFault({ kind: 'status', status: 503, error: 'Технические работы', times: 1 });
    const first = await call<{ success: boolean; error: string }>(sim.url, groupPath);
    expect(first.status).toBe(500);
    expect(first.body).toEqual({ success: false, error: expect.any(String) });
    expect(first.body.error.length).toBeGreaterThan(0);
    const second = await call(sim.url, groupPath);
    expect(second).toMatchObject({ status: 503, body: { success: false, error: 'Технические работы' } });
    expect((await call(sim.url, groupPath)).status).toBe(200);
  });

  it('rate-limits with 429 and Retry-After', async () => {
    await addFault({ kind: 'rate-limit', retryAfterSeconds: 7 });
    const { status, body, headers } = await call<{ error: string }>(sim.url, groupPath);
    expect(status).toBe(429);
    expect(headers.get('retry-after')).toBe('7');
    expect(typeof body.error).toBe('string');
  });

  it('holds the request forever on timeout until the client gives up', async () => {
    await addFault({ kind: 'timeout', times: 1 });
    const started = performance.now();
    const error: unknown = await fetch(`${sim.url}${groupPath}`, { signal: AbortSignal.timeout(300) }).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe('TimeoutError');
    expect(performance.now() - started).toBeGreaterThanOrEqual(280);
    expect((await call(sim.url, groupPath)).status).toBe(200);
  });

  it('sends malformed JSON with status 200', async () => {
    await addFault({ endpoint: 'groupSchedule', kind: 'malformed-json' });
    const response = await fetch(`${sim.url}${groupPath}`);
    expect(response.status).toBe(200);
    await expect(response.json()).rejects.toThrow(SyntaxError);
  });

  it('answers 200 with success:false when unsuccessful', async () => {
    await addFault({ kind: 'unsuccessful', error: 'Сбой выгрузки' });
    expect(await call(sim.url, groupPath)).toMatchObject({
      status: 200,
      body: { success: false, error: 'Сбой выгрузки' },
    });
  });

  it('truncates the body: full Content-Length, half the bytes, then the connection drops', async () => {
    const full = await (await fetch(`${sim.url}${groupPath}`)).arrayBuffer();
    await addFault({ kind: 'truncated' });
    const response = await fetch(`${sim.url}${groupPath}`);
    expect(response.status).toBe(200);
    expect(Number(response.headers.get('content-length'))).toBe(full.byteLength);
    await expect(response.arrayBuffer()).rejects.toThrow();
  });

  it('resets the connection without answering', async () => {
    await addFault({ kind: 'reset' });
    await expect(fetch(`${sim.url}${groupPath}`)).rejects.toThrow(TypeError);
  });

  it('fails about half the requests with probability 0.5', async () => {
    await addFault({ endpoint: 'groupSchedule', kind: 'status', status: 500, probability: 0.5 });
    const statuses: number[] = [];
    for (let i = 0; i < 200; i++)
      statuses.push(
        await fetch(`${sim.url}${groupPath}`).then(async (response) => {
          await response.arrayBuffer();
          return response.status;
        }),
      );
    const failures = statuses.filter((status) => status === 500).length;
    expect(statuses.filter((status) => status !== 500 && status !== 200)).toEqual([]);
    expect(failures).toBeGreaterThan(60);
    expect(failures).toBeLessThan(140);
  });

  it('applies a rule only to its endpoint, `times` times, then drops it; control requests are never faulted', async () => {
    await addFault({ endpoint: 'employeeSearch', kind: 'status', status: 502, times: 2 });
    expect((await call(sim.url, groupPath)).status).toBe(200);
    expect((await call(sim.url, '/employees?q=ов')).status).toBe(502);
    expect((await call(sim.url, '/employees?q=ов')).status).toBe(502);
    expect((await call(sim.url, '/employees?q=ов')).status).toBe(200);
    await addFault({ kind: 'reset' });
    expect((await call(sim.url, '/_sim/groups')).status).toBe(200);
    const listed = await call<{ faults: { kind: string }[] }>(sim.url, '/_sim/faults');
    expect(listed.body.faults.map((rule) => rule.kind)).toEqual(['reset']);
  });

  it('lets the first matching failure rule decide, and removes a single rule by id', async () => {
    const first = await addFault({ endpoint: 'groupSchedule', kind: 'status', status: 503 });
    await addFault({ kind: 'status', status: 500 });
    expect((await call(sim.url, groupPath)).status).toBe(503);
    expect((await call(sim.url, '/employees?q=ов')).status).toBe(500);
    expect((await call(sim.url, `/_sim/faults/${first}`, { method: 'DELETE' })).status).toBe(204);
    expect((await call(sim.url, groupPath)).status).toBe(500);
  });

  it('rejects a bad fault body with 400 naming the field', async () => {
    const cases: [Record<string, unknown> | string, string][] = [
      [{ kind: 'explode' }, 'kind'],
      [{ kind: 'status', probability: 2 }, 'probability'],
      [{ kind: 'status', endpoint: 'groups' }, 'endpoint'],
      [{ kind: 'status', times: 0 }, 'times'],
      [{ kind: 'status', probabilty: 0.5 }, 'probabilty'],
      [{ kind: 'latency' }, 'latencyMs'],
      [{}, 'kind'],
    ];
    for (const [body, field] of cases) {
      const answer = await call<{ error: string }>(sim.url, '/_sim/faults', { method: 'POST', body });
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error, JSON.stringify(body)).toContain(field);
    }
    expect((await call(sim.url, '/_sim/faults', { method: 'POST', body: '{oops' })).status).toBe(400);
  });
});

describe('simulator shutdown', () => {
  it('closes promptly while a request is held by a timeout fault', async () => {
    const sim = await start({ groups: 10, employees: 20, users: 1 });
    const groups = (await call<{ groups: { id: number }[] }>(sim.url, '/_sim/groups')).body.groups;
    await call(sim.url, '/_sim/faults', { method: 'POST', body: { kind: 'timeout' } });
    const pending = fetch(`${sim.url}/groups/${groups[0]?.id}/schedule`).then(
      () => 'answered',
      () => 'failed',
    );
    const held = await until(
      async () => (await call<{ requests: { total: number } }>(sim.url, '/_sim/stats')).body.requests.total,
      (total) => total === 1,
    );
    expect(held).toBe(1);
    // The fault holds the request until its client gives up (minutes): a close that waited for it would not
    // end within the bound, which leaves room for a machine loaded by other work.
    const started = performance.now();
    await sim.close();
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(await pending).toBe('failed');
    await expect(fetch(`${sim.url}/_sim/groups`)).rejects.toThrow();
  });
});
