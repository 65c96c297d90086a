/**
 * `GET /admin/channels`: how every notification channel stands (on, disabled with the reason and since when, or
 * off) and how many of its jobs wait. A channel that refuses our credentials keeps its messages: `waiting` is what
 * it will send once mended.
 */
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { Queues } from '../jobs/queues.ts';
import { type ChannelName, DELIVERY_PREFIX } from '../notify/channel.ts';
import { type ChannelStatus, channelStatus, channelStatuses } from '../notify/channel-state.ts';
import type { NotifyServices } from '../notify/notify-services.ts';

/** Jobs of a queue that have not run yet: due now, put off (held for the morning or a digest, waiting for a
 * disabled channel or for a rate limit), or prioritised (replies). */
const WAITING_STATES = ['waiting', 'prioritized', 'delayed'] as const;

/** What the channel route reads. */
export interface ChannelRouteDeps {
  readonly config: Pick<Config, 'secretKey'>;
  readonly notify: Pick<NotifyServices, 'channels' | 'states'>;
  readonly queues: Pick<Queues, 'telegram' | 'max' | 'email' | 'webhook'>;
}

/** One channel in the answer. */
export type ChannelView = ChannelStatus & { waiting: number };

/** Registers `GET /admin/channels` on the admin scope (prefix `/admin`, admin token checked). */
export function registerChannelRoutes(admin: FastifyInstance, ctx: ChannelRouteDeps): void {
  admin.get('/channels', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return { channels: await channelViews(ctx) };
  });
}

/**
 * Every channel's state and waiting jobs: each channel of a person (one this build has no adapter for is `off`),
 * then webhooks.
 */
export async function channelViews(ctx: ChannelRouteDeps): Promise<ChannelView[]> {
  const names = Object.keys(DELIVERY_PREFIX) as ChannelName[];
  const known = names.map(
    (name) => ctx.notify.channels.find((channel) => channel.name === name) ?? { name, on: false },
  );
  const statuses = await channelStatuses(known, ctx.notify.states);
  // Webhooks need the secret box (their secrets are sealed); a refused receiver disables that webhook only.
  statuses.push(channelStatus('webhook', ctx.config.secretKey !== undefined, undefined));
  return Promise.all(statuses.map(async (status) => ({ ...status, waiting: await waiting(ctx.queues[status.name]) })));
}

async function waiting(queue: Pick<Queues['webhook'], 'getJobCounts'>): Promise<number> {
  const counts = await queue.getJobCounts(...WAITING_STATES);
  return WAITING_STATES.reduce((sum, state) => sum + (counts[state] ?? 0), 0);
}
