/**
 * A worker-like process for the MAX poller tests: the bot and its poller over the real stores, stopped by the
 * process's own ordered shutdown on SIGTERM, as a worker's are. The bot answers at once (no reply queue runs
 * here). Configuration comes from the environment; logs go to stdout as JSON lines (the test reads "polling MAX
 * for updates" from them).
 */
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { createMaxBot, maxTokenDigest } from '../../src/notify/max/bot.ts';
import { maxClientOf } from '../../src/notify/max/client.ts';
import { MaxPoller } from '../../src/notify/max/poller.ts';
import { openServiceContext } from '../../src/runtime/service-context.ts';
import { Shutdown } from '../../src/runtime/shutdown.ts';
import { botContextDeps } from '../../src/runtime/telegram.ts';
import { MaxChats } from '../../src/store/max-chats.ts';

const config = loadConfig(process.env);
const redis = config.redisTarget;
const token = config.maxBotToken;
if (redis === undefined || token === undefined) throw new Error('set REDIS_URL and MAX_BOT_TOKEN');
const logger = createLogger({ level: 'info', pretty: false, destination: process.stdout });
const shutdown = new Shutdown(logger);
const opened = openServiceContext({ config, logger, redis, role: 'worker' });
shutdown.add('queues and Redis', () => opened.close());
const { context } = opened;
const client = maxClientOf(config, context.redis, context.keys);
const bot = createMaxBot(
  { maxBotToken: token },
  {
    ...botContextDeps(context),
    chats: new MaxChats(context.redis, context.keys),
    keys: context.keys,
    client,
    logger,
    reply: undefined,
  },
);
const poller = new MaxPoller({
  bot,
  client,
  redis: context.redis,
  keys: { lock: context.keys.mxPollLock, marker: context.keys.mxPollMarker(maxTokenDigest(token)) },
  lockMs: config.maxPollLockMs,
  logger,
  backoffMs: 500,
});
poller.start();
shutdown.add('max poller', async () => {
  await poller.stop();
  await bot.idle();
  await client.close();
});
process.stdout.write('{"msg":"ready"}\n');
const signal = await shutdown.untilSignal();
await shutdown.run(signal);
shutdown.exitSoon();
