/**
 * A feed token is handed out only once it is on Redis's disk. The wait runs on a connection of its own (its
 * WAITAOF blocks the connection it is sent on), and when it fails the token is taken back without costing the
 * person any feed URL they had: six failed sign-ups leave the first URL working, a failed rotation hands out
 * nothing. (The run's Redis may be older than 7.2: the waiter then only writes its marker.)
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RedisUnavailableError } from '../../src/lib/errors.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { rotateFeedToken, signUp } from '../../src/subscriptions/personal.ts';
import { testContext } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';

let simulator: RunningSimulator;
let credentials: string[];
let ctx: ServiceContext;
let closeContext: () => Promise<void>;
let admin: Redis;

beforeAll(async () => {
  simulator = await startSimulator({ port: 0, seed: 11, groups: 2, employees: 2, users: 4 });
  credentials = (await simControl(simulator.url).users()).map((user) => user.token);
  const opened = await testContext({ UNIVERSITY_API_URL: simulator.url });
  ctx = opened.context;
  closeContext = opened.close;
  admin = new Redis(inject('redisUrl'));
});
afterAll(async () => {
  admin.disconnect();
  await closeContext();
  await simulator.close();
});

function credential(index: number): string {
  const found = credentials[index];
  if (found === undefined) throw new Error(`the simulator has no user ${index}`);
  return found;
}

/** The context with a disk that never confirms a write. */
function failingDisk(): ServiceContext {
  return {
    ...ctx,
    disk: {
      wait: async () => {
        throw new RedisUnavailableError('not on disk in time');
      },
    },
  };
}

describe('waiting for a new token to reach the disk', () => {
  it('writes its marker on a connection of its own, not on the one every request shares', async () => {
    await signUp(ctx, credential(0));
    const clients = String(await admin.client('LIST'));
    const own = clients.split('\n').find((line) => line.includes('name=timetable-sync:test-durability '));
    expect(own, clients).toBeDefined();
    expect(Number(await admin.get(ctx.keys.durabilityMarker))).toBeGreaterThanOrEqual(1);
  });

  it('takes a sign-up back when its token is not on disk, revoking none of the URLs the person has', async () => {
    const tokens: string[] = [];
    for (let i = 0; i < 5; i++) tokens.push((await signUp(ctx, credential(1))).token);
    const id = await ctx.subscriptions.idByToken(tokens[0] ?? '');
    for (let i = 0; i < 6; i++) await expect(signUp(failingDisk(), credential(1))).rejects.toThrow(/not on disk/);
    for (const token of tokens) expect(await ctx.subscriptions.idByToken(token)).toBe(id);
    expect(await ctx.subscriptions.liveTokenCount(id ?? '')).toBe(5);
  });

  it('deletes a new subscription whose token is not on disk', async () => {
    await expect(signUp(failingDisk(), credential(2))).rejects.toThrow(/not on disk/);
    const again = await signUp(ctx, credential(2));
    expect(again.created).toBe(true);
  });

  it('still keeps at most five tokens once they are on disk', async () => {
    const tokens: string[] = [];
    for (let i = 0; i < 7; i++) tokens.push((await signUp(ctx, credential(3))).token);
    const id = await ctx.subscriptions.idByToken(tokens[6] ?? '');
    expect(await ctx.subscriptions.liveTokenCount(id ?? '')).toBe(5);
    expect(await ctx.subscriptions.idByToken(tokens[0] ?? '')).toBeUndefined();
    expect(await ctx.subscriptions.idByToken(tokens[1] ?? '')).toBeUndefined();
  });

  it('hands out no rotated token that is not on disk, and revokes it', async () => {
    const { subscription, token } = await signUp(ctx, credential(0));
    await expect(rotateFeedToken(failingDisk(), subscription, { token })).rejects.toThrow(/not on disk/);
    expect(await ctx.subscriptions.liveTokenCount(subscription.id)).toBe(0);
    expect(await ctx.subscriptions.idByToken(token)).toBeUndefined();
  });
});
