/**
 * MAX as a channel of the channel core (notify/channel.ts): its subscribers are the dialogs of store/max-chats.ts,
 * and a change message is one HTML message (MAX reads Telegram's `<b>` and `<a href>`; `& < >` escaped), at most
 * MAX's 4000 characters, through the client's shared rate. What MAX's answers mean is sender.ts's.
 *
 * A run of refusals is not its people's doing. MAX answers `403 chat.denied` to every dialog of a bot that is not
 * through moderation or was suspended, so such a wave would unsubscribe everybody at once. The channel therefore
 * counts, over every worker, the change messages MAX refused as gone since it last took one. The first
 * {@link WAVE_REFUSALS} of a run are the people's (one who stopped the bot is unsubscribed, as they should be;
 * in a fan-out, dialogs that stopped the bot are scattered among those that did not: with one in five gone, a run
 * of six comes once in some 15,000 messages). A longer run is taken for the bot's trouble: each refusal is then
 * `misconfigured` (the core disables the channel with that reason, keeps every message, and tries one a minute)
 * until MAX takes a message again, which ends the run: at most that many people are unsubscribed by a wave.
 */
import type { Config } from '../../config.ts';
import type { RedisClient } from '../../lib/redis-target.ts';
import type { RedisKeys } from '../../store/keys.ts';
import type { ChannelAdapter } from '../channel.ts';
import { type ChatStore, chatSubscribers } from '../chat-subscribers.ts';
import { RefusalRuns } from '../refusal-runs.ts';
import { formatChangeMessage } from '../telegram/message.ts';
import { MAX_TEXT_LENGTH, type MaxClient, type MaxClientSettings, maxClientOf } from './client.ts';
import { MaxApiError, MaxNetworkError } from './errors.ts';
import { MaxSender, outcomeOfError } from './sender.ts';

/** At most two messages a second to one dialog (dev.max.ru, POST /messages). */
export const MAX_PACE_MS = 500;
/** Refusals in a row the channel takes for the people's own; beyond them, a wave (see the module comment). */
export const WAVE_REFUSALS = 5;

/** What the MAX channel is built over. */
export interface MaxChannelDeps {
  readonly config: MaxClientSettings & Pick<Config, 'maxBotToken'>;
  readonly chats: ChatStore;
  readonly redis: RedisClient;
  readonly keys: Pick<RedisKeys, 'rateLimit' | 'mxRefusalsInARow'>;
  /**
   * The client, made on the first send (a process that sends nothing makes none); default the settings'. One
   * without `me` (a test's) cannot tell whether MAX takes the token: only a send then turns the channel on again.
   */
  readonly client?: () => Pick<MaxClient, 'send'> & Partial<Pick<MaxClient, 'me'>>;
}

/** The MAX channel: on when `MAX_BOT_TOKEN` is set. */
export function maxChannel(deps: MaxChannelDeps): ChannelAdapter {
  const { chats, config } = deps;
  let client: (Pick<MaxClient, 'send'> & Partial<Pick<MaxClient, 'me'>>) | undefined;
  const clientOf = () => {
    client ??= deps.client?.() ?? maxClientOf(config, deps.redis, deps.keys);
    return client;
  };
  let sender: MaxSender | undefined;
  const waves = new RefusalRuns(deps.redis, deps.keys.mxRefusalsInARow, {
    limit: WAVE_REFUSALS,
    wave: (run, last) =>
      `MAX refused ${run} dialogs in a row (the last: ${last}): the bot may not be through moderation ` +
      'or may be suspended on the MAX platform; nobody is unsubscribed until MAX takes a message again',
  });
  return {
    name: 'max',
    on: config.maxBotToken !== undefined,
    paceMs: MAX_PACE_MS,
    ...chatSubscribers(chats),
    send: async (message, signal) => {
      sender ??= new MaxSender(clientOf());
      const html = formatChangeMessage(message.told, {
        pageUrl: message.pageUrl,
        subgroup: message.subgroup,
        limit: MAX_TEXT_LENGTH,
      });
      return waves.judge(await sender.send(message.address, html, signal));
    },
    // `GET /me`: whether MAX takes the token now, without writing to anybody.
    probe: async (signal) => {
      // `GET /me` answers a bot that is suspended or not through moderation too: a wave's end is a message taken.
      if (Number(await deps.redis.get(deps.keys.mxRefusalsInARow)) > WAVE_REFUSALS)
        return { kind: 'failed', permanent: false, reason: 'MAX refused a wave of dialogs: a message must go through' };
      const asking = clientOf();
      if (asking.me === undefined) return { kind: 'failed', permanent: false, reason: 'this client cannot ask MAX' };
      try {
        await asking.me(signal);
        return { kind: 'sent', messageId: '' };
      } catch (error) {
        if (error instanceof MaxApiError || error instanceof MaxNetworkError) return outcomeOfError(error);
        return { kind: 'failed', permanent: false, reason: `GET /me: ${(error as Error).message}` };
      }
    },
  };
}
