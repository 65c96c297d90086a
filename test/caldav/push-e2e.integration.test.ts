/**
 * CalDAV push end to end: the simulator's timetable, real refresh and CalDAV push workers on real Redis, the
 * real CalDAV client talking HTTP to a real Radicale (through the fault proxy, here only counting requests).
 * What Radicale holds is read from its own folder and parsed by ical.js, and compared with the expander.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceKey } from '../../src/timetable/source.ts';
import { CalDavHarness, type Connected, type CalDavHarness as Harness, PASSWORD, unfolded } from './caldav-harness.ts';

let h: Harness;

beforeAll(async () => {
  h = await CalDavHarness.start();
});
afterAll(async () => {
  await h?.close();
});

/** A request straight to Radicale (not through the proxy, so not counted): what a person's calendar app sends. */
async function asPerson(
  target: Pick<Connected, 'user'>,
  path: string,
  init: { method: string; headers?: Record<string, string>; body?: string },
): Promise<Response> {
  return fetch(`${h.radicale.url}${path}`, {
    ...init,
    headers: {
      authorization: `Basic ${Buffer.from(`${target.user}:${PASSWORD}`).toString('base64')}`,
      ...init.headers,
    },
  });
}

/** The path of a resource on Radicale, from its name in the folder. */
const pathOf = (target: Connected, name: string) => `${new URL(target.calendarUrl).pathname.slice(1)}${name}`;

/** Refreshes the source and waits for the push the publication fanned out (the `n`-th push of the target). */
async function refreshAndPush(source: SourceKey, target: Connected, n: number) {
  const refreshed = await h.refresh(source);
  expect(refreshed).toMatchObject({ pushJobs: 1 });
  const pushes = await h.settled(target.id, n);
  return pushes.at(-1);
}

/** The first class (entry) of a source's timetable in the simulator. */
async function firstEntry(source: SourceKey): Promise<number> {
  const [first] = await h.entries(source);
  if (!first) throw new Error('no entries');
  return first.id;
}

const VEVENT_END = 'END:VEVENT';

