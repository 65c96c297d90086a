/**
 * Asks a channel disabled for its credentials whether it is mended, without telling anybody anything (Telegram
 * `getMe`, MAX `GET /me`, an SMTP login: the adapter's `probe`), so that a mended channel is on again even when no
 * message waits to try it (a weekend, a holiday): admins and the `tts_channel_state` alert see it at once.
 *
 * Each worker asks at its start and every {@link DISABLED_RETRY_MS} while a channel stays disabled, taking the
 * channel's one try (store/channel-states.ts) as a send of a disabled channel does: one ask or send a minute over
 * the whole deployment. A yes puts the channel on, said once whoever saw it first (a send or a probe).
 */
import { withDeadline } from '../lib/deadline.ts';
import type { Logger } from '../logger.ts';
import type { ChannelAdapter } from '../notify/channel.ts';
import type { ChannelStates } from '../store/channel-states.ts';
import { type ChannelSendTuning, DISABLED_RETRY_MS } from './channel-send.ts';

/** What asking a channel uses. */
export interface ChannelProbeDeps {
  readonly logger: Logger;
  readonly notify: { readonly states: Pick<ChannelStates, 'disabled' | 'enable' | 'takeProbe'> };
}

/**
 * What one ask came to: `on` (it was on, or is again), `disabled` (still refused), `busy` (another send or ask
 * holds the channel's try), `unknown` (the other side could not be asked), `no-probe` (the adapter cannot ask).
 */
export type ProbeResult = 'on' | 'disabled' | 'busy' | 'unknown' | 'no-probe';

/** One ask of `adapter`, if it is disabled and nobody else is trying it. */
export async function probeChannel(
  ctx: ChannelProbeDeps,
  adapter: Pick<ChannelAdapter, 'name' | 'probe'>,
  tuning: Pick<ChannelSendTuning, 'disabledRetryMs'> = {},
  signal?: AbortSignal,
): Promise<ProbeResult> {
  const { states } = ctx.notify;
  const { name } = adapter;
  if (adapter.probe === undefined) return 'no-probe';
  const disabled = await states.disabled(name);
  if (disabled === undefined) return 'on';
  if (!(await states.takeProbe(name, tuning.disabledRetryMs ?? DISABLED_RETRY_MS))) return 'busy';
  const answer = await adapter.probe(signal);
  const log = ctx.logger.child({ channel: name });
  switch (answer.kind) {
    case 'sent':
      if (await states.enable(name))
        log.warn(
          { disabledSince: new Date(disabled.since).toISOString(), probe: true },
          `${name} works again: channel on`,
        );
      return 'on';
    case 'misconfigured':
      log.debug({ reason: answer.reason }, `${name} still refuses our credentials`);
      return 'disabled';
    default:
      log.debug({ answer: answer.kind }, `${name} could not be asked whether it is mended`);
      return 'unknown';
  }
}

/** How long closing waits for an ask in flight (it is aborted first). */
const CLOSE_WAIT_MS = 1_000;

/** The asks of one process: at its start, then every `disabledRetryMs` (one channel after another). */
export class ChannelProbes {
  private readonly ctx: ChannelProbeDeps;
  private readonly adapters: readonly Pick<ChannelAdapter, 'name' | 'on' | 'probe'>[];
  private readonly tuning: Pick<ChannelSendTuning, 'disabledRetryMs'>;
  private readonly aborts = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** Whether the last round failed (logged once until one works again). */
  private failing = false;

  constructor(
    ctx: ChannelProbeDeps,
    adapters: readonly Pick<ChannelAdapter, 'name' | 'on' | 'probe'>[],
    tuning: Pick<ChannelSendTuning, 'disabledRetryMs'> = {},
  ) {
    this.ctx = ctx;
    this.adapters = adapters.filter((adapter) => adapter.on && adapter.probe !== undefined);
    this.tuning = tuning;
  }

  /** Asks now, in the background, and every `disabledRetryMs` after. */
  start(): void {
    if (this.adapters.length === 0 || this.timer !== undefined) return;
    this.tick();
    this.timer = setInterval(() => this.tick(), this.tuning.disabledRetryMs ?? DISABLED_RETRY_MS);
    this.timer.unref();
  }

  /** Stops asking: an ask in flight is aborted and waited for, a second at most. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.aborts.abort();
    if (this.running !== undefined) await withDeadline(this.running, CLOSE_WAIT_MS).catch(() => undefined);
  }

  /** One round, unless one is still running or the process is closing. */
  private tick(): void {
    if (this.running !== undefined || this.aborts.signal.aborted) return;
    this.running = this.round().finally(() => {
      this.running = undefined;
    });
  }

  private async round(): Promise<void> {
    let failed: unknown;
    for (const adapter of this.adapters) {
      if (this.aborts.signal.aborted) return;
      try {
        await probeChannel(this.ctx, adapter, this.tuning, this.aborts.signal);
      } catch (error) {
        failed ??= error;
      }
    }
    if (failed !== undefined && !this.failing && !this.aborts.signal.aborted)
      this.ctx.logger.warn({ err: failed }, 'could not ask a disabled channel whether it is mended; asks again');
    this.failing = failed !== undefined;
  }
}
