/**
 * Google push following a target's feed options, end to end: the simulator's timetable with classes of two
 * subgroups and a lecture, real workers, the real adapter talking HTTP to the fake Google. The calendar must
 * hold exactly what the expander gives with those options (ids, titles, times, the reminder); a target without
 * options everything, under the digests it always had; a change of options writes only the difference.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { feedOccurrences } from '../../src/feeds/build-feed.ts';
import { HASH_KEY } from '../../src/google/event-marker.ts';
import { eventIdFor } from '../../src/push/event-id.ts';
import { connectGoogleTarget } from '../../src/subscriptions/google-connect.ts';
import type { SourceKey } from '../../src/timetable/source.ts';
import type { SubscriberOptions } from '../../src/timetable/types.ts';
import { calls, PushHarness } from './push-harness.ts';

let h: PushHarness;

beforeAll(async () => {
  h = await PushHarness.start();
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => {
  h.fake.clearFaults();
  h.fake.resetCounts();
});

const OPTIONS: SubscriberOptions = {
  subgroup: 2,
  excludeKinds: ['лекция'],
  alarmMinutes: 15,
  titleTemplate: '{subject} {room}',
};

/** Weekly Wednesday classes from 15 October (after the test clock) to 19 November. */
function weekly(groupId: number, fields: Record<string, unknown>): Record<string, unknown> {
  return {
    groupIds: [groupId],
    start_day_schedule: '2025-10-15',
    finish_day_schedule: '2025-11-19',
    day_week_schedule: 3,
    ...fields,
  };
}

/** A small group with a laboratory class for each subgroup and a lecture for all, published. */
async function subgroupGroup(): Promise<SourceKey> {
  const source = await h.smallGroup(2);
  const groupId = Number(source.split(':')[1]);
  const lab = { subject_name: 'Оптика', subject_kind_name: 'лабораторная работа', num_auditorium_schedule: '425' };
  await h.sim.addEntry(weekly(groupId, { ...lab, note_schedule: '1 подгруппа', time_interval_id: 3 }));
  await h.sim.addEntry(weekly(groupId, { ...lab, note_schedule: '2 подгруппа', time_interval_id: 4 }));
  await h.sim.addEntry(
    weekly(groupId, { subject_name: 'История', subject_kind_name: 'лекция', time_interval_id: 5, note_schedule: '' }),
  );
  return source;
}

interface Held {
  id: string;
  summary: string;
  start: string;
  end: string;
  reminders: unknown;
}

/** What the expander gives with `options`, as the calendar should hold it (every class confirmed here). */
async function expected(source: SourceKey, options: SubscriberOptions | undefined): Promise<Held[]> {
  const { snapshot, published } = await h.ctx.snapshots.load(source);
  if (!snapshot || !published) throw new Error(`${source} is not published`);
  const reminders =
    options === undefined
      ? { useDefault: true }
      : options.alarmMinutes === undefined
        ? { useDefault: true }
        : { useDefault: false, overrides: [{ method: 'popup', minutes: options.alarmMinutes }] };
  return feedOccurrences(snapshot, published, h.ctx.config, options ?? {})
    .map((occurrence) => {
      expect(occurrence.status).toBe('CONFIRMED');
      return {
        id: eventIdFor(occurrence.uid),
        summary: occurrence.summary,
        start: `${occurrence.date}T${occurrence.beginTime}:00+03:00`,
        end: `${occurrence.date}T${occurrence.endTime}:00+03:00`,
        reminders,
      };
    })
    .sort(byId);
}

