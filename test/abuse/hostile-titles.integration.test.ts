/**
 * Abuse figures for subscriber variants (issue 12, item 6): a big timetable with long upstream fields, hostile
 * title templates asked for in parallel, and a health check polled meanwhile. Bounded and loopback only.
 * Prints `{figure, value, unit}` lines for the closing note and README.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { variantCapBytes } from '../../src/http/variant-render.ts';
import { TITLE_PLACEHOLDERS } from '../../src/timetable/event-text.ts';
import { startTestApp, storeTimetable, type TestApp } from '../http/helpers.ts';
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

let t: TestApp;
let base: string;

beforeAll(async () => {
  t = await startTestApp();
  await storeTimetable(t.ctx, 'group:7000', ENTRIES);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
});
afterAll(() => t.close());

function figure(name: string, value: number, unit: string): void {
  console.log(JSON.stringify({ figure: name, value: Math.round(value * 10) / 10, unit }));
}

it('keeps hostile variants bounded and /healthz answering', { timeout: 120_000 }, async () => {
  const plain = await fetch(`${base}/feeds/groups/7000.ics`);
  const plainBytes = (await plain.arrayBuffer()).byteLength;
  const cap = variantCapBytes({ body: Buffer.alloc(plainBytes) });

  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
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
  lag.disable();

  const worstHealth = Math.max(...healthMs);
  figure('default feed of the hostile timetable', plainBytes, 'bytes');
  figure('largest hostile variant answer', largest, 'bytes');
  figure('variant byte cap', cap, 'bytes');
  figure('variants served 200', statuses.get(200) ?? 0, 'requests');
  figure('variants refused 503 (render bound)', statuses.get(503) ?? 0, 'requests');
  figure('worst /healthz latency during the attack', worstHealth, 'ms');
  // One process holds both the app and its clients here, so this is an upper bound of the server's own lag.
  figure('event-loop delay p99 during the attack (app and clients)', lag.percentile(99) / 1e6, 'ms');
  figure('event-loop delay max during the attack (app and clients)', lag.max / 1e6, 'ms');

  expect(statuses.get(200)).toBeGreaterThan(0);
  expect([...statuses.keys()].every((status) => status === 200 || status === 503)).toBe(true);
  expect(largest).toBeLessThanOrEqual(cap);
  // Before the limits, one such title made an 80 MB answer and stalled /healthz for 8 s.
  expect(largest).toBeLessThan(plainBytes * 2);
  expect(worstHealth).toBeLessThan(2_000);
});
