/** CalDAV push targets and their index on a real Redis. */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  type CalDavTargetStore,
  caldavDetailFields,
  caldavDetails,
  caldavTargetLayout,
  calendarDetailFields,
  recordListing,
} from '../../src/caldav/caldav-targets.ts';
import { googleTargetLayout } from '../../src/google/google-targets.ts';
import { DecryptionError, SecretKeyMissingError } from '../../src/security/errors.ts';
import { hashToken } from '../../src/security/tokens.ts';
import { TargetExistsError } from '../../src/store/errors.ts';
import { redisKeys } from '../../src/store/keys.ts';
import type { NewPushTarget } from '../../src/store/push-target-layout.ts';
import type { PushSummary } from '../../src/store/push-target-record.ts';
import { newTargetId, PushTargetStore, TARGET_ID } from '../../src/store/push-target-store.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

const KEY = Buffer.alloc(32, 7);
const PASSWORD = 'abcd-efgh-ijkl-mnop';
const NOW = Date.UTC(2025, 9, 1, 8);
const HOUR = 3_600_000;
const CALENDAR = 'https://p62-caldav.icloud.com:443/17149682/calendars/timetable-sync-x/';

let redis: Redis;
const prefix = uniquePrefix('caldav-targets');
const keys = redisKeys(prefix);
let store: CalDavTargetStore;

/** What a CalDAV connection stores: the server, the calendar, the login and the app password. */
interface CalDavInput {
  id?: string;
  source: NewPushTarget['source'];
  serverUrl: string;
  calendarUrl: string;
  homeUrl: string;
  calendarOwned: boolean;
  calendarName: string;
  username: string;
  password: string;
  supportsSync: boolean;
  now: number;
}

function newTarget(overrides: Partial<CalDavInput> = {}): NewPushTarget {
  const input: CalDavInput = {
    source: 'group:4242',
    serverUrl: 'https://caldav.icloud.com',
    calendarUrl: CALENDAR,
    homeUrl: 'https://p62-caldav.icloud.com:443/17149682/calendars/',
    calendarOwned: true,
    calendarName: 'ИВТ-21',
    username: 'student@icloud.com',
    password: PASSWORD,
    supportsSync: true,
    now: NOW,
    ...overrides,
  };
  const { calendarUrl, password, serverUrl, homeUrl, username, supportsSync, ...rest } = input;
  const details = caldavDetailFields(calendarUrl, { serverUrl, homeUrl, username, supportsSync });
  return { ...rest, calendarId: calendarUrl, secret: password, details };
}

/** The CalDAV target store under `storeKeys` with `secretKey`. */
function caldavStore(storeKeys: typeof keys, secretKey: Buffer | undefined): CalDavTargetStore {
  return new PushTargetStore(redis, caldavTargetLayout(storeKeys), secretKey);
}

function summary(at: number): PushSummary {
  return {
    at,
    reason: 'refresh',
    desired: 12,
    inserted: 3,
    patched: 2,
    revived: 0,
    deleted: 1,
    unchanged: 6,
    conflicts: 0,
    refused: 0,
    writes: 6,
    reads: 0,
    durationMs: 420,
  };
}

/** Every key under the prefix, with hash fields, values and members, as text. */
async function dump(): Promise<string> {
  const lines: string[] = [];
  for (const key of await redis.keys(`${prefix}:*`)) {
    const type = await redis.type(key);
    lines.push(key);
    if (type === 'hash') lines.push(...Object.entries(await redis.hgetall(key)).flat());
    else if (type === 'string') lines.push((await redis.get(key)) ?? '');
    else if (type === 'set') lines.push(...(await redis.smembers(key)));
    else if (type === 'zset') lines.push(...(await redis.zrange(key, '0', '-1')));
  }
  return lines.join('\n');
}

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
  store = caldavStore(keys, KEY);
});
afterAll(async () => {
  await deletePrefix(inject('redisUrl'), prefix);
  redis.disconnect();
});

