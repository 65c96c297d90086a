/**
 * CalDAV push following a target's feed options, end to end: the simulator's timetable with classes of two
 * subgroups and a lecture, a target registered through the admin API on a real Radicale, real workers. The
 * calendar must hold exactly what the expander gives with those options (UIDs, titles, times, our VALARM); a
 * target without options everything, under the digests it always had; a change of options writes only the
 * difference, and a person's own alarm survives ours changing.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import ICAL from 'ical.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALARM_PROPERTY, HASH_PROPERTY } from '../../src/caldav/caldav-client.ts';
import { feedOccurrences } from '../../src/feeds/build-feed.ts';
import { buildApp } from '../../src/http/app.ts';
import { silentLogger } from '../../src/logger.ts';
import type { SourceKey } from '../../src/timetable/source.ts';
import type { SubscriberOptions } from '../../src/timetable/types.ts';
import { TEST_ADMIN_TOKEN } from '../support/service.ts';
import { CalDavHarness, type Connected, type EventView, PASSWORD, unfolded } from './caldav-harness.ts';

let h: CalDavHarness;
let app: FastifyInstance;

beforeAll(async () => {
  h = await CalDavHarness.start();
  app = await buildApp(h.ctx, { logger: silentLogger() });
});
afterAll(async () => {
  await app?.close();
  await h?.close();
});

const OPTIONS_JSON = { subgroup: 2, exclude: ['лекция'], alarm: 15, title: '{subject} {room}' };
const OPTIONS: SubscriberOptions = {
  subgroup: 2,
  excludeKinds: ['лекция'],
  alarmMinutes: 15,
  titleTemplate: '{subject} {room}',
};

async function admin(method: 'POST' | 'PATCH' | 'GET', url: string, payload?: Record<string, unknown>) {
  const answer = await app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    ...(payload === undefined ? {} : { payload }),
  });
  return { status: answer.statusCode, body: answer.json() as Record<string, unknown> };
}

/** A small group with a laboratory class for each subgroup and a weekly lecture for all, published. */
async function subgroupGroup(): Promise<SourceKey> {
  const source = await h.smallGroup(2);
  const groupId = Number(source.split(':')[1]);
  const weekly = (fields: Record<string, unknown>) =>
    h.sim.addEntry({
      groupIds: [groupId],
      start_day_schedule: '2025-10-15',
      finish_day_schedule: '2025-11-19',
      day_week_schedule: 3,
      ...fields,
    });
  const lab = { subject_name: 'Оптика', subject_kind_name: 'лабораторная работа', num_auditorium_schedule: '425' };
  await weekly({ ...lab, note_schedule: '1 подгруппа', time_interval_id: 3 });
  await weekly({ ...lab, note_schedule: '2 подгруппа', time_interval_id: 4 });
  await weekly({ subject_name: 'История', subject_kind_name: 'лекция', time_interval_id: 5, note_schedule: '' });
  await h.refresh(source);
  return source;
}

