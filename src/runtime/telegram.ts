/**
 * The Telegram bot of one process: built when `TELEGRAM_BOT_TOKEN` is set; a worker runs the poller (unless in
 * webhook mode), an api process registers the webhook (in webhook mode) and links pages to the bot. Each part
 * registers its stop step with the process's one shutdown.
 */

import { ClientLimits } from '../http/client-limits.ts';
import { activateSource } from '../jobs/activation.ts';
import { enqueueRefresh, enqueueReply, refreshPending } from '../jobs/queues.ts';
import { createTelegramBot, type TelegramBot, type TelegramBotDeps } from '../notify/telegram/bot.ts';
import { CommandGate } from '../notify/telegram/flood-gate.ts';
import { TelegramPoller } from '../notify/telegram/poller.ts';
import { proxyHost } from '../notify/telegram/proxy-fetch.ts';
import { type CheckSource, sourceChecker } from '../notify/telegram/source-check.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { ServiceContext } from './context.ts';
import type { Shutdown } from './shutdown.ts';

/** The process's bot, or undefined when no token is set. */
export function openTelegram(context: ServiceContext): TelegramBot | undefined {
  const { config } = context;
  if (config.telegramBotToken === undefined) return undefined;
  // The host only: the URL may hold the proxy's password.
  if (config.telegramProxy !== undefined)
    context.logger.info({ proxy: proxyHost(config.telegramProxy) }, 'Telegram Bot API requests go through a proxy');
  return createTelegramBot(
    { ...config, telegramBotToken: config.telegramBotToken },
    {
      ...botContextDeps(context),
      checkSource: firstRequestCheck(context),
      // Replies obey the limits change messages obey: jobs of the Telegram queue (after change messages).
      reply: ({ updateId, ...reply }) =>
        enqueueReply(context.queues, { ...reply, askedAt: context.wallClock() }, updateId),
      gate: new CommandGate(context.redis, context.keys, config.telegramCommandBurst),
      activate: chatActivation(context),
    },
  );
}

/** A chat's timetable is refreshed like a visited page's: made active, and fetched when it was not. */
export function chatActivation(context: ServiceContext): (source: SourceKey) => Promise<void> {
  return async (source) => {
    if (await context.registry.isActive(source)) return;
    await activateSource(context, source);
    await enqueueRefresh(context.queues, context.config, source, { reason: 'demand', now: context.now() });
  };
}

/**
 * Starts what this process does with the bot: a worker polls (one worker of the deployment at a time, under the
 * poll lock) unless Telegram calls `TELEGRAM_WEBHOOK_URL`; an api process in webhook mode tells Telegram where.
 */
export function startTelegram(
  context: ServiceContext,
  telegram: TelegramBot,
  roles: { api: boolean; worker: boolean },
  shutdown: Shutdown,
): void {
  const { config, logger } = context;
  if (config.telegramWebhookUrl === undefined) {
    if (!roles.worker) return;
    const poller = new TelegramPoller({
      telegram,
      redis: context.redis,
      lockKey: context.keys.tgPollLock,
      lockMs: config.telegramPollLockMs,
      logger,
    });
    poller.start();
    shutdown.add('telegram poller', async () => {
      await poller.stop();
      // Commands handed over before the stop are answered (their update ids are claimed: nobody else will).
      await telegram.idle();
    });
    return;
  }
  if (!roles.api) return;
  shutdown.add('telegram commands', () => telegram.idle());
  // In the background: a Telegram outage must not keep the pages from starting; the next start tries again.
  telegram.setWebhook().then(
    () => logger.info({}, 'Telegram webhook set'),
    (error: unknown) => logger.error({ err: error }, 'could not set the Telegram webhook; updates do not arrive'),
  );
}

/** What every bot reads from the service context: the chats, the stores, the settings, Redis, the logger, the clock. */
export function botContextDeps(context: ServiceContext): TelegramBotDeps {
  return {
    chats: context.notify.chats,
    snapshots: context.snapshots,
    subscriptions: context.subscriptions,
    config: context.config,
    redis: context.redis,
    keys: context.keys,
    logger: context.logger,
    now: context.now,
  };
}

/**
 * `/start` of a timetable never fetched is a first request, as a feed request for it is: the same limits (the chat
 * is the client: `tg:<chat>`, a MAX dialog `mx:<chat>`), the same fetch on demand, and no subscription to an id the
 * university does not know.
 */
export function firstRequestCheck(context: ServiceContext, messenger: 'tg' | 'mx' = 'tg'): CheckSource {
  const limits = new ClientLimits(context);
  return sourceChecker(
    {
      ...context,
      admit: async (client, likelyReal) => {
        await limits.admit('first-request', client, { likelyReal });
      },
      admitWait: (client) => limits.admitOwn('first-request', client),
      refreshPending: (source) => refreshPending(context.queues, source),
      fetch: async (source) => {
        await enqueueRefresh(context.queues, context.config, source, { reason: 'demand', now: context.now() });
      },
    },
    undefined,
    messenger,
  );
}