describe('PushTargetStore (CalDAV layout)', () => {
  it('creates an active target, due now, under keys of its own', async () => {
    const { id, manageToken } = await store.create(newTarget());
    expect(id).toMatch(TARGET_ID);
    expect(await store.get(id)).toEqual({
      id,
      kind: 'caldav',
      source: 'group:4242',
      calendarId: CALENDAR,
      calendarOwned: true,
      calendarName: 'ИВТ-21',
      status: 'active',
      statusAt: NOW,
      createdAt: NOW,
      credentialVersion: 1,
      reconcileRequested: true,
      reconcileToken: '1',
      details: {
        serverUrl: 'https://caldav.icloud.com',
        homeUrl: 'https://p62-caldav.icloud.com:443/17149682/calendars/',
        // The partition host the calendar lives on (its explicit default port dropped), not the server given.
        host: 'p62-caldav.icloud.com',
        username: 'student@icloud.com',
        supportsSync: '1',
      },
    });
    expect(caldavDetails((await store.get(id)) ?? { details: {} })).toEqual({
      serverUrl: 'https://caldav.icloud.com',
      homeUrl: 'https://p62-caldav.icloud.com:443/17149682/calendars/',
      host: 'p62-caldav.icloud.com',
      username: 'student@icloud.com',
      supportsSync: true,
    });
    expect(await redis.smembers(keys.sourceCaldavTargets('group:4242'))).toContain(id);
    expect(await redis.zscore(keys.caldavTargets, id)).toBe(String(NOW));
    expect(await redis.zscore(keys.caldavTargetsDue, id)).toBe(String(NOW));
    // The Google side sees none of it: its fan-out and due scan would hand the id to the Google push.
    expect(await redis.smembers(keys.sourceTargets('group:4242'))).not.toContain(id);
    expect(await new PushTargetStore(redis, googleTargetLayout(keys), KEY).get(id)).toBeUndefined();
    expect(await store.credential(id)).toEqual({ secret: PASSWORD, version: 1 });
    expect(await store.verifyManageToken(id, manageToken)).toBe(true);
    expect(await store.verifyManageToken(id, `${manageToken}x`)).toBe(false);
    expect(await store.anyForSource('group:4242')).toBe(true);
    expect(await store.anyForSource('group:4243')).toBe(false);
  });

  it('takes an id chosen first (a calendar named after it), once', async () => {
    const id = newTargetId();
    expect((await store.create(newTarget({ id, source: 'group:5151' }))).id).toBe(id);
    await expect(store.create(newTarget({ id, source: 'group:5151' }))).rejects.toThrow(TargetExistsError);
    await expect(store.create(newTarget({ id: '../x' }))).rejects.toThrow(RangeError);
    expect(await store.idsForSource('group:5151')).toEqual([id]);
  });

  it('keeps neither the app password nor the manage token in plain text', async () => {
    const { id, manageToken } = await store.create(newTarget());
    const text = await dump();
    expect(text).toContain(id);
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(Buffer.from(PASSWORD).toString('base64url'));
    expect(text).not.toContain(Buffer.from(PASSWORD).toString('base64'));
    expect(text).not.toContain(manageToken);
    expect(await redis.hget(keys.caldavTarget(id), 'password')).toMatch(/^v1\./);
    expect(await redis.hget(keys.caldavTarget(id), 'manageTokenHash')).toBe(hashToken(manageToken));
  });

  it('binds a sealed password to its target and needs the key', async () => {
    const a = await store.create(newTarget({ password: 'password-of-a' }));
    const b = await store.create(newTarget({ password: 'password-of-b' }));
    await redis.hset(
      keys.caldavTarget(b.id),
      'password',
      (await redis.hget(keys.caldavTarget(a.id), 'password')) ?? '',
    );
    await expect(store.credential(b.id)).rejects.toThrow(DecryptionError);
    await expect(caldavStore(keys, Buffer.alloc(32, 1)).credential(a.id)).rejects.toThrow(DecryptionError);
    const keyless = caldavStore(keys, undefined);
    expect(keyless.canStoreCredentials).toBe(false);
    await expect(keyless.create(newTarget())).rejects.toThrow(SecretKeyMissingError);
  });

  it('marks needs-password only for the password that failed, and a new password reactivates', async () => {
    const { id } = await store.create(newTarget());
    await store.clearReconcileRequest(id, (await store.get(id))?.reconcileToken);
    const used = await store.credential(id);
    expect(await store.replaceCredential(id, 'second-password', NOW + HOUR)).toBe(true);
    // A push that used the first password fails late with a 401: the new password must not be marked.
    const late = { credentialVersion: used?.version, calendarId: CALENDAR };
    expect(await store.markStatus(id, 'needs-password', '401', NOW + HOUR + 1, late)).toBe(false);
    expect(await store.get(id)).toMatchObject({ status: 'active', credentialVersion: 2, reconcileRequested: true });
    expect(await store.credential(id)).toEqual({ secret: 'second-password', version: 2 });

    const reason = 'the server refused the login or the app password (401)';
    expect(await store.markStatus(id, 'needs-password', reason, NOW + 2 * HOUR, { credentialVersion: 2 })).toBe(true);
    expect(await store.get(id)).toMatchObject({
      status: 'needs-password',
      statusReason: reason,
      statusAt: NOW + 2 * HOUR,
    });
    expect(await redis.zscore(keys.caldavTargetsDue, id)).toBeNull();
    await store.scheduleReconcile(id, NOW + 3 * HOUR);
    expect(await redis.zscore(keys.caldavTargetsDue, id)).toBeNull();

    expect(await store.replaceCredential(id, 'third-password', NOW + 4 * HOUR, { username: 'other@icloud.com' })).toBe(
      true,
    );
    const target = await store.get(id);
    expect(target).toMatchObject({
      status: 'active',
      statusAt: NOW + 4 * HOUR,
      credentialVersion: 3,
      details: { username: 'other@icloud.com' },
    });
    expect(target?.statusReason).toBeUndefined();
    expect(await redis.zscore(keys.caldavTargetsDue, id)).toBe(String(NOW + 4 * HOUR));
  });

  it('pauses with the reason until a time, and a successful push ends the pause', async () => {
    const { id } = await store.create(newTarget());
    const reason = 'the server refused writes: 507 Insufficient Storage';
    await store.recordError(id, reason, NOW + 1);
    expect(await store.markStatus(id, 'paused', reason, NOW + 1, { pausedUntil: NOW + 6 * HOUR })).toBe(true);
    expect(await store.get(id)).toMatchObject({
      status: 'paused',
      statusReason: reason,
      pausedUntil: NOW + 6 * HOUR,
      lastError: reason,
    });
    expect(await redis.zscore(keys.caldavTargetsDue, id)).toBe(String(NOW + 6 * HOUR));
    expect(await store.recordPush(id, summary(NOW + 7 * HOUR), { credentialVersion: 1, calendarId: CALENDAR })).toBe(
      true,
    );
    const target = await store.get(id);
    expect(target).toMatchObject({ status: 'active', lastPushAt: NOW + 7 * HOUR, lastPush: summary(NOW + 7 * HOUR) });
    for (const cleared of ['pausedUntil', 'statusReason', 'lastError', 'lastErrorAt'] as const)
      expect(target?.[cleared]).toBeUndefined();
  });

  it('records listings and calendar names only for the calendar the push read', async () => {
    const { id } = await store.create(newTarget());
    expect(await recordListing(store, id, CALENDAR, { syncToken: 'http://radicale.org/ns/sync/1', ctag: '"c1"' })).toBe(
      true,
    );
    expect(await store.get(id)).toMatchObject({
      details: { syncToken: 'http://radicale.org/ns/sync/1', ctag: '"c1"' },
    });
    // A listing without a token (the server refused the old one) drops it, so it is not sent again.
    expect(await recordListing(store, id, CALENDAR, { ctag: '"c2"' })).toBe(true);
    expect((await store.get(id))?.details.syncToken).toBeUndefined();

    const index = store.index(id);
    await index.set('tts-a', 'hash-a "etag-a"');
    const next = 'https://caldav.example.org/dav/calendars/student/other/';
    expect(
      await store.replaceCalendar(
        id,
        { calendarId: next, calendarOwned: false, calendarName: 'Учёба', details: calendarDetailFields(next, false) },
        NOW + HOUR,
      ),
    ).toBe(true);
    expect(await store.get(id)).toMatchObject({
      calendarId: next,
      details: { host: 'caldav.example.org', supportsSync: '0' },
      calendarOwned: false,
      status: 'active',
    });
    expect((await store.get(id))?.details.ctag).toBeUndefined();
    expect(await index.size()).toBe(0);
    // What a push of the old calendar records lands nowhere.
    expect(await recordListing(store, id, CALENDAR, { syncToken: 'old' })).toBe(false);
    expect(await store.recordCalendarName(id, CALENDAR, 'old name')).toBe(false);
    expect(await store.recordPush(id, summary(NOW + 2 * HOUR), { calendarId: CALENDAR })).toBe(false);
    expect(await store.markStatus(id, 'calendar-deleted', 'gone', NOW + 2 * HOUR, { calendarId: CALENDAR })).toBe(
      false,
    );
    expect(await store.recordCalendarName(id, next, 'Учёба (расписание)')).toBe(true);
    expect(await store.get(id)).toMatchObject({ status: 'active', calendarName: 'Учёба (расписание)' });
  });

  it('keeps an index of resources while the target exists', async () => {
    const { id } = await store.create(newTarget());
    const index = store.index(id);
    expect(await index.read()).toEqual(new Map());
    expect(await index.set('tts-a', 'hash-a "1"')).toBe(true);
    expect(await index.set('tts-b', 'hash-b "2"')).toBe(true);
    expect(await index.remove('tts-a')).toBe(true);
    expect(await index.remove('tts-missing')).toBe(true);
    expect(await index.read()).toEqual(new Map([['tts-b', 'hash-b "2"']]));
    expect(await index.replace(new Map([['tts-c', 'FOREIGN']]))).toBe(true);
    expect(await index.read()).toEqual(new Map([['tts-c', 'FOREIGN']]));
    expect(await index.replace(new Map())).toBe(true);
    expect(await index.size()).toBe(0);
  });

  it('requests and clears reconciles, schedules them, and lists the due ones in order', async () => {
    const dueStore = caldavStore(redisKeys(uniquePrefix('caldav-due')), KEY);
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) ids.push((await dueStore.create(newTarget({ now: NOW + i }))).id);
    const [first, second, third] = ids as [string, string, string];
    await dueStore.scheduleReconcile(first, NOW + 10 * HOUR);
    expect(await dueStore.due(NOW + 3, 10)).toEqual([second, third]);
    const served = (await dueStore.get(second))?.reconcileToken;
    await dueStore.requestReconcile(second);
    expect(await dueStore.clearReconcileRequest(second, served)).toBe(false);
    await dueStore.clearReconcileRequest(second, (await dueStore.get(second))?.reconcileToken);
    expect((await dueStore.get(second))?.reconcileRequested).toBe(false);
    const page = await dueStore.page(1, 2);
    expect(page.total).toBe(3);
    expect(page.targets.map((target) => target.id)).toEqual([second, third]);
    for (const id of ids) await dueStore.remove(id);
  });

  it('removes a target and everything pointing at it; nothing brings it back', async () => {
    const { id, manageToken } = await store.create(newTarget({ source: 'group:777' }));
    const index = store.index(id);
    await index.set('tts-a', 'hash-a "1"');
    expect(await store.remove(id)).toBe(true);
    expect(await dump()).not.toContain(id);
    expect(await store.remove(id)).toBe(false);
    // Updates racing the removal (a push finishing, a failure being recorded) must not leave half a target.
    expect(await store.markStatus(id, 'needs-password', 'late', NOW)).toBe(false);
    expect(await store.recordPush(id, summary(NOW))).toBe(false);
    expect(await store.recordError(id, 'late', NOW)).toBe(false);
    expect(await recordListing(store, id, CALENDAR, { syncToken: 'late' })).toBe(false);
    expect(await store.replaceCredential(id, 'late', NOW)).toBe(false);
    expect(await store.rotateManageToken(id)).toBeUndefined();
    await store.scheduleReconcile(id, NOW);
    expect(await index.set('tts-b', 'x')).toBe(false);
    expect(await index.remove('tts-a')).toBe(false);
    expect(await index.replace(new Map([['tts-c', 'x']]))).toBe(false);
    expect(await dump()).not.toContain(id);
    expect(await store.get(id)).toBeUndefined();
    expect(await store.credential(id)).toBeUndefined();
    expect(await store.verifyManageToken(id, manageToken)).toBe(false);
  });

  it('treats malformed ids as unknown', async () => {
    expect(await store.get('../../etc')).toBeUndefined();
    expect(await store.credential('nope')).toBeUndefined();
    expect(await store.markStatus('nope', 'paused', 'x', NOW)).toBe(false);
    expect(await store.remove('nope')).toBe(false);
  });
});
