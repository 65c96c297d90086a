/**
 * Calendars created before their timetable was named (connected before the first refresh) take the timetable's
 * name once it is known: through the real adapter and the fake Google, never for a calendar someone gave us
 * or one the user renamed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFeed } from '../../src/store/feed-store.ts';
import { connectGoogleTarget } from '../../src/subscriptions/google-connect.ts';
import type { SourceKey } from '../../src/timetable/source.ts';
import { client } from '../fake-google/helpers.ts';
import { storedIcs } from '../support/stored-feed.ts';
import { PushHarness } from './push-harness.ts';

let h: PushHarness;

beforeAll(async () => {
  h = await PushHarness.start();
});
afterAll(async () => {
  await h?.close();
});

/** A simulator group nobody refreshed yet, and its name. */
async function freshGroup(): Promise<{ source: SourceKey; id: number; name: string }> {
  const source = await h.smallGroup(2);
  const id = Number(source.split(':')[1]);
  const group = (await h.sim.groups()).find((candidate) => candidate.id === id);
  if (!group) throw new Error(`no group ${id}`);
  return { source, id, name: group.name };
}

/**
 * Connects before any refresh, with the workers stopped: the connection queues a refresh and a push of its own,
 * which run when `whileStopped` is done and the workers start again.
 */
async function connectEarly(source: SourceKey, whileStopped: (connected: Early) => Promise<void> = async () => {}) {
  const { user, refreshToken } = h.fake.addUser();
  await h.stopWorkers();
  // A feed without a snapshot: the state of a target connected before a source had to be fetched first. New
  // connections wait for one good fetch, whose name (or `Группа <id>` for a timetable without classes) they take.
  await h.ctx.feeds
    .write(h.ctx.redis.multi(), source, await encodeFeed('BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n', 0))
    .exec();
  let connected: Early;
  try {
    connected = { ...(await connectGoogleTarget(h.ctx, { source, refreshToken })), user, refreshToken };
    await whileStopped(connected);
  } finally {
    await h.startWorkers();
  }
  await h.settled(connected.id, 2);
  return connected;
}

type Early = Awaited<ReturnType<typeof connectGoogleTarget>> & { user: string; refreshToken: string };

describe('naming a Google calendar after its timetable', () => {
  it('renames a calendar of ours made as `Группа <id>` once the first refresh names the group, and only once', async () => {
    const { source, id, name } = await freshGroup();
    const connected = await connectEarly(source, async (early) => {
      expect(early.calendarName).toBe(`Группа ${id}`);
      expect(h.fake.calendars(early.user)[0]?.summary).toBe(`Группа ${id}`);
      h.fake.resetCounts();
    });
    expect(h.fake.calendars(connected.user)[0]?.summary).toBe(name);
    expect(h.fake.counts().byMethod).toMatchObject({ 'calendars.get': 1, 'calendars.patch': 1 });
    expect(await h.ctx.google.targets.get(connected.id)).toMatchObject({ calendarName: name });
    // The feed says the same name.
    expect(await storedIcs(h.ctx.feeds, source)).toContain(`X-WR-CALNAME:${name}`);
    h.fake.resetCounts();
    await h.push({ ...connected, source }, 'refresh');
    expect(h.fake.counts().byMethod['calendars.patch']).toBeUndefined();
    expect(h.fake.counts().byMethod['calendars.get']).toBeUndefined();
  });

  it('keeps the name a user gave our calendar meanwhile', async () => {
    const { source } = await freshGroup();
    const connected = await connectEarly(source, async (early) => {
      await client(h.fake, early.refreshToken).calendars.patch({
        calendarId: early.calendarId,
        requestBody: { summary: 'Моя учёба' },
      });
      h.fake.resetCounts();
    });
    expect(h.fake.calendars(connected.user)[0]?.summary).toBe('Моя учёба');
    expect(h.fake.counts().byMethod['calendars.patch']).toBeUndefined();
    expect(await h.ctx.google.targets.get(connected.id)).toMatchObject({ calendarName: 'Моя учёба' });
  });

  it('never renames a calendar someone gave us, even one called `Группа <id>`', async () => {
    const { source, id } = await freshGroup();
    const { user, refreshToken } = h.fake.addUser();
    const given = h.fake.createCalendar(user, `Группа ${id}`);
    h.fake.resetCounts();
    // The connection fetches the timetable first, so its first push already knows the group's name.
    const connected = await connectGoogleTarget(h.ctx, { source, refreshToken, calendarId: given.id });
    await h.settled(connected.id, 1);
    expect(h.fake.calendars(user)[0]?.summary).toBe(`Группа ${id}`);
    expect(h.fake.counts().byMethod['calendars.patch']).toBeUndefined();
  });
});
