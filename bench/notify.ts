/**
 * Benchmark of change notifications on every person's channel at once (its measure: "10,000 Telegram chats,
 * 10,000 MAX dialogs and 1,000 mailboxes over 500 sources, one refresh cycle where 10 % of sources change:
 * messages sent, none twice, time to drain against each channel's floor").
 *
 * Setup: a private redis-server, the simulator (unused by the cycle, the worker needs a university), the fake
 * Bot API (testkit/fake-telegram/), the fake MAX Bot API (testkit/fake-max/), a real SMTP server with STARTTLS and
 * AUTH (testkit/smtp-server.ts), and one `timetable-sync worker` child process with all three channels on, their
 * default rate limits (`TELEGRAM_RATE_LIMIT` 25/s, `MAX_RATE_LIMIT` 30/s, `MAIL_RATE_LIMIT` 5/s) and
 * `NOTIFY_QUIET_HOURS=off` (so the hour the benchmark runs at holds nothing back). This process subscribes the
 * chats, dialogs and mailboxes (each to one source, as many per source; a mailbox through its sign-up and
 * confirmation), then plays the refresh cycle as the publication does it: for each changed source a change set
 * stored in the outbox in one MULTI and its fan-out queued, all at once. Figures per channel: messages its fake
 * or server took, the subscribers they reached (each changed source's once), duplicates (must be 0), missing
 * (must be 0), the time from the first fan-out queued to the channel's last message, its floor (messages ÷ the
 * channel's rate limit) and the busiest second. The channels drain side by side through one fan-out and one
 * worker, as they do in a deployment.
 */
import { join } from 'node:path';
import { enqueueNotifyFanout } from '../src/jobs/queues.ts';
import { execOrThrow } from '../src/lib/redis-transaction.ts';
import type { ServiceContext } from '../src/runtime/context.ts';
import { MaxChats } from '../src/store/max-chats.ts';
import type { TelegramChats } from '../src/store/telegram-chats.ts';
import type { ChangeSet } from '../src/timetable/notify-change.ts';
import type { SourceKey } from '../src/timetable/source.ts';
import { startFakeMax } from '../testkit/fake-max/index.ts';
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
import { startSmtpServer } from '../testkit/smtp-server.ts';
import { openBenchContext } from './support/bench-context.ts';

/** Each channel's rate limit as the service keeps to it by default (`*_RATE_LIMIT`), per second. */
const RATE_LIMIT = { telegram: 25, max: 30, email: 5 } as const;
type Channel = keyof typeof RATE_LIMIT;
const DEFAULTS = { chats: 10_000, 'max-chats': 10_000, mailboxes: 1_000, sources: 500, changed: 50 };
/** Subscriptions written per MULTI while setting up. */
const SUBSCRIBE_BATCH = 500;

