import type { calendar_v3 } from '@googleapis/calendar';
import { describe, expect, it } from 'vitest';
import { deepMerge } from '../../testkit/fake-google/event-rules.ts';
import { selectFields } from '../../testkit/fake-google/fields.ts';
import type { FakeGoogle } from '../../testkit/fake-google/index.ts';
import { eventBody, failure, fake, googleError, userWithCalendar } from './helpers.ts';

async function listAll(
  api: calendar_v3.Calendar,
  params: calendar_v3.Params$Resource$Events$List,
): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let pageToken: string | undefined;
  let pages = 0;
  do {
    const { data } = await api.events.list({ ...params, ...(pageToken === undefined ? {} : { pageToken }) });
    pages += 1;
    ids.push(...(data.items ?? []).map((item) => item.id ?? ''));
    pageToken = data.nextPageToken ?? undefined;
  } while (pageToken !== undefined);
  return { ids, pages };
}

function seed(
  google: FakeGoogle,
  calendarId: string,
  count: number,
  marker: (i: number) => Record<string, string>,
): string[] {
  const ids = Array.from({ length: count }, (_, i) => `ev${String(i).padStart(4, '0')}`);
  for (const [i, id] of ids.entries())
    google.ownerInsertEvent(calendarId, eventBody(id, { extendedProperties: { private: marker(i) } }));
  return ids;
}

describe('fake Google: events.list', () => {
  it('pages with maxResults and pageToken in insertion order', async () => {
    const google = await fake();
    const { api, calendarId } = await userWithCalendar(google);
    const ids = seed(google, calendarId, 10, () => ({ timetableSync: 'group:4242' }));
    const first = await api.events.list({ calendarId, maxResults: 3 });
    expect(first.data).toMatchObject({
      kind: 'calendar#events',
      timeZone: 'Europe/Moscow',
      nextPageToken: expect.any(String),
    });
    expect(first.data.items?.map((item) => item.id)).toEqual(ids.slice(0, 3));
    expect(await listAll(api, { calendarId, maxResults: 3 })).toEqual({ ids, pages: 4 });
    expect(await listAll(api, { calendarId })).toEqual({ ids, pages: 1 });
    expect(await failure(api.events.list({ calendarId, pageToken: 'garbage' }))).toMatchObject({ status: 400 });
    expect(await failure(api.events.list({ calendarId, maxResults: 0 }))).toMatchObject({
      status: 400,
      body: googleError(400, 'invalidParameter'),
    });
  });

  it('filters by privateExtendedProperty (every filter must match) and hides cancelled events unless showDeleted', async () => {
    const google = await fake();
    const { api, calendarId } = await userWithCalendar(google);
    const markers = (i: number): Record<string, string> => {
      if (i % 3 === 0) return { timetableSync: 'group:1', kind: i % 2 === 0 ? 'even' : 'odd' };
      return i % 3 === 1 ? { timetableSync: 'group:2' } : {};
    };
    const ids = seed(google, calendarId, 9, markers);
    google.ownerDeleteEvent(calendarId, 'ev0003');
    const group1 = await listAll(api, { calendarId, privateExtendedProperty: ['timetableSync=group:1'] });
    expect(group1.ids).toEqual(['ev0000', 'ev0006']);
    const withDeleted = await listAll(api, {
      calendarId,
      privateExtendedProperty: ['timetableSync=group:1'],
      showDeleted: true,
      maxResults: 1,
    });
    expect(withDeleted).toEqual({ ids: ['ev0000', 'ev0003', 'ev0006'], pages: 3 });
    const both = await listAll(api, {
      calendarId,
      privateExtendedProperty: ['timetableSync=group:1', 'kind=even'],
      showDeleted: true,
    });
    expect(both.ids).toEqual(['ev0000', 'ev0006']);
    expect((await listAll(api, { calendarId, privateExtendedProperty: ['timetableSync=group:3'] })).ids).toEqual([]);
    expect((await listAll(api, { calendarId })).ids).toEqual(ids.filter((id) => id !== 'ev0003'));
  });

  it('caps maxResults at 2500', async () => {
    const google = await fake();
    const { api, calendarId } = await userWithCalendar(google);
    seed(google, calendarId, 2600, () => ({ timetableSync: 'group:4242' }));
    const { data } = await api.events.list({ calendarId, maxResults: 5000, fields: 'items(id),nextPageToken' });
    expect(data.items).toHaveLength(2500);
    expect(data.nextPageToken).toEqual(expect.any(String));
    expect(await listAll(api, { calendarId, maxResults: 5000, fields: 'items/id,nextPageToken' })).toMatchObject({
      pages: 2,
    });
  });

  it('honours fields: only the named parts are answered, and a forgotten nextPageToken means no next page', async () => {
    const google = await fake();
    const { api, calendarId } = await userWithCalendar(google);
    seed(google, calendarId, 3, () => ({ timetableSync: 'group:4242', timetableSyncHash: 'h' }));
    const { data } = await api.events.list({
      calendarId,
      maxResults: 2,
      fields: 'items(id,status,extendedProperties/private)',
    });
    expect(data).toEqual({
      items: [
        {
          id: 'ev0000',
          status: 'confirmed',
          extendedProperties: { private: { timetableSync: 'group:4242', timetableSyncHash: 'h' } },
        },
        {
          id: 'ev0001',
          status: 'confirmed',
          extendedProperties: { private: { timetableSync: 'group:4242', timetableSyncHash: 'h' } },
        },
      ],
    });
    expect(await failure(api.events.list({ calendarId, fields: 'items(id' }))).toMatchObject({ status: 400 });
  });
});

describe('fake Google: pure helpers', () => {
  it('deepMerge merges objects, replaces arrays and scalars, and clears on null without touching its inputs', () => {
    const target = { a: { b: 1, c: [1, 2] }, d: 'x', e: 1 };
    const merged = deepMerge(target, { a: { c: [3] }, d: null, f: { g: true } });
    expect(merged).toEqual({ a: { b: 1, c: [3] }, e: 1, f: { g: true } });
    expect(target).toEqual({ a: { b: 1, c: [1, 2] }, d: 'x', e: 1 });
  });

  it('selectFields understands nesting, paths, arrays and *', () => {
    const value = { items: [{ id: '1', x: { y: 1, z: 2 }, w: 0 }], nextPageToken: 't', kind: 'k' };
    expect(selectFields(value, 'items(id,x/y),nextPageToken')).toEqual({
      items: [{ id: '1', x: { y: 1 } }],
      nextPageToken: 't',
    });
    expect(selectFields(value, 'items/x')).toEqual({ items: [{ x: { y: 1, z: 2 } }] });
    expect(selectFields(value, '*')).toEqual(value);
    expect(() => selectFields(value, 'items(')).toThrow(/Invalid field selection/);
  });
});
