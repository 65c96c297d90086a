import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type GoogleTargetStore, googleDetailFields, googleTargetLayout } from '../../src/google/google-targets.ts';
import { DecryptionError, SecretKeyMissingError } from '../../src/security/errors.ts';
import { hashToken } from '../../src/security/tokens.ts';
import { redisKeys } from '../../src/store/keys.ts';
import type { NewPushTarget } from '../../src/store/push-target-layout.ts';
import type { PushSummary } from '../../src/store/push-target-record.ts';
import { PushTargetStore, TARGET_ID } from '../../src/store/push-target-store.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

const KEY = Buffer.alloc(32, 9);
const REFRESH_TOKEN = '1//0refresh-token-Zq8xW3vK7p';
const NOW = Date.UTC(2025, 9, 1, 8);
const HOUR = 3_600_000;

let redis: Redis;
const prefix = uniquePrefix('targets');
const keys = redisKeys(prefix);
let store: GoogleTargetStore;

/** What a Google connection stores: the refresh token, the calendar, the budget and the Google user. */
interface GoogleInput {
  source: NewPushTarget['source'];
  refreshToken: string;
  calendarId: string;
  calendarOwned: boolean;
  calendarName: string;
  budgetKey: string;
  googleUser?: string | undefined;
  now: number;
}

function newTarget(overrides: Partial<GoogleInput> = {}): NewPushTarget {
  const input: GoogleInput = {
    source: 'group:4242',
    refreshToken: REFRESH_TOKEN,
    calendarId: 'abc123@group.calendar.google.com',
    calendarOwned: true,
    calendarName: 'ИВТ-21',
    budgetKey: 'user:1170001',
    googleUser: '1170001',
    now: NOW,
    ...overrides,
  };
  const { refreshToken, budgetKey, googleUser, ...rest } = input;
  return { ...rest, secret: refreshToken, details: googleDetailFields({ budgetKey, googleUser }) };
}

/** The Google target store under `keys` with `secretKey`. */
function googleStore(storeKeys: typeof keys, secretKey: Buffer | undefined): GoogleTargetStore {
  return new PushTargetStore(redis, googleTargetLayout(storeKeys), secretKey);
}

function summary(at: number): PushSummary {
  return {
    at,
    reason: 'refresh',
    desired: 12,
    inserted: 3,
    patched: 2,
    revived: 1,
    deleted: 1,
    unchanged: 5,
    conflicts: 0,
    refused: 0,
    writes: 7,
    reads: 1,
    durationMs: 420,
  };
}

/** Every key under the prefix that mentions `id`, with hash fields, values and members, as text. */
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
  store = googleStore(keys, KEY);
});
afterAll(async () => {
  await deletePrefix(inject('redisUrl'), prefix);
  redis.disconnect();
});

