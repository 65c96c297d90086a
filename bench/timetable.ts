/**
 * Benchmark of the timetable engine (the goal: "expand every entry … and render byte-stable ICS").
 *
 * Workload: every group of the bundled simulator (1,500 groups, seed 1), fetched once over loopback and
 * parsed before timing starts. Measured in one process, interleaved rounds:
 *   pipeline  = expand(entries) → renderIcs, per group, as a publication renders (events without an alarm are
 *               written by the engine's own writer, byte for byte what ical-generator writes)
 *   baseline  = ical-generator rendering the same prebuilt event data alone (its own toString())
 *   cold      = the pipeline as a process's first refresh runs it: every zone cache cleared before each group
 *               (a fresh `ZonedTimes` and no zone offset table), so each group builds its zone's table again
 * Reported: events per second of each (median of the rounds) and the ratios of the pipeline, warm and cold,
 * to the baseline. Target: both ≥ 0.8×.
 *
 * Both sides end with the feed as UTF-8 bytes (`Buffer.byteLength`), which is what a feed is for (stored,
 * hashed for its ETag, served). Without it V8 leaves ical-generator's output as an unflattened rope that
 * nobody has paid to build yet, and whichever side first reads the text pays for both.
 */
import { performance } from 'node:perf_hooks';
import ical, { type ICalEventData } from 'ical-generator';
import { type CalendarMeta, renderIcs, toEventData } from '../src/feeds/render-ics.ts';
import { silentLogger } from '../src/logger.ts';
import { startSimulator } from '../src/simulator/index.ts';
import { expand } from '../src/timetable/expand.ts';
import { vtimezone } from '../src/timetable/vtimezone.ts';
import { ZoneOffsets } from '../src/timetable/zone-offsets.ts';
import { ZonedTimes } from '../src/timetable/zoned-time.ts';
import { createUniversityClient } from '../src/upstream/client.ts';
import type { TimetableEntry } from '../src/upstream/schemas.ts';

const TIMEZONE = 'Europe/Moscow';
const ROUNDS = 5;

async function loadWorkload(): Promise<TimetableEntry[][]> {
  const simulator = await startSimulator({ port: 0, seed: 1, referenceDate: new Date('2025-10-01T00:00:00Z') });
  const client = createUniversityClient({ baseUrl: simulator.url, logger: silentLogger() });
  try {
    const { groups } = (await (await fetch(`${simulator.url}/_sim/groups`)).json()) as { groups: { id: number }[] };
    const timetables: TimetableEntry[][] = [];
    for (const group of groups) timetables.push((await client.groupSchedule(group.id)).entries);
    return timetables;
  } finally {
    await client.close();
    await simulator.close();
  }
}

function meta(index: number): CalendarMeta {
  return { name: `group ${index}`, timezone: TIMEZONE, refreshIntervalMs: 1_800_000, stamp: Date.UTC(2025, 8, 1) };
}

/** The same feed as ical-generator writes it on its own: its calendar, its property order, its toString(). */
function icalGeneratorAlone(events: readonly ICalEventData[], meta: CalendarMeta): string {
  const calendar = ical({
    name: meta.name,
    prodId: '//timetable-sync//timetable-sync//RU',
    ttl: meta.refreshIntervalMs / 1000,
    timezone: { name: null, generator: vtimezone },
  });
  calendar.x('X-WR-TIMEZONE', meta.timezone);
  for (const event of events) calendar.createEvent(event);
  return calendar.toString();
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** Runs the timetable benchmark and returns its figures. */
export async function runTimetableBenchmark(): Promise<Record<string, number | string>> {
  const timetables = await loadWorkload();
  const zonedTimes = new ZonedTimes(TIMEZONE);
  const prebuilt = timetables.map((entries, index) =>
    toEventData(expand(entries, { timezone: TIMEZONE }, zonedTimes).occurrences, meta(index), zonedTimes),
  );
  const events = prebuilt.reduce((sum, list) => sum + list.length, 0);
  let sink = 0;
  const pipelineRates: number[] = [];
  const coldRates: number[] = [];
  const baselineRates: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    // Interleaved group by group, so that drift in machine speed (other load, GC debt) hits both sides alike.
    let pipelineMs = 0;
    let coldMs = 0;
    let baselineMs = 0;
    timetables.forEach((entries, index) => {
      // As a worker runs it: one ZonedTimes per zone for the whole process.
      let started = performance.now();
      const { occurrences } = expand(entries, { timezone: TIMEZONE }, zonedTimes);
      sink += Buffer.byteLength(renderIcs(occurrences, meta(index), zonedTimes));
      pipelineMs += performance.now() - started;
      // A cold process (first refresh after a start): no zone table and a fresh ZonedTimes, so the zone's
      // offsets are read from Intl again and every conversion is computed.
      started = performance.now();
      ZoneOffsets.clearTables();
      const fresh = new ZonedTimes(TIMEZONE);
      sink += Buffer.byteLength(
        renderIcs(expand(entries, { timezone: TIMEZONE }, fresh).occurrences, meta(index), fresh),
      );
      coldMs += performance.now() - started;
      started = performance.now();
      sink += Buffer.byteLength(icalGeneratorAlone(prebuilt[index] ?? [], meta(index)));
      baselineMs += performance.now() - started;
    });
    pipelineRates.push(events / (pipelineMs / 1000));
    coldRates.push(events / (coldMs / 1000));
    baselineRates.push(events / (baselineMs / 1000));
  }
  const cold = median(coldRates);
  const pipeline = median(pipelineRates);
  const baseline = median(baselineRates);
  return {
    groups: timetables.length,
    entries: timetables.reduce((sum, list) => sum + list.length, 0),
    events,
    rounds: ROUNDS,
    'pipeline events/s': Math.round(pipeline),
    'ical-generator alone events/s': Math.round(baseline),
    'ratio pipeline/ical-generator': Number((pipeline / baseline).toFixed(3)),
    'pipeline with fresh zone cache events/s': Math.round(cold),
    'ratio fresh-cache pipeline/ical-generator': Number((cold / baseline).toFixed(3)),
    'target ratio': '≥ 0.8',
    'output bytes (checksum)': sink,
  };
}
