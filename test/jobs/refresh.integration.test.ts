import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { renderVariant } from '../../src/feeds/build-feed.ts';
import type { RefreshJobResult } from '../../src/jobs/contract.ts';
import { markFeedStale } from '../../src/jobs/publish-timetable.ts';
import type { TimetableEntry } from '../../src/timetable/types.ts';
import { icsOf } from '../support/stored-feed.ts';
import { type Pipeline, readEvents, startPipeline } from './helpers.ts';

let pipeline: Pipeline;
let groupId: number;
let entries: TimetableEntry[];

beforeAll(async () => {
  pipeline = await startPipeline({ UPSTREAM_TIMEOUT: '1s' });
  const groups = await pipeline.sim.groups();
  const group = groups.find((candidate) => candidate.entryCount >= 8);
  if (!group) throw new Error('no group with enough entries');
  groupId = group.id;
  entries = (await pipeline.ctx.upstream.groupSchedule(groupId)).entries;
});
afterEach(async () => {
  await pipeline.sim.clearFaults();
});
afterAll(async () => {
  await pipeline?.close();
});

async function feedText(source: string): Promise<string> {
  const feed = await pipeline.ctx.feeds.get(source);
  if (!feed) throw new Error(`no feed for ${source}`);
  return icsOf(feed);
}

