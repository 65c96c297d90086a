/**
 * The MAX bot of one process: built when `MAX_BOT_TOKEN` is set; a worker polls (one worker of the deployment at
 * a time, under the poll lock) unless MAX calls `MAX_WEBHOOK_URL`; an api process in webhook mode subscribes it
 * (and again whenever MAX no longer lists it) and links pages to the bot. Each part registers its stop step with
 * the process's one shutdown.
 */
import { enqueueMaxReply } from '../jobs/max-reply.ts';
import { createMaxBot, type MaxBot, maxTokenDigest } from '../notify/max/bot.ts';
import { type MaxClient, maxClientOf } from '../notify/max/client.ts';
import { MaxPoller } from '../notify/max/poller.ts';
import { CommandGate } from '../notify/telegram/flood-gate.ts';
import { MaxChats } from '../store/max-chats.ts';
import type { ServiceContext } from './context.ts';
import type { Shutdown } from './shutdown.ts';
import { botContextDeps, chatActivation, firstRequestCheck } from './telegram.ts';

/** How often an api process in webhook mode asks MAX whether it still calls the webhook. */
const WEBHOOK_CHECK_MS = 30 * 60_000;

/** The process's MAX bot and its client, or undefined when no token is set. */
export interface OpenedMax {
  readonly bot: MaxBot;
  readonly client: MaxClient;
}

/** The process's bot, or undefined when no token is set. */
export function openMax(context: ServiceContext): OpenedMax | undefined {
  const { config, keys, redis } = context;
  if (config.maxBotToken === undefined) return undefined;
  const client = maxClientOf(config, redis, keys);
  const bot = createMaxBot(
    { maxBotToken: config.maxBotToken, maxWebhookUrl: config.maxWebhookUrl, secretKey: config.secretKey },
    {
      ...botContextDeps(context),
      chats: new MaxChats(redis, keys),
      keys,
      logger: context.logger,
      client,
      checkSource: firstRequestCheck(context, 'mx'),
      // Replies obey the limits change messages obey: jobs of the MAX queue (after change messages).
      reply: (reply) => enqueueMaxReply(context.queues, reply, context.wallClock()),
      gate: new CommandGate(
        redis,
        { bucket: (chatId) => keys.rateLimit(`max-commands:${chatId}`), warned: keys.mxFloodWarned },
        config.telegramCommandBurst,
      ),
      activate: chatActivation(context),
    },
  );
  return { bot, client };
}

/**
 * Starts what this process does with the bot: a worker polls (under the poll lock) unless MAX calls
 * `MAX_WEBHOOK_URL`; an api process in webhook mode subscribes it, and checks the subscription now and then.
 */
export function startMax(
  context: ServiceContext,
  max: OpenedMax,
  roles: { api: boolean; worker: boolean },
  shutdown: Shutdown,
): void {
  const { config, logger } = context;
  const { bot, client } = max;
  if (config.maxWebhookUrl === undefined) {
    if (!roles.worker) {
      shutdown.add('max client', () => client.close());
      return;
    }
    const poller = new MaxPoller({
      bot,
      client,
      redis: context.redis,
      keys: {
        lock: context.keys.mxPollLock,
        marker: context.keys.mxPollMarker(maxTokenDigest(config.maxBotToken ?? '')),
      },
      lockMs: config.maxPollLockMs,
      logger,
      redisOutage: context.redisOutage,
    });
    poller.start();
    shutdown.add('max poller', async () => {
      await poller.stop();
      // Commands handed over before the stop are answered (the page's marker moves past them once they are).
      await bot.idle();
      await client.close();
    });
    return;
  }
  if (!roles.api) {
    shutdown.add('max client', () => client.close());
    return;
  }
  // In the background: a MAX outage must not keep the pages from starting; the check tries again later.
  bot.subscribeWebhook().then(
    () => logger.info({}, 'MAX webhook subscribed'),
    (error: unknown) => logger.error({ err: error }, 'could not subscribe the MAX webhook; updates do not arrive'),
  );
  const check = setInterval(() => {
    bot.checkWebhook().catch((error: unknown) => logger.warn({ err: error }, 'could not check the MAX webhook'));
  }, WEBHOOK_CHECK_MS);
  check.unref();
  shutdown.add('max commands', async () => {
    clearInterval(check);
    await bot.idle();
    await client.close();
  });
}
