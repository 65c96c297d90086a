/**
 * Mailboxes and e-mail sign-ups on a real Redis: an address is stored only sealed (nowhere in Redis in clear), found
 * by its keyed digest, forgotten 48 h after a sign-up nobody confirmed, and deleted with its mailbox once the mailbox
 * follows nothing; confirmation and unsubscribe tokens are ours alone.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseMailAddress } from '../../src/lib/mail-address.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { MAX_SOURCES_PER_MAILBOX, Mailboxes, PENDING_TTL_SECONDS } from '../../src/store/mailboxes.ts';
import { deletePrefix, TEST_SECRET_KEY, uniquePrefix } from '../support/service.ts';

const ADDRESS = 'ivan.petrov@student.example.edu';
const NOW = Date.UTC(2025, 9, 1, 12);
let redis: Redis;
const prefix = uniquePrefix('mailboxes');
const keys = redisKeys(prefix);
let mailboxes: Mailboxes;

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
  mailboxes = new Mailboxes(redis, keys, Buffer.from(TEST_SECRET_KEY, 'hex'));
});

afterAll(async () => {
  await deletePrefix(inject('redisUrl'), prefix);
  redis.disconnect();
});

/** Every key of this test's prefix with everything stored under it, as text. */
async function dump(): Promise<string> {
  const parts: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of batch) {
      const type = await redis.type(key);
      const value =
        type === 'hash'
          ? await redis.hgetall(key)
          : type === 'set'
            ? await redis.smembers(key)
            : type === 'string'
              ? await redis.get(key)
              : type;
      parts.push(`${key} ${JSON.stringify(value)}`);
    }
  } while (cursor !== '0');
  return parts.join('\n');
}

async function signUp(address: string, source: string, options = {}, digest = false): Promise<string> {
  return mailboxes.createPending({ address, source, options, digest, now: NOW });
}

describe('sign-ups', () => {
  it('keeps the address sealed, for 48 h, and confirms only with our token', async () => {
    const id = await signUp(ADDRESS, 'group:4242', { subgroup: 1, excludeKinds: ['Лекция'] });
    const ttl = await redis.ttl(keys.mailPending(id));
    expect(ttl).toBeGreaterThan(PENDING_TTL_SECONDS - 60);
    expect(ttl).toBeLessThanOrEqual(PENDING_TTL_SECONDS);
    const stored = await dump();
    expect(stored).not.toContain(ADDRESS);
    expect(stored).not.toContain('ivan.petrov');
    expect(await mailboxes.pending(id)).toMatchObject({
      address: ADDRESS,
      source: 'group:4242',
      options: { subgroup: 1, excludeKinds: ['лекция'] },
      digest: false,
    });
    const token = mailboxes.confirmToken(id);
    expect(mailboxes.pendingIdOf(token)).toBe(id);
    // A token made up, or one whose MAC was changed, names nothing.
    expect(mailboxes.pendingIdOf(`${id}.${'A'.repeat(43)}`)).toBeUndefined();
    expect(mailboxes.pendingIdOf(id)).toBeUndefined();
    const other = new Mailboxes(redis, keys, Buffer.alloc(32, 7));
    expect(other.pendingIdOf(token)).toBeUndefined();
    // Nothing is subscribed before the confirmation.
    expect(await mailboxes.hasAny('group:4242')).toBe(false);
  });

  it('confirms once: the mailbox follows the source with its options, the sign-up is used up', async () => {
    const id = await signUp(ADDRESS, 'group:4243', { subgroup: 2 });
    const confirmed = await mailboxes.confirm(id, NOW);
    expect(confirmed).toMatchObject({ kind: 'added', source: 'group:4243' });
    if (confirmed.kind !== 'added') throw new Error('not added');
    expect(await mailboxes.confirm(id, NOW)).toEqual({ kind: 'expired' });
    expect(await mailboxes.pending(id)).toBeUndefined();
    expect(await mailboxes.ofSource('group:4243')).toEqual([
      { mailboxId: confirmed.mailboxId, options: { subgroup: 2 }, digest: false },
    ]);
    expect(await mailboxes.addressOf(confirmed.mailboxId)).toBe(ADDRESS);
    expect(await dump()).not.toContain(ADDRESS);
    // The address is found by its digest: a second sign-up of it, typed otherwise, joins the same mailbox.
    const typed = parseMailAddress('  Ivan.Petrov@STUDENT.example.edu ');
    if (!('address' in typed)) throw new Error('not an address');
    const again = await signUp(typed.address, 'group:4243', { subgroup: 1 }, true);
    expect(await mailboxes.confirm(again, NOW)).toEqual({
      kind: 'updated',
      mailboxId: confirmed.mailboxId,
      source: 'group:4243',
    });
    expect(await mailboxes.ofSource('group:4243')).toEqual([
      { mailboxId: confirmed.mailboxId, options: { subgroup: 1 }, digest: true },
    ]);
  });

  it('makes one mailbox of two confirmations of one address at once', async () => {
    const address = 'twice@example.edu';
    const first = await signUp(address, 'group:1');
    const second = await signUp(address, 'group:2');
    const [a, b] = await Promise.all([mailboxes.confirm(first, NOW), mailboxes.confirm(second, NOW)]);
    if (a.kind !== 'added' || b.kind !== 'added') throw new Error(`not added: ${a.kind} ${b.kind}`);
    expect(a.mailboxId).toBe(b.mailboxId);
    expect((await mailboxes.subscriptionsOf(a.mailboxId)).map((each) => each.source)).toEqual(['group:1', 'group:2']);
  });

  it('refuses one timetable more than a mailbox may follow, keeping the sign-up', async () => {
    const address = 'many@example.edu';
    for (let n = 1; n <= MAX_SOURCES_PER_MAILBOX; n += 1)
      expect((await mailboxes.confirm(await signUp(address, `group:${1000 + n}`), NOW)).kind).toBe('added');
    const extra = await signUp(address, 'group:9999');
    expect(await mailboxes.confirm(extra, NOW)).toEqual({ kind: 'full', source: 'group:9999' });
    expect(await mailboxes.pending(extra)).toBeDefined();
  });

  it('stores no options for a personal timetable (its subscription has them)', async () => {
    const source = 'personal:AAAAAAAAAAAAAAAAAAAAAA';
    const confirmed = await mailboxes.confirm(await signUp('me@example.edu', source, { subgroup: 1 }), NOW);
    if (confirmed.kind !== 'added') throw new Error('not added');
    expect(await mailboxes.ofSource(source)).toEqual([{ mailboxId: confirmed.mailboxId, options: {}, digest: false }]);
  });
});

