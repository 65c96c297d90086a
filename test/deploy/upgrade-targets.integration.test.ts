/**
 * Push targets survive the merge of the Google and CalDAV target stores: test/fixtures/upgrade-targets/ holds
 * targets of both kinds exactly as the stores of 3046dd2 wrote them (their Redis keys, hash fields and sealed
 * credentials, captured by a throwaway script run on that code), with placeholders for what each run makes
 * anew (the group, the Google calendar, the CalDAV server's address). Restored under today's code, every target
 * reads as it was written, its credential opens, it pushes (to the fake Google, to Radicale), and a second push
 * with nothing changed writes nothing.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Connected as CalDavConnected, CalDavHarness, PASSWORD } from '../caldav/caldav-harness.ts';
import { calls, PushHarness } from '../google/push-harness.ts';
import type { ExportedKey } from './redis-export.ts';
import { restoreKeys } from './redis-export.ts';

/** The captured targets: their ids, manage tokens and keys. */
interface TargetFixture {
  ids: { googlePush: string; googleRich: string; caldavPush: string; caldavRich: string };
  manageTokens: Record<'googlePush' | 'googleRich' | 'caldavPush' | 'caldavRich', string>;
  keys: ExportedKey[];
}

const FIXTURE = join(import.meta.dirname, '../fixtures/upgrade-targets/targets-3046dd2.json');
/** Where the capture pointed the CalDAV targets (its URL and host), replaced by this run's server. */
const OLD_SERVER = 'http://caldav.invalid:1/';
const OLD_HOST = 'caldav.invalid:1';
/** Google's write requests: none may follow a push with nothing to change. */
const GOOGLE_WRITES = ['events.insert', 'events.patch', 'events.update', 'events.delete', 'calendars.patch'] as const;

async function readFixture(): Promise<TargetFixture> {
  return JSON.parse(await readFile(FIXTURE, 'utf8')) as TargetFixture;
}

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const text = (base64: string) => Buffer.from(base64, 'base64').toString('utf8');

/** The fixture's keys whose name passes `keep`, under `prefix`, with every placeholder replaced. */
function rewrite(
  keys: readonly ExportedKey[],
  prefix: string,
  keep: (name: string) => boolean,
  swaps: Record<string, string>,
): ExportedKey[] {
  const swap = (value: string) => Object.entries(swaps).reduce((out, [from, to]) => out.replaceAll(from, to), value);
  const swapped = (base64: string) => b64(swap(text(base64)));
  return keys
    .filter((key) => keep(key.key))
    .map((key): ExportedKey => {
      const name = `${prefix}:${swap(key.key.slice('tts:'.length))}`;
      if (key.type === 'hash')
        return {
          ...key,
          key: name,
          value: key.value.map(([field, value]): [string, string] => [field, swapped(value)]),
        };
      if (key.type === 'set') return { ...key, key: name, value: key.value.map(swapped) };
      if (key.type === 'zset')
        return {
          ...key,
          key: name,
          value: key.value.map(([member, score]): [string, string] => [swapped(member), score]),
        };
      if (key.type === 'string') return { ...key, key: name, value: swapped(key.value) };
      return { ...key, key: name };
    });
}

async function restore(keys: ExportedKey[]): Promise<void> {
  const redis = new Redis(inject('redisUrl'));
  try {
    await restoreKeys(redis, keys);
  } finally {
    redis.disconnect();
  }
}

