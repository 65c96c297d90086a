import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import {
  createUniversityClient,
  type UniversityClient,
  type UniversityClientOptions,
} from '../../src/upstream/client.ts';
import {
  UpstreamError,
  UpstreamHttpError,
  UpstreamNetworkError,
  UpstreamNotFoundError,
  UpstreamProtocolError,
  UpstreamRateLimitError,
  UpstreamTimeoutError,
} from '../../src/upstream/errors.ts';
import { sleepSpy } from './local-server.ts';
import { type SimControl, simControl } from './sim-control.ts';

type Simulator = Awaited<ReturnType<typeof startSimulator>>;

let sim: Simulator;
let control: SimControl;
let groupId: number;
const clients: UniversityClient[] = [];

function client(overrides: Partial<UniversityClientOptions> = {}): UniversityClient {
  const created = createUniversityClient({
    baseUrl: sim.url,
    logger: silentLogger(),
    timeouts: { headersMs: 300, bodyMs: 300 },
    retry: { attempts: 3, baseDelayMs: 5, maxDelayMs: 20 },
    ...overrides,
  });
  clients.push(created);
  return created;
}

async function failure(run: Promise<unknown>): Promise<UpstreamError> {
  const error = await run.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(UpstreamError);
  return error as UpstreamError;
}

const groupRequests = async () => (await control.stats()).byEndpoint.groupSchedule ?? 0;