describe('CalDAV push through the real client and a real Radicale', () => {
  it('first push: the new calendar holds exactly what the expander gives, one PUT each; no change writes nothing', async () => {
    const source = await h.smallGroup(2);
    const before = h.requests();
    const { target, push } = await h.connect(source);
    expect(push).toMatchObject({ state: 'completed', attemptsMade: 1 });
    const expected = await h.expected(source);
    expect(expected.length).toBeGreaterThan(5);
    expect(await h.held(target)).toEqual(expected);
    // Nothing but ours in our own calendar.
    expect((await h.files(target)).size).toBe(expected.length);
    expect(push.result).toMatchObject({ reconciled: true, inserted: expected.length, writes: expected.length });
    expect(h.writesSince(before)).toEqual({ PUT: expected.length, DELETE: 0 });

    // A refresh with nothing new: no push is owed. Pushes queued anyway (a refresh, a reconcile) write nothing.
    const quiet = h.requests();
    expect(await h.refresh(source)).toMatchObject({ pushJobs: 0 });
    expect((await h.push(target, 'refresh')).result).toMatchObject({ writes: 0, unchanged: expected.length });
    expect((await h.push(target, 'reconcile')).result).toMatchObject({
      reconciled: true,
      writes: 0,
      unchanged: expected.length,
    });
    expect(h.writesSince(quiet)).toEqual({ PUT: 0, DELETE: 0 });
    expect(await h.held(target)).toEqual(expected);
  });

  it('a room change: exactly one PUT per changed occurrence, and the calendar follows the expander', async () => {
    const source = await h.smallGroup(2);
    const { target } = await h.connect(source);
    const digests = await h.digests(source);
    const entryId = await firstEntry(source);
    await h.patchEntry(entryId, { num_auditorium_schedule: '777' });
    const before = h.requests();
    const push = await refreshAndPush(source, target, 2);
    const after = await h.digests(source);
    const changed = [...after].filter(([uid, hash]) => digests.get(uid) !== hash).length;
    expect(changed).toBeGreaterThan(0);
    expect([...after.keys()].sort()).toEqual([...digests.keys()].sort());
    expect(push).toMatchObject({ state: 'completed' });
    expect(push?.result).toMatchObject({ reconciled: false, patched: changed, writes: changed });
    expect(h.writesSince(before)).toEqual({ PUT: changed, DELETE: 0 });
    const held = await h.held(target);
    expect(held).toEqual(await h.expected(source));
    expect(held.filter((event) => event.location.includes('777'))).toHaveLength(changed);
  });

  it("a person's alarm survives our change of the class: 412, read back, merged, written with the new ETag", async () => {
    const source = await h.smallGroup(1);
    const { target } = await h.connect(source);
    const [name, text] = [...(await h.files(target))][0] ?? [];
    if (!name || !text) throw new Error('no resource');
    const path = pathOf(target, name);
    const got = await asPerson(target, path, { method: 'GET' });
    const etag = got.headers.get('etag') ?? '';
    const withAlarm = (await got.text()).replace(
      `${VEVENT_END}`,
      ['BEGIN:VALARM', 'ACTION:DISPLAY', 'DESCRIPTION:Не проспать', 'TRIGGER:-PT30M', 'END:VALARM', VEVENT_END].join(
        '\r\n',
      ),
    );
    const put = await asPerson(target, path, {
      method: 'PUT',
      headers: { 'if-match': etag, 'content-type': 'text/calendar; charset=utf-8' },
      body: withAlarm,
    });
    expect(put.status).toBeLessThan(300);
    const [entry] = await h.entries(source);
    await h.patchEntry(entry?.id ?? 0, { begin_time_schedule: '18:00', end_time_schedule: '19:30' });
    const push = await refreshAndPush(source, target, 2);
    expect(push).toMatchObject({ state: 'completed' });
    // Every occurrence of the class rewritten once, plus the one PUT the person's edit made fail with 412.
    expect(push?.result.writes).toBe((push?.result.patched as number) + 1);
    const merged = unfolded((await h.files(target)).get(name) ?? '');
    expect(merged).toContain('TRIGGER:-PT30M');
    expect(merged).toContain('DESCRIPTION:Не проспать');
    expect(await h.held(target)).toEqual(await h.expected(source));
    expect(merged.match(/BEGIN:VEVENT/g)).toHaveLength(1);
  });

  it('a cancelled class keeps its event, titled with the prefix; a class gone from the feed is deleted', async () => {
    const source = await h.smallGroup(2);
    const { target } = await h.connect(source);
    const [first, second] = await h.entries(source);
    if (!first || !second) throw new Error('two entries expected');
    const expectedBefore = await h.expected(source);
    // Deleting an entry in the university's timetable: its coming classes are cancelled in the feed.
    await h.sim.deleteEntry(first.id);
    const before = h.requests();
    const push = await refreshAndPush(source, target, 2);
    expect(push).toMatchObject({ state: 'completed' });
    const expected = await h.expected(source);
    const held = await h.held(target);
    expect(held).toEqual(expected);
    const prefix = h.ctx.config.cancelledTitlePrefix;
    const cancelled = held.filter((event) => prefix !== '' && event.summary.startsWith(prefix));
    const gone = expectedBefore.filter((event) => !expected.some((other) => other.uid === event.uid)).length;
    expect(cancelled.length + gone).toBeGreaterThan(0);
    const writes = h.writesSince(before);
    expect(writes.DELETE).toBe(gone);
    expect(writes.PUT).toBe((push?.result.patched as number) + (push?.result.inserted as number));
  });

  it("a given calendar: the person's own events are never touched, through pushes, reconciles and changes", async () => {
    const source = await h.smallGroup(2);
    const { user, client, home } = await h.account();
    const calendar = await client.makeCalendar(home, 'personal', 'Мой календарь', '#ff0000');
    const target = { user, calendarUrl: calendar.url };
    const own = (uid: string, summary: string) =>
      [
        'BEGIN:VCALENDAR',
        'VERSION:2.0',
        'PRODID:-//person//phone//EN',
        'BEGIN:VEVENT',
        `UID:${uid}`,
        'DTSTAMP:20251001T000000Z',
        'DTSTART:20251003T150000Z',
        'DTEND:20251003T160000Z',
        `SUMMARY:${summary}`,
        'END:VEVENT',
        'END:VCALENDAR',
        '',
      ].join('\r\n');
    const personalPath = new URL(calendar.url).pathname.slice(1);
    for (const [name, uid, summary] of [
      ['dentist.ics', 'dentist-1', 'Стоматолог'],
      ['gym.ics', 'gym-1', 'Спортзал'],
    ] as const) {
      const answer = await asPerson(target, `${personalPath}${name}`, {
        method: 'PUT',
        headers: { 'content-type': 'text/calendar; charset=utf-8' },
        body: own(uid, summary),
      });
      expect(answer.status).toBe(201);
    }
    const { target: connected, push } = await h.connect(source, { user, calendarUrl: calendar.url });
    expect(push).toMatchObject({ state: 'completed' });
    const personal = async () => {
      const files = await h.files(connected);
      return [files.get('dentist.ics'), files.get('gym.ics')];
    };
    const untouched = await personal();
    expect(untouched.every((text) => text?.includes('SUMMARY:'))).toBe(true);
    expect(await h.held(connected)).toEqual(await h.expected(source));
    expect((await h.files(connected)).size).toBe((await h.expected(source)).length + 2);

    expect((await h.push(connected, 'reconcile')).result).toMatchObject({ writes: 0 });
    // Every class changes room (deleting half of a two-class timetable would wait for an operator's
    // confirmation): only our resources change.
    for (const entry of await h.entries(source)) await h.patchEntry(entry.id, { num_auditorium_schedule: '555' });
    const push3 = await refreshAndPush(source, connected, 3);
    expect(push3?.result.writes).toBeGreaterThan(0);
    expect(await h.held(connected)).toEqual(await h.expected(source));
    expect(await personal()).toEqual(untouched);
  });
});