describe('Google targets written by the old store', () => {
  let h: PushHarness;
  let fixture: TargetFixture;

  beforeAll(async () => {
    fixture = await readFixture();
    h = await PushHarness.start();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('read as written, push, and a second push writes nothing to Google', async () => {
    const source = await h.smallGroup(3);
    await h.refresh(source);
    const { user, refreshToken } = h.fake.addUser({ user: 'upgrade-user', refreshToken: 'upgrade-refresh-token' });
    const calendarId = h.fake.createCalendar(user, 'Timetable (Google)').id;
    const swaps = { '@google-group@': source.split(':')[1] ?? '', '@google-calendar@': calendarId };
    const google = (name: string) => /^tts:(google-|source-targets:)/.test(name);
    const keys = rewrite(fixture.keys, h.ctx.config.redisPrefix, google, swaps);
    await restore(keys);
    const { googlePush: id, googleRich: rich } = fixture.ids;
    const targets = h.ctx.google.targets;

    expect(await targets.get(id)).toMatchObject({
      id,
      kind: 'google',
      source,
      calendarId,
      calendarOwned: true,
      calendarName: 'Timetable (Google)',
      status: 'active',
      credentialVersion: 2,
      reconcileRequested: true,
      details: { budgetKey: 'user:upgrade-user', googleUser: 'upgrade-user' },
    });
    expect(await targets.credential(id)).toEqual({ secret: refreshToken, version: 2 });
    expect(await targets.verifyManageToken(id, fixture.manageTokens.googlePush)).toBe(true);
    expect((await targets.findByOwner('upgrade-user', source))?.id).toBe(id);
    expect(await targets.get(rich)).toMatchObject({
      status: 'paused',
      statusReason: 'Calendar usage limits exceeded',
      lastPush: { reason: 'reconcile', refused: 1, inserted: 2 },
      lastRefusals: [{ eventId: 'ev1', message: 'Invalid start time.' }],
      lastError: 'quota',
      reconcileToken: expect.stringMatching(/^[0-9a-f]{12}$/),
      details: { budgetKey: 'token:0123456789abcdef' },
    });
    expect((await targets.get(rich))?.details.googleUser).toBeUndefined();
    expect(await targets.credential(rich)).toEqual({ secret: 'rich-refresh-token', version: 1 });
    expect(await h.ctx.google.targets.index(rich).read()).toEqual(new Map([['a'.repeat(52), 'digest-1']]));
    expect((await targets.page(0, 10)).targets.map((target) => target.id).sort()).toEqual([id, rich].sort());
    expect((await targets.idsForSource(source)).sort()).toEqual([id, rich].sort());

    const target = { id, source, calendarId, refreshToken, user };
    const first = await h.push(target, 'reconcile');
    expect(first.state).toBe('completed');
    const live = h.fake.events(calendarId).filter((event) => event.status !== 'cancelled');
    expect(live.length).toBeGreaterThan(0);
    expect(live.map((event) => event.id).sort()).toEqual((await h.desired(source)).map((event) => event.id).sort());
    const before = GOOGLE_WRITES.map((method) => calls(h.fake, method));
    const second = await h.push(target, 'refresh');
    expect(second.state).toBe('completed');
    expect(second.result).toMatchObject({ writes: 0 });
    expect(GOOGLE_WRITES.map((method) => calls(h.fake, method))).toEqual(before);

    expect(await targets.remove(rich)).toBe(true);
    expect(await targets.remove(id)).toBe(true);
    const redis = new Redis(inject('redisUrl'));
    try {
      for (const key of keys) expect(await redis.exists(key.key), key.key).toBe(0);
    } finally {
      redis.disconnect();
    }
  });
});

describe('CalDAV targets written by the old store', () => {
  let h: CalDavHarness;
  let fixture: TargetFixture;

  beforeAll(async () => {
    fixture = await readFixture();
    h = await CalDavHarness.start();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('read as written, push, and a second push writes nothing to Radicale', async () => {
    const source = await h.smallGroup(3);
    await h.refresh(source);
    const user = 'upgrade-student';
    await h.radicale.addUser(user, PASSWORD);
    const client = h.ctx.caldav.client({ username: user, password: PASSWORD });
    const calendarUrl = (await client.makeCalendar(`${h.proxy.url}${user}/`, 'timetable', source, '#1E88E5')).url;
    const swaps = {
      [OLD_SERVER]: h.proxy.url,
      [OLD_HOST]: new URL(h.proxy.url).host,
      '@caldav-group@': source.split(':')[1] ?? '',
    };
    const caldav = (name: string) => /^tts:(caldav-|source-caldav-targets:)/.test(name);
    const keys = rewrite(fixture.keys, h.ctx.config.redisPrefix, caldav, swaps);
    await restore(keys);
    const { caldavPush: id, caldavRich: rich } = fixture.ids;
    const targets = h.ctx.caldav.targets;

    expect(calendarUrl).toBe(`${h.proxy.url}${user}/timetable/`);
    expect(await targets.get(id)).toMatchObject({
      id,
      kind: 'caldav',
      source,
      calendarId: calendarUrl,
      calendarOwned: true,
      status: 'active',
      credentialVersion: 2,
      details: { serverUrl: h.proxy.url, username: user, host: new URL(h.proxy.url).host, supportsSync: '1' },
    });
    expect(await targets.credential(id)).toEqual({ secret: PASSWORD, version: 2 });
    expect(await targets.verifyManageToken(id, fixture.manageTokens.caldavPush)).toBe(true);
    expect(await targets.get(rich)).toMatchObject({
      status: 'needs-password',
      statusReason: 'the server refused the login or the app password (401)',
      lastError: '401',
      lastRefusals: [{ eventId: 'tts-abc', message: 'refused' }],
      details: { syncToken: 'http://radicale.org/ns/sync/abc', ctag: '"ctag-1"', supportsSync: '0', username: 'rich' },
    });
    expect(await targets.credential(rich)).toEqual({ secret: 'rich-password', version: 1 });
    expect(await h.ctx.caldav.targets.index(rich).read()).toEqual(
      new Map([
        ['tts-abc', 'digest "etag-1"'],
        ['tts-def', '!foreign'],
      ]),
    );
    expect((await targets.due(Number.MAX_SAFE_INTEGER, 10)).sort()).toEqual([id]);

    const target: CalDavConnected = {
      id,
      source,
      user,
      calendarUrl,
      folder: h.radicale.collectionDir(user, 'timetable'),
    };
    const first = await h.push(target, 'reconcile');
    expect(first.state).toBe('completed');
    expect(first.result).toMatchObject({ writes: expect.any(Number) });
    expect((await h.held(target)).length).toBeGreaterThan(0);
    expect(await h.held(target)).toEqual(await h.expected(source));
    const before = ['PUT', 'DELETE', 'MKCALENDAR', 'PROPPATCH'].map((method) => h.proxy.requests.get(method) ?? 0);
    const second = await h.push(target, 'refresh');
    expect(second.state).toBe('completed');
    expect(second.result).toMatchObject({ writes: 0 });
    expect(['PUT', 'DELETE', 'MKCALENDAR', 'PROPPATCH'].map((method) => h.proxy.requests.get(method) ?? 0)).toEqual(
      before,
    );

    expect(await targets.remove(rich)).toBe(true);
    expect(await targets.remove(id)).toBe(true);
  });
});
