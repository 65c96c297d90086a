/**
 * Benchmark of change notifications (its measure: "10,000 Telegram subscribers over 500 sources, one refresh
 * cycle where 10 % of sources change: messages sent, none twice, time to drain at the API's rate limits
 * (floor = messages ÷ 25/s)").
 *
 * Setup: a private redis-server, the simulator (unused by the cycle, the worker needs a university), the fake
 * Bot API (testkit/fake-telegram/), and one `timetable-sync worker` child process with `TELEGRAM_BOT_TOKEN` and
 * `TELEGRAM_API_ROOT` pointing at the fake, the default `TELEGRAM_RATE_LIMIT` (25/s), and `NOTIFY_QUIET_HOURS=off`
 * (so the hour the benchmark runs at holds nothing back). This process subscribes the chats (each to one source,
 * as many per source), then plays the refresh cycle as the publication does it: for each changed source a change
 * set stored in the outbox in one MULTI and its fan-out queued, all at once. Figures: messages the fake answered,
 * the chats they reached (each changed source's chats once), duplicates (must be 0), missing (must be 0), the
 * time from the first fan-out queued to the last message, its floor (messages ÷ the rate limit) and the busiest
 * second.
 */
import { join } from 'node:path';
import { enqueueNotifyFanout } from '../src/jobs/queues.ts';
import { execOrThrow } from '../src/lib/redis-transaction.ts';
import type { ServiceContext } from '../src/runtime/context.ts';
import type { ChangeSet } from '../src/timetable/notify-change.ts';
import type { SourceKey } from '../src/timetable/source.ts';
import { startFakeTelegram } from '../testkit/fake-telegram/index.ts';
import {
  Cleanup,
  privateRedis,
  privateSimulator,
  serviceEnvironment,
  sleep,
  spawnRole,
  tempDir,
} from '../testkit/processes.ts';
import { openBenchContext } from './support/bench-context.ts';

/** Telegram's limit the service keeps to by default (`TELEGRAM_RATE_LIMIT`). */
const RATE_LIMIT = 25;
const DEFAULTS = { chats: 10_000, sources: 500, changed: 50 };
/** Subscriptions written per MULTI while setting up. */
const SUBSCRIBE_BATCH = 500;

/** Runs the notify benchmark (`--chats N --sources N --changed N` for other sizes) and returns its figures. */
export async function runNotifyBenchmark(flags: readonly string[] = []): Promise<Record<string, number | string>> {
  const sizes = sizesOf(flags);
  const cleanup = new Cleanup();
  try {
    return await measure(cleanup, sizes);
  } finally {
    await cleanup.run();
  }
}

function sizesOf(flags: readonly string[]): typeof DEFAULTS {
  const sizes = { ...DEFAULTS };
  for (const name of Object.keys(DEFAULTS) as (keyof typeof DEFAULTS)[]) {
    const at = flags.indexOf(`--${name}`);
    const value = at === -1 ? undefined : Number(flags[at + 1]);
    if (value !== undefined) {
      if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`--${name} takes a positive whole number`);
      sizes[name] = value;
    }
  }
  if (sizes.changed > sizes.sources) throw new RangeError('--changed must be at most --sources');
  return sizes;
}

