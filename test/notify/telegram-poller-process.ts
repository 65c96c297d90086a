/**
 * A worker-like process for the poller tests: the bot and its poller over the real stores, stopped by the
 * process's own ordered shutdown on SIGTERM, as a worker's are. Configuration comes from the environment; logs
 * go to stdout as JSON lines (the test reads "polling Telegram for updates" from them).
 */
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { createTelegramBot } from '../../src/notify/telegram/bot.ts';
import { TelegramPoller } from '../../src/notify/telegram/poller.ts';
import { openServiceContext } from '../../src/runtime/service-context.ts';
import { Shutdown } from '../../src/runtime/shutdown.ts';
import { TelegramChats } from '../../src/store/telegram-chats.ts';

const config = loadConfig(process.env);
const redis = config.redisTarget;
const token = config.telegramBotToken;
if (redis === undefined || token === undefined) throw new Error('set REDIS_URL and TELEGRAM_BOT_TOKEN');
const logger = createLogger({ level: 'info', pretty: false, destination: process.stdout });
const shutdown = new Shutdown(logger);
const opened = openServiceContext({ config, logger, redis, role: 'worker' });
shutdown.add('queues and Redis', () => opened.close());
const { context } = opened;
const telegram = createTelegramBot(
  { ...config, telegramBotToken: token },
  {
    chats: new TelegramChats(context.redis, context.keys),
    snapshots: context.snapshots,
    subscriptions: context.subscriptions,
    config,
    redis: context.redis,
    keys: context.keys,
    logger,
    now: context.now,
  },
);
const poller = new TelegramPoller({
  telegram,
  redis: context.redis,
  lockKey: context.keys.tgPollLock,
  lockMs: config.telegramPollLockMs,
  logger,
  backoffMs: 500,
});
poller.start();
shutdown.add('telegram poller', () => poller.stop());
process.stdout.write('{"msg":"ready"}\n');
const signal = await shutdown.untilSignal();
await shutdown.run(signal);
shutdown.exitSoon();