describe('refresh pipeline', () => {
  it('publishes a feed on the first refresh and writes nothing when the timetable is unchanged', async () => {
    const source = `group:${groupId}`;
    const first = await pipeline.refresh(source);
    expect(first.state).toBe('completed');
    expect((first.result as RefreshJobResult).outcome).toBe('published');
    const feed = await pipeline.ctx.feeds.get(source);
    expect(feed?.etag).toMatch(/^".+"$/);
    const events = readEvents(icsOf(feed));
    expect(events.length).toBe((first.result as RefreshJobResult).occurrences);
    expect(events.length).toBeGreaterThan(10);

    const second = await pipeline.refresh(source);
    expect((second.result as RefreshJobResult).outcome).toBe('unchanged');
    expect((await pipeline.ctx.feeds.get(source))?.etag).toBe(feed?.etag);
    const state = await pipeline.ctx.registry.get(source);
    expect(state).toMatchObject({ status: 'ok', consecutiveFailures: 0 });
  });

  it('brings a moved class into the feed after a resync, with a higher SEQUENCE and a change record', async () => {
    const source = `group:${groupId}`;
    await pipeline.refresh(source);
    const entry = entries.find(
      (candidate) =>
        candidate.finishDate > '2025-10-15' && candidate.startDate < '2025-09-20' && candidate.beginTime !== '18:00',
    );
    if (!entry) throw new Error('no entry with past and future classes');
    const before = readEvents(await feedText(source)).filter((event) => event.uid.startsWith(`${entry.id}-`));
    await pipeline.sim.raw(`/_sim/entries/${entry.id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ begin_time_schedule: '18:00', end_time_schedule: '19:30' }),
    });

    const job = await pipeline.refresh(source);
    expect((job.result as RefreshJobResult).outcome).toBe('published');
    const after = readEvents(await feedText(source)).filter((event) => event.uid.startsWith(`${entry.id}-`));
    expect(after.map((event) => event.uid)).toEqual(before.map((event) => event.uid));
    // The past is history: classes that took place before the refresh stay as published.
    const now = new Date(pipeline.clock.now).toISOString();
    const ended = before.filter((event) => event.end <= now);
    expect(ended.length).toBeGreaterThan(0);
    for (const [index, event] of after.entries()) {
      const previous = before[index];
      if (previous && previous.end <= now) {
        expect(event).toEqual(previous);
        continue;
      }
      expect(event.start).not.toBe(previous?.start);
      expect(event.sequence).toBe((previous?.sequence ?? 0) + 1);
    }
    const [change] = await pipeline.ctx.snapshots.changes(source);
    expect(change?.counts.moved).toBe(before.length - ended.length);
    expect(change?.moved[0]?.after.begin).toBe('18:00');
  });

  it('keeps a removed future class as STATUS:CANCELLED', async () => {
    const source = `group:${groupId}`;
    await pipeline.refresh(source);
    const entry = entries.find(
      (candidate) => candidate.finishDate > '2025-11-01' && candidate.startDate < '2025-09-20',
    );
    if (!entry) throw new Error('no entry with past and future classes');
    const before = readEvents(await feedText(source)).filter((event) => event.uid.startsWith(`${entry.id}-`));
    await pipeline.sim.deleteEntry(entry.id);
    const job = await pipeline.refresh(source);
    expect((job.result as RefreshJobResult).outcome).toBe('published');
    const now = new Date(pipeline.clock.now).toISOString();
    const events = readEvents(await feedText(source)).filter((event) => event.uid.startsWith(`${entry.id}-`));
    const future = events.filter((event) => event.end > now);
    expect(future.length).toBeGreaterThan(0);
    expect(future.every((event) => event.status === 'CANCELLED')).toBe(true);
    // Classes that took place stay in the feed as they were published.
    const ended = events.filter((event) => event.end <= now);
    expect(ended).toEqual(before.filter((event) => event.end <= now));
    expect(ended.every((event) => event.status === 'CONFIRMED')).toBe(true);
    // Several calendar apps ignore STATUS: the title says it too, once, also in a subscriber's titles.
    expect(future.map((event) => event.summary)).toEqual(
      future.map(() => `Отменено: ${entry.subjectName} (${entry.kind})`),
    );
    const { snapshot, published } = await pipeline.ctx.snapshots.load(source);
    if (!snapshot || !published) throw new Error('not published');
    const variant = renderVariant(snapshot, published, pipeline.ctx.config, { titleTemplate: '{subject} [{room}]' });
    const titled = readEvents(variant).filter(
      (event) => event.uid.startsWith(`${entry.id}-`) && event.status === 'CANCELLED',
    );
    expect(new Set(titled.map((event) => event.summary))).toEqual(
      new Set([`Отменено: ${entry.subjectName} [${entry.room}]`]),
    );
    const unprefixed = renderVariant(snapshot, published, { ...pipeline.ctx.config, cancelledTitlePrefix: '' }, {});
    expect(readEvents(unprefixed).find((event) => event.uid === future[0]?.uid)?.summary).toBe(
      `${entry.subjectName} (${entry.kind})`,
    );
    // A re-render (a refresh with nothing new, then a stale marker) still prefixes once.
    await pipeline.refresh(source);
    await markFeedStale(pipeline.ctx, source, pipeline.clock.now);
    const again = readEvents(await feedText(source)).filter((event) => event.uid.startsWith(`${entry.id}-`));
    expect(again.map((event) => event.summary)).toEqual(events.map((event) => event.summary));

    // Fifteen days later the cancelled classes still to come have left the feed; those whose time came while
    // the feed showed them cancelled stay so, and the ones that took place stay as published.
    const expiry = pipeline.clock.now + pipeline.ctx.config.cancelledRetentionMs;
    const heldCancelled = future.filter((event) => Date.parse(event.end) <= expiry);
    expect(heldCancelled.length).toBeGreaterThan(0);
    expect(heldCancelled.length).toBeLessThan(future.length);
    pipeline.clock.now += 15 * 86_400_000;
    await pipeline.refresh(source);
    const later = readEvents(await feedText(source)).filter((event) => event.uid.startsWith(`${entry.id}-`));
    expect(later).toEqual([...ended, ...heldCancelled]);
    pipeline.clock.now -= 15 * 86_400_000;
  });
});

describe('a class the university sends as one row per group', () => {
  it("is one event per date in the teacher's feed, listing both groups", async () => {
    const [first, second] = await pipeline.sim.groups();
    const [teacher] = await pipeline.sim.employees();
    if (!first || !second || !teacher) throw new Error('the simulator has too few groups or employees');
    const shared = {
      subject_name: 'Общий семинар',
      subject_kind_name: 'семинар',
      teacher_id: teacher.id,
      day_week_schedule: 6,
      type_week_schedule: 0,
      begin_time_schedule: '19:00',
      end_time_schedule: '20:30',
      start_day_schedule: '04.10.25',
      finish_day_schedule: '25.10.25',
      num_auditorium_schedule: '1205',
      note_schedule: '',
    };
    const rows = [
      await pipeline.sim.addEntry({ ...shared, groupIds: [second.id] }),
      await pipeline.sim.addEntry({ ...shared, groupIds: [first.id] }),
    ];
    const lowest = Math.min(...rows.map((row) => row.id));
    const source = `employee:${teacher.id}`;
    expect((await pipeline.refresh(source)).state).toBe('completed');
    const ics = await feedText(source);
    const seminar = readEvents(ics).filter((event) => event.summary.startsWith('Общий семинар'));
    expect(seminar.map((event) => event.uid)).toEqual(
      ['20251004', '20251011', '20251018', '20251025'].map((day) => `${lowest}-${day}@timetable-sync`),
    );
    // The groups in row id order: the row added first (for the second group) has the lower id.
    const unfolded = ics.replace(/\r\n /g, '');
    expect(unfolded).toContain(`Группы: ${second.name}\\, ${first.name}`);
    // A teacher's feed says whom each class is for, and does not name the teacher, whose feed it is.
    for (const event of seminar) expect(event.summary).toBe(`Общий семинар (семинар) — ${second.name}, ${first.name}`);
    expect(unfolded).not.toContain('Преподаватель:');
    // A group's feed titles the same class as before, and names its teacher.
    const group = `group:${first.id}`;
    expect((await pipeline.refresh(group)).state).toBe('completed');
    const groupIcs = (await feedText(group)).replace(/\r\n /g, '');
    const inGroup = readEvents(groupIcs).filter((event) => event.summary.startsWith('Общий семинар'));
    expect(inGroup.map((event) => event.summary)).toEqual(Array(4).fill('Общий семинар (семинар)'));
    expect(groupIcs).toContain(`Преподаватель: ${teacher.lastName}`);
    for (const row of rows) await pipeline.sim.deleteEntry(row.id);
  });
});

describe('a group first fetched without classes', () => {
  it('is named as the group directory names it, not "Группа <id>"', async () => {
    const ids = new Set(entries.map((entry) => entry.id));
    const groups = await pipeline.sim.groups();
    let chosen: { id: number; rows: TimetableEntry[] } | undefined;
    for (const candidate of groups) {
      if (candidate.id === groupId) continue;
      const rows = (await pipeline.ctx.upstream.groupSchedule(candidate.id)).entries;
      if (rows.every((row) => !ids.has(row.id))) {
        chosen = { id: candidate.id, rows };
        break;
      }
    }
    if (chosen === undefined) throw new Error('no group shares no class with the other tests');
    const name = groups.find((candidate) => candidate.id === chosen.id)?.name as string;
    await pipeline.ctx.directory.record(chosen.id, name);
    for (const row of chosen.rows) await pipeline.sim.deleteEntry(row.id).catch(() => undefined);
    const source = `group:${chosen.id}`;
    expect((await pipeline.refresh(source)).state).toBe('completed');
    expect((await pipeline.ctx.snapshots.snapshot(source))?.name).toBe(name);
    expect(await feedText(source)).toContain(`X-WR-CALNAME:${name}`);
  });
});