/** What the fake holds in a calendar. */
function held(calendarId: string): Held[] {
  return h.fake
    .events(calendarId)
    .map((event) => ({
      id: event.id,
      summary: event.summary ?? '',
      start: event.start.dateTime ?? '',
      end: event.end.dateTime ?? '',
      reminders: event.reminders,
    }))
    .sort(byId);
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Write counts of the fake since its counters were reset. */
function writes() {
  return {
    insert: calls(h.fake, 'events.insert'),
    patch: calls(h.fake, 'events.patch'),
    update: calls(h.fake, 'events.update'),
    delete: calls(h.fake, 'events.delete'),
  };
}

describe('Google push with feed options', () => {
  it('a target with subgroup, hidden kinds, alarm and title holds exactly what the expander gives with them', async () => {
    const source = await subgroupGroup();
    const { target, push } = await h.connect(source, { feedOptions: OPTIONS });
    expect(push.state).toBe('completed');
    const want = await expected(source, OPTIONS);
    const whole = await expected(source, undefined);
    expect(want.length).toBeGreaterThan(3);
    expect(want.length).toBeLessThan(whole.length);
    expect(held(target.calendarId)).toEqual(want);
    // Subgroup 2's laboratory class is there, titled by the template; subgroup 1's and the lecture are not.
    const titles = new Set(held(target.calendarId).map((event) => event.summary));
    expect(titles).toContain('Оптика 425');
    expect([...titles].some((title) => title.includes('История'))).toBe(false);
    expect(writes()).toMatchObject({ insert: want.length, patch: 0, delete: 0 });

    const view = await h.adminView(target.id);
    expect(view.body).toMatchObject({
      options: { subgroup: 2, exclude: ['лекция'], alarm: 15, title: '{subject} {room}' },
      pendingChanges: { insert: 0, patch: 0, delete: 0 },
    });
  });

  it('a target without options holds everything, reminders left to the calendar, under the digests of before', async () => {
    const source = await subgroupGroup();
    const { target } = await h.connect(source);
    expect(held(target.calendarId)).toEqual(await expected(source, undefined));
    for (const event of h.fake.events(target.calendarId)) {
      // The digest as pushes computed it before options existed: a change here would re-push every calendar.
      const canonical = JSON.stringify([
        event.summary ?? '',
        event.location ?? '',
        event.description ?? '',
        (event.start.dateTime ?? '').slice(0, 19),
        'Europe/Moscow',
        (event.end.dateTime ?? '').slice(0, 19),
        'Europe/Moscow',
      ]);
      const digest = createHash('sha256').update(canonical).digest('base64url').slice(0, 22);
      expect(event.extendedProperties?.private?.[HASH_KEY]).toBe(digest);
    }
    expect((await h.adminView(target.id)).body.options).toBeNull();
  });

  it('a change of options through the admin API writes only the difference', async () => {
    const source = await subgroupGroup();
    const { target } = await h.connect(source, { feedOptions: {} });
    const all = held(target.calendarId);
    expect(all).toEqual(await expected(source, {}));
    let pushes = 1;
    const change = async (options: Record<string, unknown>) => {
      h.fake.resetCounts();
      const answer = await h.admin('PATCH', `/admin/google-targets/${target.id}`, { options });
      expect(answer.status).toBe(200);
      pushes += 1;
      const outcomes = await h.settled(target.id, pushes);
      expect(outcomes.at(-1)?.state).toBe('completed');
      return writes();
    };

    // All subgroups → subgroup 2: subgroup 1's classes deleted, nothing else written.
    const onlyTwo = await expected(source, { subgroup: 2 });
    expect(await change({ subgroup: 2 })).toEqual({
      insert: 0,
      patch: 0,
      update: 0,
      delete: all.length - onlyTwo.length,
    });
    expect(held(target.calendarId)).toEqual(onlyTwo);

    // Another title: every event patched, none inserted or deleted.
    expect(await change({ subgroup: 2, title: '{subject}!' })).toEqual({
      insert: 0,
      patch: onlyTwo.length,
      update: 0,
      delete: 0,
    });
    expect(held(target.calendarId)).toEqual(await expected(source, { subgroup: 2, titleTemplate: '{subject}!' }));

    // An alarm, then none again: patched both times, back to the calendar's default (no override left).
    expect((await change({ subgroup: 2, title: '{subject}!', alarm: 30 })).patch).toBe(onlyTwo.length);
    expect(held(target.calendarId).map((event) => event.reminders)).toEqual(
      onlyTwo.map(() => ({ useDefault: false, overrides: [{ method: 'popup', minutes: 30 }] })),
    );
    expect((await change({ subgroup: 2, title: '{subject}!' })).patch).toBe(onlyTwo.length);
    expect(held(target.calendarId).map((event) => event.reminders)).toEqual(onlyTwo.map(() => ({ useDefault: true })));

    // Back to every subgroup: subgroup 1's classes inserted again (their ids were deleted: revived by update).
    const back = await change({ title: '{subject}!' });
    expect(back.insert + back.update).toBe(all.length - onlyTwo.length);
    expect(back.delete).toBe(0);
    expect(held(target.calendarId)).toEqual(await expected(source, { titleTemplate: '{subject}!' }));
  });

  it('a cancelled class rings for nobody in a calendar with options, patched or inserted; others keep theirs', async () => {
    const source = await subgroupGroup();
    const { entryId, eventId } = await h.addOneDayClass(source);
    const ours = (await h.connect(source, { feedOptions: { alarmMinutes: 15 } })).target;
    const plain = (await h.connect(source, { feedOptions: {} })).target;
    const old = (await h.connect(source)).target;
    expect(h.fake.event(ours.calendarId, eventId)?.reminders).toEqual({
      useDefault: false,
      overrides: [{ method: 'popup', minutes: 15 }],
    });
    await h.sim.deleteEntry(entryId);
    await h.refresh(source);
    for (const target of [ours, plain, old]) expect((await h.settled(target.id, 2)).at(-1)?.state).toBe('completed');
    // Patched: no default reminder, no override of ours, for «Отменено: …».
    for (const target of [ours, plain]) {
      expect(h.fake.event(target.calendarId, eventId)?.summary).toMatch(/^Отменено: /);
      expect(h.fake.event(target.calendarId, eventId)?.reminders).toEqual({ useDefault: false, overrides: [] });
    }
    // A target without options: its reminders are the person's, never written after insert.
    expect(h.fake.event(old.calendarId, eventId)?.reminders).toEqual({ useDefault: true });
    // Inserted cancelled: a calendar connected now gets the class without reminders too.
    const late = (await h.connect(source, { feedOptions: {} })).target;
    expect(h.fake.event(late.calendarId, eventId)?.reminders).toEqual({ useDefault: false, overrides: [] });
  });

  it('a repeated registration that gives options replaces the target’s and pushes the difference', async () => {
    const source = await subgroupGroup();
    const { target } = await h.connect(source);
    const all = held(target.calendarId);
    h.fake.resetCounts();
    const again = await connectGoogleTarget(h.ctx, {
      source,
      refreshToken: target.refreshToken,
      options: { subgroup: 2 },
    });
    expect(again).toMatchObject({ id: target.id, reused: true });
    const [, push] = await h.settled(target.id, 2);
    expect(push?.state).toBe('completed');
    expect((await h.ctx.google.targets.get(target.id))?.options).toEqual({ subgroup: 2 });
    const onlyTwo = await expected(source, { subgroup: 2 });
    expect(held(target.calendarId)).toEqual(onlyTwo);
    expect(writes()).toMatchObject({ insert: 0, patch: 0, delete: all.length - onlyTwo.length });
  });
});
