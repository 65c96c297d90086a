/**
 * How each notification channel stands, as admins (`GET /admin/channels`) and the metrics see it: `on` (configured
 * and sending), `disabled` (configured, but the other side refuses our own credentials: a revoked bot token, SMTP
 * AUTH refused; with the reason and since when, its messages waiting), or `off` (not configured here). The state
 * is the deployment's (store/channel-states.ts): the send job of whichever worker meets the refusal disables the
 * channel, and the first send that succeeds again, or a worker's ask without sending (jobs/channel-probe.ts),
 * puts it back on.
 */
import type { ChannelDisabled } from '../store/channel-states.ts';
import type { ChannelName } from './channel.ts';

/** What a channel is, as admins see it. */
export type ChannelStateName = 'on' | 'disabled' | 'off';

/** One channel's state: its name, whether it is configured, and why it is disabled (if it is). */
export interface ChannelStatus {
  /** A person's channel, or `webhook` (machines; never disabled: a refused webhook is disabled on its own). */
  name: ChannelName | 'webhook';
  /** Whether this deployment configured it. */
  on: boolean;
  state: ChannelStateName;
  /** Why it is disabled: the other side's answer, without credentials. */
  reason?: string;
  /** Since when it is disabled (ISO 8601). */
  since?: string;
}

/** A channel's status from whether it is configured and what the state store says (pure). */
export function channelStatus(
  name: ChannelStatus['name'],
  on: boolean,
  disabled: ChannelDisabled | undefined,
): ChannelStatus {
  if (!on) return { name, on, state: 'off' };
  if (disabled === undefined) return { name, on, state: 'on' };
  return { name, on, state: 'disabled', reason: disabled.reason, since: new Date(disabled.since).toISOString() };
}

/** The states of `channels` (their `name` and `on`) read from `states`, in the list's order. */
export async function channelStatuses(
  channels: readonly { readonly name: ChannelName; readonly on: boolean }[],
  states: { disabled(channel: string): Promise<ChannelDisabled | undefined> },
): Promise<ChannelStatus[]> {
  return Promise.all(
    channels.map(async ({ name, on }) => channelStatus(name, on, on ? await states.disabled(name) : undefined)),
  );
}
