/**
 * The e-mail queue's processor: change mails through the channel core (channel-send.ts: once per delivery, quiet
 * hours and the digest already applied by the fan-out, the relay's answers acted on as every channel's are), and
 * confirmation mails of sign-ups (email-confirm.ts), told apart by the job's name. Both go through the one relay
 * of the e-mail channel, closed when the worker closes.
 */
import type { Job, Processor } from 'bullmq';
import type { ChannelAdapter } from '../notify/channel.ts';
import { isEmailChannel } from '../notify/email/channel.ts';
import { type ChannelSendDeps, type ChannelSendTuning, channelSendProcessor } from './channel-send.ts';
import { type ChannelSendJobData, EMAIL_JOB, type EmailConfirmJobData, type EmailJobData } from './contract.ts';
import { confirmationProcessor, type EmailConfirmDeps } from './email-confirm.ts';

/** What the e-mail queue's jobs use. */
export type EmailQueueDeps = ChannelSendDeps & EmailConfirmDeps;

/** The processor of the e-mail queue, for the e-mail channel of the channel list. */
export function emailProcessor(
  ctx: EmailQueueDeps,
  adapter: ChannelAdapter,
  tuning: ChannelSendTuning = {},
): Processor<EmailJobData> {
  if (!isEmailChannel(adapter)) throw new Error('the e-mail queue needs the e-mail channel');
  const changes = channelSendProcessor(ctx, adapter, tuning);
  const confirmations = confirmationProcessor(ctx, adapter, tuning);
  return async (job, token, signal) =>
    job.name === EMAIL_JOB.confirm
      ? confirmations(job as Job<EmailConfirmJobData>, token, signal)
      : changes(job as Job<ChannelSendJobData>, token, signal);
}
