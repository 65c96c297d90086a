/**
 * Abuse figures for subscriber variants: a big timetable with long upstream fields, hostile
 * title templates asked for in parallel, and a health check polled meanwhile. Bounded and loopback only.
 * The service runs in a child process (`timetable-sync api`): a poller in the app's own process would be held
 * up by the very stall it measures. The server's event-loop delay comes from its own `/metrics`.
 * Prints `{figure, value, unit}` lines, which docs/operations.md quotes.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { freePort } from '../../src/runtime/embedded-redis.ts';
import { variantCapBytes } from '../../src/serving/variant-render.ts';
import { TITLE_PLACEHOLDERS } from '../../src/timetable/event-text.ts';
import { storeTimetable } from '../http/helpers.ts';
import { exited, startCli, waitForOutput } from '../support/cli.ts';
import { TEST_ADMIN_TOKEN, TEST_SECRET_KEY, testContext, uniquePrefix } from '../support/service.ts';
import { entry } from '../timetable/fixtures.ts';

/** Long upstream fields: each title placeholder over them once was a 500-character copy per event. */
const LONG = 'Очень длинное поле '.repeat(25);
const ENTRIES = Array.from({ length: 60 }, (_, i) =>
  entry({
    id: i + 1,
    subjectName: `Предмет ${i} ${LONG}`,
    kind: i % 2 === 0 ? 'лекция' : 'практика',
    note: LONG,
    teacher: { id: i, lastName: LONG, firstName: 'Иван', middleName: 'Иванович' },
  }),
);
/** Distinct hostile templates: eight long placeholders each, so that no two share a render. */
const TEMPLATES = Array.from({ length: 24 }, (_, i) => {
  const names = Array.from({ length: 8 }, (_, j) => TITLE_PLACEHOLDERS[(i + j) % TITLE_PLACEHOLDERS.length]);
  return `${i} ${names.map((name) => `{${name}}`).join(' ')}`;
});
const ROUNDS_PARALLEL = 8;

let store: { context: ServiceContext; close: () => Promise<void> };
let service: ChildProcess;
let base: string;

beforeAll(async () => {
  const prefix = uniquePrefix('hostile');
  // The timetable is written from here, into the Redis keys the service's process reads.
  store = await testContext({ REDIS_PREFIX: prefix });
  await storeTimetable(store.context, 'group:7000', ENTRIES);
  const port = await freePort();
  service = startCli(['api'], {
    env: {
      REDIS_URL: inject('redisUrl'),
      REDIS_PREFIX: prefix,
      // Never called: the timetable is stored already.
      UNIVERSITY_API_URL: 'http://127.0.0.1:9/',
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      SECRET_KEY: TEST_SECRET_KEY,
      LOG_LEVEL: 'warn',
      PORT: String(port),
    },
  });
  await waitForOutput(service, /is running on/);
  base = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  service?.kill('SIGTERM');
  if (service) await exited(service);
  await store?.close();
});

/** The service's event-loop delay since the previous scrape (prom-client resets its histogram on each). */
async function serverLoopDelayMs(): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const seconds = (name: string) => Number(new RegExp(`^timetable_${name} (\\S+)$`, 'm').exec(text)?.[1]);
  return {
    p99: seconds('nodejs_eventloop_lag_p99_seconds') * 1000,
    max: seconds('nodejs_eventloop_lag_max_seconds') * 1000,
  };
}

function figure(name: string, value: number, unit: string): void {
  console.log(JSON.stringify({ figure: name, value: Math.round(value * 10) / 10, unit }));
}

it('keeps hostile variants bounded and /healthz answering', { timeout: 120_000 }, async () => {
  const plain = await fetch(`${base}/feeds/groups/7000.ics`);
  const plainBytes = (await plain.arrayBuffer()).byteLength;
  const cap = variantCapBytes(plainBytes);

  await serverLoopDelayMs();
  let attacking = true;
  const healthMs: number[] = [];
  const health = (async () => {
    while (attacking) {
      const started = performance.now();
      const response = await fetch(`${base}/healthz`);
      await response.arrayBuffer();
      healthMs.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();

  let largest = 0;
  const statuses = new Map<number, number>();
  for (let i = 0; i < TEMPLATES.length; i += ROUNDS_PARALLEL) {
    const batch = TEMPLATES.slice(i, i + ROUNDS_PARALLEL).map(async (template) => {
      const response = await fetch(`${base}/feeds/groups/7000.ics?title=${encodeURIComponent(template)}`);
      const bytes = (await response.arrayBuffer()).byteLength;
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      if (response.status === 200) largest = Math.max(largest, bytes);
    });
    await Promise.all(batch);
  }
  attacking = false;
  await health;
  const lag = await serverLoopDelayMs();

  const worstHealth = Math.max(...healthMs);
  figure('default feed of the hostile timetable', plainBytes, 'bytes');
  figure('largest hostile variant answer', largest, 'bytes');
  figure('variant byte cap', cap, 'bytes');
  figure('variants served 200', statuses.get(200) ?? 0, 'requests');
  figure('variants refused 503 (render bound)', statuses.get(503) ?? 0, 'requests');
  figure('worst /healthz latency during the attack', worstHealth, 'ms');
  // Measured in the service's own process; /healthz from this one, which no render of the service holds up.
  figure('event-loop delay p99 of the service during the attack', lag.p99, 'ms');
  figure('event-loop delay max of the service during the attack', lag.max, 'ms');

  expect(statuses.get(200)).toBeGreaterThan(0);
  expect([...statuses.keys()].every((status) => status === 200 || status === 503)).toBe(true);
  expect(largest).toBeLessThanOrEqual(cap);
  // Before the limits, one such title made an 80 MB answer and stalled /healthz for 8 s on an idle machine (a
  // stall that only grows on a busy one). Bounded renders leave /healthz well under 1 s when idle; 2.3 s was
  // seen with both cores held by busy loops and a second suite, so the bound leaves room for that load.
  expect(largest).toBeLessThan(plainBytes * 2);
  expect(worstHealth).toBeLessThan(5_000);
  expect(lag.max).toBeGreaterThan(0);
});