describe('PushTargetStore (Google layout)', () => {
  it('creates an active target, due now, with every index pointing at it', async () => {
    const { id, manageToken } = await store.create(newTarget());
    expect(id).toMatch(TARGET_ID);
    expect(manageToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await store.get(id)).toEqual({
      id,
      kind: 'google',
      source: 'group:4242',
      calendarId: 'abc123@group.calendar.google.com',
      calendarOwned: true,
      calendarName: 'ИВТ-21',
      details: { budgetKey: 'user:1170001', googleUser: '1170001' },
      status: 'active',
      statusAt: NOW,
      createdAt: NOW,
      credentialVersion: 1,
      reconcileRequested: true,
      reconcileToken: '1',
    });
    expect(await redis.smembers(keys.sourceTargets('group:4242'))).toContain(id);
    expect(await redis.zscore(keys.googleTargets, id)).toBe(String(NOW));
    expect(await redis.zscore(keys.googleTargetsDue, id)).toBe(String(NOW));
    expect(await redis.get(keys.googleUserTarget('1170001', 'group:4242'))).toBe(id);
    expect(await store.credential(id)).toEqual({ secret: REFRESH_TOKEN, version: 1 });
    expect(await store.verifyManageToken(id, manageToken)).toBe(true);
    expect(await store.verifyManageToken(id, `${manageToken}x`)).toBe(false);
    expect((await store.findByOwner('1170001', 'group:4242'))?.id).toBe(id);
    expect(await store.findByOwner('1170001', 'group:9999')).toBeUndefined();
  });

  it('keeps neither the refresh token nor the manage token in plain text', async () => {
    const { id, manageToken } = await store.create(
      newTarget({ googleUser: undefined, budgetKey: 'token:0123456789abcdef' }),
    );
    const text = await dump();
    expect(text).toContain(id);
    expect(text).not.toContain(REFRESH_TOKEN);
    expect(text).not.toContain(manageToken);
    expect(text).not.toContain(Buffer.from(REFRESH_TOKEN).toString('base64url'));
    expect(await redis.hget(keys.googleTarget(id), 'refreshToken')).toMatch(/^v1\./);
    expect(await redis.hget(keys.googleTarget(id), 'manageTokenHash')).toBe(hashToken(manageToken));
    expect((await store.get(id))?.details.googleUser).toBeUndefined();
  });

  it('binds a sealed token to its target and needs the key', async () => {
    const a = await store.create(newTarget({ refreshToken: 'token-of-a' }));
    const b = await store.create(newTarget({ refreshToken: 'token-of-b' }));
    await redis.hset(
      keys.googleTarget(b.id),
      'refreshToken',
      (await redis.hget(keys.googleTarget(a.id), 'refreshToken')) ?? '',
    );
    await expect(store.credential(b.id)).rejects.toThrow(DecryptionError);
    await expect(googleStore(keys, Buffer.alloc(32, 1)).credential(a.id)).rejects.toThrow(DecryptionError);
    const keyless = googleStore(keys, undefined);
    expect(keyless.canStoreCredentials).toBe(false);
    await expect(keyless.create(newTarget())).rejects.toThrow(SecretKeyMissingError);
  });

  it('marks needs-consent only for the token version that failed, and a new token reactivates', async () => {
    const { id } = await store.create(newTarget());
    await store.clearReconcileRequest(id, (await store.get(id))?.reconcileToken);
    const used = await store.credential(id);
    expect(await store.replaceCredential(id, 'second-token', NOW + HOUR)).toBe(true);
    // A push that used the first token fails late: the new token must not be marked.
    expect(
      await store.markStatus(id, 'needs-consent', 'invalid_grant', NOW + HOUR + 1, {
        credentialVersion: used?.version,
      }),
    ).toBe(false);
    expect(await store.get(id)).toMatchObject({
      status: 'active',
      credentialVersion: 2,
      reconcileRequested: true,
      statusAt: NOW,
    });
    expect(await store.credential(id)).toEqual({ secret: 'second-token', version: 2 });

    expect(
      await store.markStatus(id, 'needs-consent', 'Google refused the refresh token (invalid_grant)', NOW + 2 * HOUR, {
        credentialVersion: 2,
      }),
    ).toBe(true);
    expect(await store.get(id)).toMatchObject({
      status: 'needs-consent',
      statusReason: 'Google refused the refresh token (invalid_grant)',
      statusAt: NOW + 2 * HOUR,
    });
    // Stopped targets leave the due set, and rescheduling does not bring them back.
    expect(await redis.zscore(keys.googleTargetsDue, id)).toBeNull();
    await store.scheduleReconcile(id, NOW + 3 * HOUR);
    expect(await redis.zscore(keys.googleTargetsDue, id)).toBeNull();

    expect(await store.replaceCredential(id, 'third-token', NOW + 4 * HOUR, { budgetKey: 'user:other' })).toBe(true);
    const target = await store.get(id);
    expect(target).toMatchObject({
      status: 'active',
      statusAt: NOW + 4 * HOUR,
      credentialVersion: 3,
      details: { budgetKey: 'user:other' },
    });
    expect(target?.statusReason).toBeUndefined();
    expect(await redis.zscore(keys.googleTargetsDue, id)).toBe(String(NOW + 4 * HOUR));
  });

  it('updates guarded by a calendar land only while the target still points at that calendar', async () => {
    const { id } = await store.create(newTarget());
    const old = (await store.get(id))?.calendarId ?? '';
    expect(
      await store.replaceCalendar(
        id,
        { calendarId: 'new@group.calendar.google.com', calendarOwned: true, calendarName: 'New' },
        NOW + 1,
      ),
    ).toBe(true);
    // A push that wrote to the old calendar ends late: none of what it records lands on the reconnected target.
    expect(await store.markStatus(id, 'calendar-deleted', 'gone', NOW + 2, { calendarId: old })).toBe(false);
    expect(await store.recordError(id, 'HTTP 404', NOW + 2, { calendarId: old })).toBe(false);
    expect(await store.recordPush(id, summary(NOW + 2), { calendarId: old })).toBe(false);
    expect(await store.get(id)).toMatchObject({ status: 'active', calendarId: 'new@group.calendar.google.com' });
    expect((await store.get(id))?.lastError).toBeUndefined();
    expect(
      await store.markStatus(id, 'calendar-deleted', 'gone', NOW + 3, {
        calendarId: 'new@group.calendar.google.com',
        credentialVersion: 1,
      }),
    ).toBe(true);
    expect(await store.get(id)).toMatchObject({ status: 'calendar-deleted', statusAt: NOW + 3 });
  });

  it('pauses until a time (its reconcile moves there), and a successful push ends the pause', async () => {
    const { id } = await store.create(newTarget());
    await store.recordError(id, 'Google calendar usage limits exceeded', NOW + 1);
    expect(await store.markStatus(id, 'paused', 'quota exceeded', NOW + 1, { pausedUntil: NOW + 6 * HOUR })).toBe(true);
    expect(await store.get(id)).toMatchObject({
      status: 'paused',
      pausedUntil: NOW + 6 * HOUR,
      lastError: 'Google calendar usage limits exceeded',
      lastErrorAt: NOW + 1,
    });
    expect(await redis.zscore(keys.googleTargetsDue, id)).toBe(String(NOW + 6 * HOUR));

    expect(await store.recordPush(id, summary(NOW + 7 * HOUR))).toBe(true);
    const target = await store.get(id);
    expect(target).toMatchObject({
      status: 'active',
      statusAt: NOW + 7 * HOUR,
      lastPushAt: NOW + 7 * HOUR,
      lastPush: summary(NOW + 7 * HOUR),
    });
    for (const cleared of ['pausedUntil', 'statusReason', 'lastError', 'lastErrorAt'] as const)
      expect(target?.[cleared]).toBeUndefined();
    // Still in the due set at the pause's end (recordPush only adds a missing entry).
    expect(await redis.zscore(keys.googleTargetsDue, id)).toBe(String(NOW + 6 * HOUR));
    expect(await store.recordPush(id, summary(NOW + 8 * HOUR))).toBe(true);
    expect((await store.get(id))?.statusAt).toBe(NOW + 7 * HOUR);
  });

  it('replaces a deleted calendar: new calendar, index dropped, reconcile requested, due now', async () => {
    const { id } = await store.create(newTarget());
    await store.clearReconcileRequest(id, (await store.get(id))?.reconcileToken);
    await store.index(id).set('event0000a', 'hash-a');
    await store.markStatus(id, 'calendar-deleted', 'the calendar was deleted by its owner', NOW + HOUR);
    expect(await store.get(id)).toMatchObject({ status: 'calendar-deleted', reconcileRequested: false });
    expect(await redis.zscore(keys.googleTargetsDue, id)).toBeNull();

    const calendar = {
      calendarId: 'new456@group.calendar.google.com',
      calendarOwned: true,
      calendarName: 'ИВТ-21 (2)',
    };
    expect(await store.replaceCalendar(id, calendar, NOW + 2 * HOUR)).toBe(true);
    expect(await store.get(id)).toMatchObject({
      ...calendar,
      status: 'active',
      reconcileRequested: true,
      statusAt: NOW + 2 * HOUR,
    });
    expect(await store.index(id).size()).toBe(0);
    expect(await redis.zscore(keys.googleTargetsDue, id)).toBe(String(NOW + 2 * HOUR));
  });

  it('requests and clears reconciles, schedules them, and lists the due ones in order', async () => {
    const dueStore = googleStore(redisKeys(uniquePrefix('due')), KEY);
    const ids: string[] = [];
    for (let i = 0; i < 4; i += 1) ids.push((await dueStore.create(newTarget({ now: NOW + i }))).id);
    const [first, second, third, fourth] = ids as [string, string, string, string];
    await dueStore.scheduleReconcile(first, NOW + 10 * HOUR);
    expect(await dueStore.due(NOW + 3, 10)).toEqual([second, third, fourth]);
    expect(await dueStore.due(NOW + 3, 2)).toEqual([second, third]);
    expect(await dueStore.due(NOW + 10 * HOUR, 10)).toEqual([second, third, fourth, first]);

    // A push serving one request clears that request, not one made while it ran.
    const served = (await dueStore.get(second))?.reconcileToken;
    await dueStore.requestReconcile(second);
    expect(await dueStore.clearReconcileRequest(second, served)).toBe(false);
    expect((await dueStore.get(second))?.reconcileRequested).toBe(true);
    await dueStore.clearReconcileRequest(second, (await dueStore.get(second))?.reconcileToken);
    expect((await dueStore.get(second))?.reconcileRequested).toBe(false);
    await dueStore.requestReconcile(second);
    expect((await dueStore.get(second))?.reconcileRequested).toBe(true);

    const page = await dueStore.page(1, 2);
    expect(page.total).toBe(4);
    expect(page.targets.map((target) => target.id)).toEqual([second, third]);
    for (const id of ids) await dueStore.remove(id);
  });

  it('rotates the manage token', async () => {
    const { id, manageToken } = await store.create(newTarget());
    const rotated = await store.rotateManageToken(id);
    expect(rotated).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await store.verifyManageToken(id, manageToken)).toBe(false);
    expect(await store.verifyManageToken(id, rotated ?? '')).toBe(true);
  });

  it('removes a target and everything pointing at it; repeating is harmless; nothing brings it back', async () => {
    const { id } = await store.create(newTarget({ source: 'group:777', googleUser: 'remove-me' }));
    await store.index(id).set('event0000b', 'hash-b');
    expect(await store.remove(id)).toBe(true);
    expect(await dump()).not.toContain(id);
    expect(await redis.exists(keys.googleUserTarget('remove-me', 'group:777'))).toBe(0);
    expect(await store.remove(id)).toBe(false);

    // Updates racing the removal (a push finishing, a failure being recorded) must not leave half a target.
    expect(await store.markStatus(id, 'needs-consent', 'late', NOW)).toBe(false);
    expect(await store.recordPush(id, summary(NOW))).toBe(false);
    expect(await store.recordError(id, 'late', NOW)).toBe(false);
    expect(await store.replaceCredential(id, 'late', NOW)).toBe(false);
    expect(await store.rotateManageToken(id)).toBeUndefined();
    await store.scheduleReconcile(id, NOW);
    expect(await store.index(id).set('event0000c', 'hash-c')).toBe(false);
    expect(await store.index(id).replace(new Map([['event0000d', 'hash-d']]))).toBe(false);
    expect(await dump()).not.toContain(id);
    expect(await store.get(id)).toBeUndefined();
    expect(await store.credential(id)).toBeUndefined();
    expect(await store.findByOwner('remove-me', 'group:777')).toBeUndefined();
  });

  it('leaves a user mapping that already names a newer target', async () => {
    const old = await store.create(newTarget({ source: 'group:778', googleUser: 'moved' }));
    const newer = await store.create(newTarget({ source: 'group:778', googleUser: 'moved' }));
    await store.remove(old.id);
    expect((await store.findByOwner('moved', 'group:778'))?.id).toBe(newer.id);
    expect(await redis.smembers(keys.sourceTargets('group:778'))).toEqual([newer.id]);
  });

  it('refuses detail fields that would overwrite a core, secret or owner field, and stores nothing', async () => {
    const bad = newTarget({ source: 'group:779' });
    await expect(store.create({ ...bad, details: { ...bad.details, status: 'paused' } })).rejects.toThrow(RangeError);
    expect(await store.idsForSource('group:779')).toEqual([]);
    const { id } = await store.create(newTarget({ source: 'group:779', googleUser: 'owner-1' }));
    const before = await store.get(id);
    // The owner names the lookup key that `remove` deletes by: changing it later would orphan that key.
    await expect(store.replaceCredential(id, 'other', NOW, { googleUser: 'owner-2' })).rejects.toThrow(RangeError);
    await expect(store.replaceCredential(id, 'other', NOW, { refreshToken: 'x' })).rejects.toThrow(RangeError);
    const calendar = { calendarId: 'c2', calendarOwned: true, calendarName: 'n', details: { tokenVersion: '9' } };
    await expect(store.replaceCalendar(id, calendar, NOW)).rejects.toThrow(RangeError);
    await expect(store.recordDetails(id, 'c2', { manageTokenHash: 'x' })).rejects.toThrow(RangeError);
    expect(await store.get(id)).toEqual(before);
    expect((await store.findByOwner('owner-1', 'group:779'))?.id).toBe(id);
  });

  it('treats malformed ids as unknown', async () => {
    expect(await store.get('../../etc')).toBeUndefined();
    expect(await store.verifyManageToken('nope', 'x')).toBe(false);
    expect(await store.markStatus('nope', 'paused', 'x', NOW)).toBe(false);
    expect(await store.remove('nope')).toBe(false);
  });
});

describe('PushIndex', () => {
  it('sets, replaces and counts entries of an existing target', async () => {
    const { id } = await store.create(newTarget());
    expect(await store.index(id).read()).toEqual(new Map());
    expect(await store.index(id).set('event0000a', 'h1')).toBe(true);
    await store.index(id).set('event0000b', 'h2');
    await store.index(id).set('event0000a', 'h3');
    expect(await store.index(id).read()).toEqual(
      new Map([
        ['event0000a', 'h3'],
        ['event0000b', 'h2'],
      ]),
    );
    expect(await store.index(id).size()).toBe(2);

    const large = new Map(
      Array.from({ length: 5_000 }, (_, i) => [`event${String(i).padStart(6, '0')}`, `hash${i}`] as [string, string]),
    );
    expect(await store.index(id).replace(large)).toBe(true);
    expect(await store.index(id).read()).toEqual(large);
    expect(await store.index(id).replace(new Map())).toBe(true);
    expect(await store.index(id).size()).toBe(0);
  });
});