/** Runs the notify benchmark (`--chats N --max-chats N --mailboxes N --sources N --changed N` for other sizes) and returns its figures. */
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
  const max = await startFakeMax();
  cleanup.add('fake max', max.close);
  const smtp = await startSmtpServer();
  cleanup.add('smtp server', smtp.close);
  const env = {
    ...serviceEnvironment(redisUrl, simulator.url),
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    MAX_BOT_TOKEN: max.token,
    MAX_API_ROOT: max.apiRoot,
    SMTP_URL: smtp.url,
    MAIL_FROM: 'Расписание <timetable@example.edu>',
    NOTIFY_QUIET_HOURS: 'off',
  };
  const ctx = openBenchContext(cleanup, env, redisUrl);

  const sources = Array.from({ length: sizes.sources }, (_, index) => `group:${10_000 + index}` as SourceKey);
  const spread = (count: number, name: (n: number) => string) => {
    const of = new Map<SourceKey, string[]>(sources.map((source) => [source, []]));
    for (let n = 0; n < count; n++) of.get(sources[n % sources.length] as SourceKey)?.push(name(n + 1));
    return of;
  };
  // Chats and dialogs the fakes know (one that never opened the bot is "not found"), as after their /start.
  const telegramOf = spread(sizes.chats, (n) => {
    telegram.addChat(n);
    return String(n);
  });
  const maxOf = spread(sizes['max-chats'], (n) => max.addDialog(String(900_000 + n)));
  const emailOf = spread(sizes.mailboxes, (n) => `student${n}@example.edu`);
  await subscribeAll(ctx.notify.chats, telegramOf);
  await subscribeAll(new MaxChats(ctx.redis, ctx.keys), maxOf);
  await confirmAll(ctx, emailOf);
  const worker = await spawnRole(cleanup, 'worker', env, dir);

  // Every tenth source (for the default sizes) changes: spread over the table, as a cycle finds them.
  const step = Math.floor(sources.length / sizes.changed);
  const changed = Array.from({ length: sizes.changed }, (_, index) => sources[index * step] as SourceKey);
  const expectedOf = (of: Map<SourceKey, string[]>) => new Set(changed.flatMap((source) => of.get(source) ?? []));
  const expected = { telegram: expectedOf(telegramOf), max: expectedOf(maxOf), email: expectedOf(emailOf) };
  const received = {
    telegram: () => telegram.messages().map((message) => ({ to: String(message.chatId), at: message.at })),
    max: () => max.messages().map((message) => ({ to: message.chatId, at: message.at })),
    email: () => smtp.mails.map((mail) => ({ to: mail.to[0] ?? '', at: mail.at })),
  };
  const channels = Object.keys(RATE_LIMIT) as Channel[];
  const started = Date.now();
  const stamp = started;
  for (const source of changed) {
    await execOrThrow(ctx.notify.outbox.write(ctx.redis.multi(), changeSet(source, stamp)));
    await enqueueNotifyFanout(ctx.queues, source, stamp);
  }
  // Drained: every expected subscriber told on every channel, then a quiet while to catch a late duplicate.
  const slowest = Math.max(...channels.map((channel) => expected[channel].size / RATE_LIMIT[channel]));
  const deadline = started + Math.max(120_000, slowest * 3_000);
  const drained = () => channels.every((channel) => received[channel]().length >= expected[channel].size);
  while (!drained() && Date.now() < deadline) await sleep(100);
  await sleep(3_000);
  if (!drained()) {
    const queues = [ctx.queues.notify, ctx.queues.telegram, ctx.queues.max, ctx.queues.email];
    const counts = await Promise.all(queues.map(async (queue) => [queue.name, await queue.getJobCounts()]));
    process.stderr.write(`notify: ${JSON.stringify(counts)}\n${worker.stderr()}\n`);
  }
  const figures: Record<string, number | string> = {
    sources: sizes.sources,
    changedSources: sizes.changed,
  };
  for (const channel of channels) {
    const messages = received[channel]();
    const reached = new Set(messages.map((message) => message.to));
    const drainMs = Math.max(...messages.map((message) => message.at)) - started;
    const floorMs = (messages.length / RATE_LIMIT[channel]) * 1000;
    Object.assign(figures, {
      [`${channel}.subscribers`]: { telegram: sizes.chats, max: sizes['max-chats'], email: sizes.mailboxes }[channel],
      [`${channel}.expected`]: expected[channel].size,
      [`${channel}.messages`]: messages.length,
      [`${channel}.duplicates`]: messages.length - reached.size,
      [`${channel}.missing`]: [...expected[channel]].filter((to) => !reached.has(to)).length,
      [`${channel}.strays`]: [...reached].filter((to) => !expected[channel].has(to)).length,
      [`${channel}.drainSeconds`]: Number((drainMs / 1000).toFixed(1)),
      [`${channel}.floorSeconds`]: Number((floorMs / 1000).toFixed(1)),
      [`${channel}.drainOverFloor`]: Number((drainMs / floorMs).toFixed(3)),
      [`${channel}.busiestSecond`]: busiestSecond(messages.map((message) => message.at)),
      [`${channel}.rateLimit`]: RATE_LIMIT[channel],
    });
  }
  return figures;
}

/** Subscribes every chat (or dialog) to its one source, in batches of MULTIs (what `/start` does, without a bot). */
async function subscribeAll(chats: Pick<TelegramChats, 'subscribe'>, of: Map<SourceKey, string[]>): Promise<void> {
  const all = [...of].flatMap(([source, ids]) => ids.map((chatId) => ({ source, chatId })));
  for (let start = 0; start < all.length; start += SUBSCRIBE_BATCH)
    await Promise.all(all.slice(start, start + SUBSCRIBE_BATCH).map((one) => chats.subscribe({ ...one, options: {} })));
}

/** Signs every address up for its one source and confirms it, as the confirmation link's button does. */
async function confirmAll(ctx: ServiceContext, of: Map<SourceKey, string[]>): Promise<void> {
  const all = [...of].flatMap(([source, addresses]) => addresses.map((address) => ({ source, address })));
  for (let start = 0; start < all.length; start += SUBSCRIBE_BATCH)
    await Promise.all(
      all.slice(start, start + SUBSCRIBE_BATCH).map(async ({ source, address }) => {
        const now = Date.now();
        const id = await ctx.mailboxes.createPending({ address, source, options: {}, digest: false, now });
        const done = await ctx.mailboxes.confirm(id, now);
        if (done.kind !== 'added') throw new Error(`a benchmark mailbox was not confirmed: ${done.kind}`);
      }),
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