/** Registers a target through the admin API (a new Radicale user) and waits for its first push. */
async function register(source: SourceKey, options?: Record<string, unknown>): Promise<Connected> {
  const { user } = await h.account();
  const answer = await admin('POST', '/admin/caldav-targets', {
    source,
    url: h.proxy.url,
    username: user,
    password: PASSWORD,
    ...(options === undefined ? {} : { options }),
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  const { id, calendarUrl } = answer.body as { id: string; calendarUrl: string };
  const slug = calendarUrl.split('/').at(-2) ?? '';
  const target = { id, source, user, calendarUrl, folder: h.radicale.collectionDir(user, slug) };
  const [push] = await h.settled(id, 1);
  expect(push?.state).toBe('completed');
  return target;
}

/** What the expander gives with `options`, as the calendar should hold it (every class confirmed here). */
async function expected(source: SourceKey, options: SubscriberOptions | undefined): Promise<EventView[]> {
  const { snapshot, published } = await h.ctx.snapshots.load(source);
  if (!snapshot || !published) throw new Error(`${source} is not published`);
  return feedOccurrences(snapshot, published, h.ctx.config, options ?? {})
    .map((occurrence) => {
      expect(occurrence.status).toBe('CONFIRMED');
      return {
        uid: occurrence.uid,
        summary: occurrence.summary,
        start: new Date(occurrence.startUtc).toISOString(),
        location: occurrence.location,
      };
    })
    .sort((a, b) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
}

/** The alarms of every resource of the folder: trigger, and whether it is ours. */
async function alarms(target: Connected): Promise<string[][]> {
  const found: string[][] = [];
  for (const text of (await h.files(target)).values()) {
    const event = new ICAL.Component(ICAL.parse(text)).getFirstSubcomponent('vevent');
    found.push(
      (event?.getAllSubcomponents('valarm') ?? [])
        .map(
          (alarm) =>
            `${alarm.getFirstPropertyValue('trigger')}${alarm.hasProperty(ALARM_PROPERTY.toLowerCase()) ? ' ours' : ''}`,
        )
        .sort(),
    );
  }
  return found;
}

describe('CalDAV push with feed options', () => {
  it('a target registered with subgroup, hidden kinds, alarm and title holds exactly what the expander gives', async () => {
    const source = await subgroupGroup();
    const target = await register(source, OPTIONS_JSON);
    const want = await expected(source, OPTIONS);
    expect(want.length).toBeGreaterThan(3);
    expect(want.length).toBeLessThan((await expected(source, undefined)).length);
    expect(await h.held(target)).toEqual(want);
    expect(want.map((event) => event.summary)).toContain('Оптика 425');
    expect(await alarms(target)).toEqual(want.map(() => ['-PT15M ours']));
    expect((await admin('GET', `/admin/caldav-targets/${target.id}`)).body).toMatchObject({
      options: OPTIONS_JSON,
      pendingChanges: { insert: 0, patch: 0, delete: 0 },
    });
  });

  it('a target without options holds everything, no alarm of ours, under the digests of before', async () => {
    const source = await subgroupGroup();
    const target = await register(source);
    expect(await h.held(target)).toEqual(await expected(source, undefined));
    const { snapshot, published } = await h.ctx.snapshots.load(source);
    if (!snapshot || !published) throw new Error('not published');
    const before = new Map(
      feedOccurrences(snapshot, published, h.ctx.config).map((occurrence) => {
        // The digest as pushes computed it before options existed: a change would rewrite every resource.
        const canonical = JSON.stringify([
          occurrence.summary,
          occurrence.location,
          occurrence.description,
          `${occurrence.date}T${occurrence.beginTime}:00`,
          occurrence.timezone,
          `${occurrence.date}T${occurrence.endTime}:00`,
          occurrence.timezone,
        ]);
        return [occurrence.uid, createHash('sha256').update(canonical).digest('base64url').slice(0, 22)];
      }),
    );
    for (const text of (await h.files(target)).values()) {
      const uid = /\r\nUID:([^\r]+)/.exec(unfolded(text))?.[1] ?? '';
      const digest = new RegExp(`\\r\\n${HASH_PROPERTY}:([^\\r]+)`).exec(unfolded(text))?.[1];
      expect(digest, uid).toBe(before.get(uid));
    }
    expect((await alarms(target)).flat()).toEqual([]);
    expect((await admin('GET', `/admin/caldav-targets/${target.id}`)).body.options).toBeNull();
  });

  it('a PATCH of options writes only the difference, and a person’s own alarm survives ours changing', async () => {
    const source = await subgroupGroup();
    const target = await register(source, { alarm: 15 });
    const all = await expected(source, {});
    let pushes = 1;
    const change = async (options: Record<string, unknown>) => {
      const before = h.requests();
      const answer = await admin('PATCH', `/admin/caldav-targets/${target.id}`, { options });
      expect(answer.status).toBe(200);
      pushes += 1;
      expect((await h.settled(target.id, pushes)).at(-1)?.state).toBe('completed');
      return h.writesSince(before);
    };

    // All subgroups → subgroup 2: subgroup 1's classes deleted, nothing else written.
    const onlyTwo = await expected(source, { subgroup: 2 });
    expect(await change({ subgroup: 2, alarm: 15 })).toEqual({ PUT: 0, DELETE: all.length - onlyTwo.length });
    expect(await h.held(target)).toEqual(onlyTwo);

    // Another alarm: every resource rewritten with it, none added or deleted.
    expect(await change({ subgroup: 2, alarm: 10 })).toEqual({ PUT: onlyTwo.length, DELETE: 0 });
    expect(await alarms(target)).toEqual(onlyTwo.map(() => ['-PT10M ours']));

    // A person adds an alarm of their own to one class.
    const [name, text] = [...(await h.files(target))][0] ?? [];
    if (!name || !text) throw new Error('no resource');
    const url = `${h.radicale.url}${new URL(target.calendarUrl).pathname.slice(1)}${name}`;
    const auth = { authorization: `Basic ${Buffer.from(`${target.user}:${PASSWORD}`).toString('base64')}` };
    const got = await fetch(url, { headers: auth });
    const theirs = (await got.text()).replace(
      'END:VEVENT',
      ['BEGIN:VALARM', 'ACTION:DISPLAY', 'DESCRIPTION:Не проспать', 'TRIGGER:-PT45M', 'END:VALARM', 'END:VEVENT'].join(
        '\r\n',
      ),
    );
    const put = await fetch(url, {
      method: 'PUT',
      headers: { ...auth, 'if-match': got.headers.get('etag') ?? '', 'content-type': 'text/calendar; charset=utf-8' },
      body: theirs,
    });
    expect(put.status).toBeLessThan(300);

    // No alarm: every resource rewritten (theirs after a 412 and a merge): ours go, theirs stays.
    expect(await change({ subgroup: 2 })).toEqual({ PUT: onlyTwo.length + 1, DELETE: 0 });
    const left = await alarms(target);
    expect(left.filter((one) => one.length > 0)).toEqual([['-PT45M']]);
    expect(await h.held(target)).toEqual(onlyTwo);

    // A title: every resource rewritten.
    expect(await change({ subgroup: 2, title: '{subject}!' })).toEqual({ PUT: onlyTwo.length, DELETE: 0 });
    expect(await h.held(target)).toEqual(await expected(source, { subgroup: 2, titleTemplate: '{subject}!' }));
  });

  it('a repeated registration that gives options replaces the target’s and pushes the difference', async () => {
    const source = await subgroupGroup();
    const target = await register(source);
    const all = await expected(source, undefined);
    const before = h.requests();
    const again = await admin('POST', '/admin/caldav-targets', {
      source,
      url: h.proxy.url,
      username: target.user,
      password: PASSWORD,
      options: { subgroup: 2 },
    });
    expect(again).toMatchObject({ status: 201, body: { id: target.id, reused: true } });
    expect((await h.settled(target.id, 2)).at(-1)?.state).toBe('completed');
    const onlyTwo = await expected(source, { subgroup: 2 });
    expect(await h.held(target)).toEqual(onlyTwo);
    expect(h.writesSince(before)).toEqual({ PUT: 0, DELETE: all.length - onlyTwo.length });
    expect((await admin('GET', `/admin/caldav-targets/${target.id}`)).body.options).toEqual({ subgroup: 2 });
  });
});