async function measure(cleanup: Cleanup, sizes: typeof DEFAULTS): Promise<Record<string, number | string>> {
  const dir = await tempDir(cleanup, 'notify');
  const redisUrl = await privateRedis(cleanup, join(dir, 'redis'));
  const simulator = await privateSimulator(cleanup, { groups: 10, employees: 2, users: 1 });
  const telegram = await startFakeTelegram();
  cleanup.add('fake telegram', telegram.close);
  const env = {
    ...serviceEnvironment(redisUrl, simulator.url),
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    NOTIFY_QUIET_HOURS: 'off',
  };
  const ctx = openBenchContext(cleanup, env, redisUrl);

  const sources = Array.from({ length: sizes.sources }, (_, index) => `group:${10_000 + index}` as SourceKey);
  const chatsOf = new Map<SourceKey, number[]>(sources.map((source) => [source, []]));
  for (let chat = 0; chat < sizes.chats; chat++)
    chatsOf.get(sources[chat % sources.length] as SourceKey)?.push(chat + 1);
  // Chats the fake knows (a chat that never wrote to the bot is "chat not found"), as after their /start.
  for (let chat = 1; chat <= sizes.chats; chat++) telegram.addChat(chat);
  await subscribeAll(ctx, chatsOf);
  const worker = await spawnRole(cleanup, 'worker', env, dir);

  // Every tenth source (for the default sizes) changes: spread over the table, as a cycle finds them.
  const step = Math.floor(sources.length / sizes.changed);
  const changed = Array.from({ length: sizes.changed }, (_, index) => sources[index * step] as SourceKey);
  const expected = new Set(changed.flatMap((source) => chatsOf.get(source) ?? []));
  const started = Date.now();
  const stamp = started;
  for (const source of changed) {
    await execOrThrow(ctx.notify.outbox.write(ctx.redis.multi(), changeSet(source, stamp)));
    await enqueueNotifyFanout(ctx.queues, source, stamp);
  }
  // Drained: every expected chat told, then a quiet while to catch a late duplicate.
  const deadline = started + Math.max(120_000, (expected.size / RATE_LIMIT) * 3_000);
  while (telegram.messages().length < expected.size && Date.now() < deadline) await sleep(100);
  await sleep(3_000);
  const messages = telegram.messages();
  if (messages.length < expected.size) {
    const counts = await Promise.all(
      [ctx.queues.notify, ctx.queues.telegram].map(async (queue) => [queue.name, await queue.getJobCounts()]),
    );
    process.stderr.write(`notify: ${JSON.stringify(counts)}\n${worker.stderr()}\n`);
  }
  const reached = new Set(messages.map((message) => message.chatId));
  const last = Math.max(...messages.map((message) => message.at));
  const drainMs = last - started;
  const floorMs = (messages.length / RATE_LIMIT) * 1000;
  return {
    chats: sizes.chats,
    sources: sizes.sources,
    changedSources: sizes.changed,
    expectedMessages: expected.size,
    messages: messages.length,
    duplicates: messages.length - reached.size,
    missing: [...expected].filter((chat) => !reached.has(chat)).length,
    strays: [...reached].filter((chat) => !expected.has(chat)).length,
    drainSeconds: Number((drainMs / 1000).toFixed(1)),
    floorSeconds: Number((floorMs / 1000).toFixed(1)),
    drainOverFloor: Number((drainMs / floorMs).toFixed(3)),
    busiestSecond: busiestSecond(messages.map((message) => message.at)),
    rateLimit: RATE_LIMIT,
  };
}

/** Subscribes every chat to its one source, in batches of MULTIs (what `/start` does, without Telegram). */
async function subscribeAll(ctx: ServiceContext, chatsOf: Map<SourceKey, number[]>): Promise<void> {
  const all = [...chatsOf].flatMap(([source, chats]) => chats.map((chat) => ({ source, chatId: String(chat) })));
  for (let start = 0; start < all.length; start += SUBSCRIBE_BATCH)
    await Promise.all(
      all.slice(start, start + SUBSCRIBE_BATCH).map((one) => ctx.notify.chats.subscribe({ ...one, options: {} })),
    );
}

/** A change set of three classes of tomorrow: a room change, a cancellation and an added class. */
function changeSet(source: SourceKey, stamp: number): ChangeSet {
  const tomorrow = stamp + 24 * 3_600_000;
  const side = (startUtc: number, location: string) => ({
    date: new Date(startUtc).toISOString().slice(0, 10),
    begin: '10:10',
    end: '11:40',
    startUtc,
    summary: 'Физика (практика)',
    location,
    teacher: 'Иванов И. И.',
  });
  const item = (kind: 'moved' | 'cancelled' | 'added', offset: number) => {
    const startsAt = tomorrow + offset;
    return {
      kind,
      uid: `${source}-${kind}@bench`,
      ...(kind === 'added' ? {} : { before: side(startsAt, 'ауд. 1008') }),
      ...(kind === 'cancelled' ? {} : { after: side(startsAt, 'ауд. 2207') }),
      startsAt,
      lessonKind: 'Практика',
      note: '',
    };
  };
  return {
    source,
    name: `Группа ${source.slice('group:'.length)}`,
    stamp,
    items: [item('moved', 0), item('cancelled', 2 * 3_600_000), item('added', 4 * 3_600_000)],
    omitted: 0,
  };
}

/** The most messages answered within any one second. */
function busiestSecond(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let from = 0;
  for (let to = 0; to < sorted.length; to++) {
    while ((sorted[to] as number) - (sorted[from] as number) >= 1000) from++;
    best = Math.max(best, to - from + 1);
  }
  return best;
}
