/**
 * The option values a timetable has had, as every options check reads them: one small set, kept complete by
 * each publication's transaction, and never the snapshot; a timetable published before the set was marked
 * complete is read from its snapshot once, and the set filled.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisClient } from '../../src/lib/redis-target.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { type Snapshot, SnapshotStore } from '../../src/store/snapshot-store.ts';
import type { SourceKey } from '../../src/timetable/source.ts';
import type { TimetableEntry } from '../../src/timetable/types.ts';
import { testContext } from '../support/service.ts';
import { entry } from '../timetable/fixtures.ts';

let ctx: ServiceContext;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ context: ctx, close } = await testContext());
});
afterAll(async () => close?.());

/** A command the store sent, and the bytes of its reply. */
interface Sent {
  command: string;
  bytes: number;
}

/** Bytes of a reply: its strings and buffers summed. */
function replyBytes(reply: unknown): number {
  if (Buffer.isBuffer(reply)) return reply.length;
  if (typeof reply === 'string') return Buffer.byteLength(reply);
  if (Array.isArray(reply)) return reply.reduce((sum: number, item) => sum + replyBytes(item), 0);
  return 0;
}

/** A snapshot store over the context's Redis that records each command it sends and its reply's bytes. */
function countingStore(): { store: SnapshotStore; sent: Sent[] } {
  const sent: Sent[] = [];
  const redis = new Proxy(ctx.redis, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const reply = await value.apply(target, args);
        sent.push({ command: String(property), bytes: replyBytes(reply) });
        return reply;
      };
    },
  }) as RedisClient;
  return { store: new SnapshotStore(redis, ctx.keys), sent };
}

function snapshotOf(entries: TimetableEntry[]): Snapshot {
  return { hash: `hash-${entries.length}`, fetchedAt: 1_000, name: 'ИВТ-21', entries, problems: [] };
}

/** Lectures and practicals of two subgroups, as a term's timetable has them. */
const TERM = [
  entry({ id: 1, kind: 'Лекция' }),
  entry({ id: 2, kind: 'Практика', note: '1 подгруппа' }),
  entry({ id: 3, kind: 'практика', note: 'подгр. 2' }),
];

async function publish(source: SourceKey, entries: TimetableEntry[]): Promise<void> {
  const multi = ctx.redis.multi();
  ctx.snapshots.writeSnapshot(multi, source, snapshotOf(entries));
  await multi.exec();
}

describe('the option values of a timetable', () => {
  it('reads a published timetable from its small set alone, the values it had before included', async () => {
    await publish('group:21', TERM);
    // Exams: the lectures and subgroups are gone from the snapshot, not from what a URL may name.
    await publish('group:21', [entry({ id: 9, kind: 'Экзамен' })]);
    const { store, sent } = countingStore();
    expect(await store.timetableOptionValues('group:21')).toEqual({
      subgroups: [1, 2],
      kinds: ['лекция', 'практика', 'экзамен'],
    });
    expect(sent.map((command) => command.command)).toEqual(['smembers']);
  });

  it('marks the set of an empty timetable too, so that it is read without the snapshot', async () => {
    await publish('group:22', []);
    const { store, sent } = countingStore();
    expect(await store.timetableOptionValues('group:22')).toEqual({ subgroups: [], kinds: [] });
    expect(sent.map((command) => command.command)).toEqual(['smembers']);
  });

  it('reads a timetable published before the mark from its snapshot once, and fills the set', async () => {
    await publish('group:23', TERM);
    // As an earlier release left it: the values of an older snapshot, none of the current one's, no mark.
    await ctx.redis.del(ctx.keys.optionValues('group:23'));
    await ctx.redis.sadd(ctx.keys.optionValues('group:23'), 's:3', 'k:семинар');
    const { store, sent } = countingStore();
    const values = { subgroups: [1, 2, 3], kinds: ['лекция', 'практика', 'семинар'] };
    expect(await store.timetableOptionValues('group:23')).toEqual(values);
    // The fill runs by its digest, or by its text when this Redis does not know it yet (a refused EVALSHA).
    const [first, second, ...fill] = sent.map((command) => command.command);
    expect([first, second]).toEqual(['smembers', 'getBuffer']);
    expect(fill).toEqual([expect.stringMatching(/^eval(sha)?$/)]);
    const snapshotBytes = await ctx.redis.strlen(ctx.keys.snapshot('group:23'));
    expect(sent[1]?.bytes).toBe(snapshotBytes);

    sent.length = 0;
    expect(await store.timetableOptionValues('group:23')).toEqual(values);
    expect(sent.map((command) => command.command)).toEqual(['smembers']);
    expect(await ctx.snapshots.optionValues('group:23')).toEqual(values);
  });

  it('has none before the first snapshot, and leaves no set behind', async () => {
    expect(await ctx.snapshots.timetableOptionValues('group:24')).toBeUndefined();
    expect(await ctx.redis.exists(ctx.keys.optionValues('group:24'))).toBe(0);
  });

  it('is forgotten with the source', async () => {
    await publish('group:25', TERM);
    await ctx.registry.remove('group:25');
    expect(await ctx.redis.exists(ctx.keys.optionValues('group:25'))).toBe(0);
    expect(await ctx.snapshots.timetableOptionValues('group:25')).toBeUndefined();
  });
});