beforeAll(async () => {
  const small = { groups: 30, employees: 30, users: 5 };
  sim = await startSimulator({ port: 0, seed: 1, referenceDate: new Date('2025-10-01T00:00:00Z'), ...small });
  control = simControl(sim.url);
  groupId = (await control.groups())[0]?.id ?? 0;
});
beforeEach(async () => {
  await control.clearFaults();
  await control.clearStats();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
afterAll(() => sim.close());

describe('retried faults', () => {
  it('retries 500 twice and then succeeds', async () => {
    await control.fault({ endpoint: 'groupSchedule', kind: 'status', status: 500, times: 2 });
    const { sleep, delays } = sleepSpy();
    const result = await client({ sleep }).groupSchedule(groupId);
    expect(result.entries.length).toBeGreaterThan(0);
    expect(await groupRequests()).toBe(3);
    expect(delays).toHaveLength(2);
    expect(delays.every((d) => d >= 0 && d <= 20)).toBe(true);
  });

  it('gives up on a persistent 503 after `attempts` tries, with the upstream text', async () => {
    await control.fault({ endpoint: 'groupSchedule', kind: 'status', status: 503, error: 'Плановые работы' });
    const error = await failure(client({ retry: { attempts: 4, baseDelayMs: 1 } }).groupSchedule(groupId));
    expect(error).toBeInstanceOf(UpstreamHttpError);
    expect(error).toMatchObject({ status: 503, attempts: 4, retryable: true, upstreamMessage: 'Плановые работы' });
    expect(error.message).toContain('Плановые работы');
    expect(await groupRequests()).toBe(4);
  });

  it('honours Retry-After on 429 and then succeeds', async () => {
    await control.fault({ endpoint: 'groupSchedule', kind: 'rate-limit', retryAfterSeconds: 2, times: 1 });
    const { sleep, delays } = sleepSpy();
    await expect(client({ sleep }).groupSchedule(groupId)).resolves.toMatchObject({ problems: [] });
    expect(delays).toEqual([2000]);
    expect(await groupRequests()).toBe(2);
  });

  it('throws a long Retry-After at once so a queue can reschedule', async () => {
    await control.fault({ endpoint: 'groupSchedule', kind: 'rate-limit', retryAfterSeconds: 120 });
    const { sleep, delays } = sleepSpy();
    const error = await failure(client({ sleep }).groupSchedule(groupId));
    expect(error).toBeInstanceOf(UpstreamRateLimitError);
    expect(error).toMatchObject({ retryAfterMs: 120_000, attempts: 1, retryable: true });
    expect(delays).toEqual([]);
    expect(await groupRequests()).toBe(1);
  });

  it('maps a silent server to a headers timeout and retries it', async () => {
    await control.fault({ endpoint: 'groupSchedule', kind: 'timeout', times: 1 });
    await expect(client().groupSchedule(groupId)).resolves.toMatchObject({ problems: [] });
    expect(await groupRequests()).toBe(2);

    await control.fault({ endpoint: 'groupSchedule', kind: 'timeout' });
    const error = await failure(client({ retry: { attempts: 2, baseDelayMs: 1 } }).groupSchedule(groupId));
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    expect(error).toMatchObject({ phase: 'headers', attempts: 2 });
  });

  it('maps latency beyond headersMs to a timeout, and within it to success', async () => {
    await control.fault({ endpoint: 'groupSchedule', kind: 'latency', latencyMs: 100, times: 1 });
    await expect(client().groupSchedule(groupId)).resolves.toMatchObject({ problems: [] });
    // Wide margins both ways: the first try waits 2 s against a 400 ms limit, the retry has no latency.
    await control.fault({ endpoint: 'groupSchedule', kind: 'latency', latencyMs: 2000, times: 1 });
    await expect(client({ timeouts: { headersMs: 400 } }).groupSchedule(groupId)).resolves.toMatchObject({
      problems: [],
    });
    expect(await groupRequests()).toBe(3);
  });

  it('maps a truncated body to a retried network or body-timeout error', async () => {
    await control.fault({ endpoint: 'groupSchedule', kind: 'truncated', times: 1 });
    await expect(client().groupSchedule(groupId)).resolves.toMatchObject({ problems: [] });
    expect(await groupRequests()).toBe(2);

    await control.fault({ endpoint: 'groupSchedule', kind: 'truncated' });
    const error = await failure(client({ retry: { attempts: 2, baseDelayMs: 1 } }).groupSchedule(groupId));
    expect(error.retryable).toBe(true);
    expect(error.attempts).toBe(2);
    const isBodyTimeout = error instanceof UpstreamTimeoutError && error.phase === 'body';
    expect(error instanceof UpstreamNetworkError || isBodyTimeout).toBe(true);
  });

  it('maps a reset connection to UpstreamNetworkError and retries it', async () => {
    await control.fault({ endpoint: 'groupSchedule', kind: 'reset' });
    const error = await failure(client().groupSchedule(groupId));
    expect(error).toBeInstanceOf(UpstreamNetworkError);
    expect((error as UpstreamNetworkError).code).toMatch(/^(ECONNRESET|UND_ERR_SOCKET|EPIPE)$/);
    expect(error.cause).toBeDefined();
    expect(await groupRequests()).toBe(3);
  });
});

describe('faults that are not retried', () => {
  it('maps malformed JSON to bad-json with one request', async () => {
    await control.fault({ endpoint: 'groupSchedule', kind: 'malformed-json' });
    const error = await failure(client().groupSchedule(groupId));
    expect(error).toBeInstanceOf(UpstreamProtocolError);
    expect(error).toMatchObject({ reason: 'bad-json', retryable: false });
    expect(await groupRequests()).toBe(1);
  });

  it('does not retry a 4xx other than 429', async () => {
    await control.fault({ endpoint: 'groupSchedule', kind: 'status', status: 422, error: 'Неверный запрос' });
    const error = await failure(client().groupSchedule(groupId));
    expect(error).toMatchObject({ name: 'UpstreamHttpError', status: 422, upstreamMessage: 'Неверный запрос' });
    expect(await groupRequests()).toBe(1);
  });

  it('reads a 400 of a timetable endpoint as an unknown id, once, and keeps 400 of the search as it is', async () => {
    await control.fault({ endpoint: '*', kind: 'status', status: 400, error: 'Некорректный идентификатор' });
    const byId = await failure(client().groupSchedule(groupId));
    expect(byId).toBeInstanceOf(UpstreamNotFoundError);
    expect(byId).toMatchObject({ status: 400, retryable: false, upstreamMessage: 'Некорректный идентификатор' });
    expect(await groupRequests()).toBe(1);
    expect(await failure(client().employeeSchedule(1))).toBeInstanceOf(UpstreamNotFoundError);
    const search = await failure(client().searchEmployees('Иванов'));
    expect(search).toMatchObject({ name: 'UpstreamHttpError', status: 400 });
    expect(search).not.toBeInstanceOf(UpstreamNotFoundError);
  });

  it('targets faults by endpoint: employee search is unaffected by a groupSchedule fault', async () => {
    await control.fault({ endpoint: 'groupSchedule', kind: 'status', status: 500 });
    await expect(client().searchEmployees('Zzyzx-nobody-0000')).resolves.toEqual([]);
  });
});