describe('unsubscribing', () => {
  it('takes our token only, keeps it across a new confirmation, and deletes the address with the last source', async () => {
    const address = 'leaving@example.edu';
    const one = await mailboxes.confirm(await signUp(address, 'group:7'), NOW);
    const two = await mailboxes.confirm(await signUp(address, 'group:8'), NOW);
    if (one.kind !== 'added' || two.kind !== 'added') throw new Error('not added');
    const mailboxId = one.mailboxId;
    const token7 = (await mailboxes.unsubscribeToken(mailboxId, 'group:7')) ?? '';
    const token8 = (await mailboxes.unsubscribeToken(mailboxId, 'group:8')) ?? '';
    expect(token7).not.toBe(token8);
    expect(await mailboxes.resolveUnsubscribe(token7)).toEqual({ mailboxId, source: 'group:7' });
    expect(await mailboxes.resolveUnsubscribe(`${mailboxId}.${'B'.repeat(43)}`)).toBeUndefined();
    // Confirming again (new options) keeps the links of the mails sent before.
    await mailboxes.confirm(await signUp(address, 'group:7', { subgroup: 1 }), NOW);
    expect(await mailboxes.unsubscribeToken(mailboxId, 'group:7')).toBe(token7);

    expect(await mailboxes.unsubscribe(mailboxId, 'group:7')).toEqual(['group:7']);
    expect(await mailboxes.resolveUnsubscribe(token7)).toBeUndefined();
    expect(await mailboxes.follows(mailboxId, 'group:7')).toBe(false);
    expect(await mailboxes.addressOf(mailboxId)).toBe(address);
    expect(await mailboxes.unsubscribe(mailboxId, 'group:8')).toEqual(['group:8']);
    // Nothing of the address is left: not its sealed form, not its digest's index.
    expect(await mailboxes.addressOf(mailboxId)).toBeUndefined();
    expect(await redis.exists(keys.mailbox(mailboxId), keys.mailboxSources(mailboxId))).toBe(0);
    expect(await redis.exists(keys.mailboxOfAddress(mailboxes.addressHash(address)))).toBe(0);
    expect(await mailboxes.hasAny('group:8')).toBe(false);
    // A later sign-up of the address starts afresh, and the old link stays dead.
    const back = await mailboxes.confirm(await signUp(address, 'group:8'), NOW);
    if (back.kind !== 'added') throw new Error('not added');
    expect(back.mailboxId).not.toBe(mailboxId);
    expect(await mailboxes.resolveUnsubscribe(token8)).toBeUndefined();
  });

  it('unsubscribes a gone address from everything at once', async () => {
    const address = 'gone@example.edu';
    const one = await mailboxes.confirm(await signUp(address, 'group:21'), NOW);
    await mailboxes.confirm(await signUp(address, 'group:22'), NOW);
    if (one.kind !== 'added') throw new Error('not added');
    expect((await mailboxes.unsubscribe(one.mailboxId)).sort()).toEqual(['group:21', 'group:22']);
    expect(await mailboxes.subscriptionsOf(one.mailboxId)).toEqual([]);
    expect(await mailboxes.addressOf(one.mailboxId)).toBeUndefined();
    expect(await mailboxes.hasAny('group:21')).toBe(false);
  });
});
