/**
 * The confirmation mail of an e-mail sign-up (job `confirm` on the e-mail queue): it names the sign-up only; the
 * job opens its sealed address, says what it subscribes to, and links the confirmation page with the sign-up's
 * token (a MAC of its id: nothing secret travels in the job). A sign-up that expired or was confirmed meanwhile
 * sends nothing. The relay's answers mean what they mean for change mails (notify/email/outcome.ts): a 4xx is
 * retried with backoff, the relay slowing us down pauses the queue, our login or sender refused disables the
 * channel and keeps the job, and an address refused for good forgets the sign-up.
 *
 * One job per sign-up (the job's id is the sign-up's), so asking twice queues two sign-ups, never one mail twice.
 * A worker killed after the relay took the mail sends it again when the job runs again: harmless, the link is the
 * same.
 */
import type { Job, JobsOptions, Queue } from 'bullmq';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { CONFIRM_PATH, type EmailChannel, tokenUrl } from '../notify/email/channel.ts';
import { confirmationMail } from '../notify/email/message.ts';
import type { ChannelStates } from '../store/channel-states.ts';
import type { Mailboxes } from '../store/mailboxes.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import { type ChannelSendTuning, channelGate } from './channel-send.ts';
import { EMAIL_JOB, type EmailConfirmJobData } from './contract.ts';
import { channelJobOptions, type Queues } from './queues.ts';

/** Retries of a confirmation mail: those of change mails (hours of backoff, past a greylisting relay's refusals). */
export const CONFIRM_JOB_OPTIONS: JobsOptions = channelJobOptions('email');

/** Queues the confirmation mail of a sign-up (once per sign-up: the job's id is its id). */
export async function enqueueConfirmation(queues: Pick<Queues, 'email'>, pendingId: string): Promise<void> {
  await queues.email.add(EMAIL_JOB.confirm, { pendingId }, { ...CONFIRM_JOB_OPTIONS, jobId: `confirm-${pendingId}` });
}

/** What the confirmation job uses. */
export interface EmailConfirmDeps {
  readonly config: Pick<Config, 'publicUrl' | 'mailDigestTime'>;
  readonly mailboxes: Pick<Mailboxes, 'pending' | 'confirmToken' | 'forgetPending'>;
  readonly snapshots: Pick<SnapshotStore, 'snapshot'>;
  readonly queues: { readonly email: Pick<Queue, 'rateLimit'> };
  readonly notify: {
    readonly states: Pick<ChannelStates, 'disable' | 'enable' | 'disabled' | 'takeProbe' | 'probeLeft'>;
  };
  readonly logger: Logger;
  /** Epoch ms: when the channel was disabled. */
  readonly now: () => number;
}

/** What a confirmation job came to. */
export type EmailConfirmResult = { outcome: 'sent' | 'expired' | 'refused' };

/**
 * The processor of confirmation mails, sent through `channel` (its relay), past the channel core's gate
 * (channel-send.ts): while the e-mail channel is disabled (our login or sender refused) one send at a time tries
 * it, the others wait without using an attempt, and the first success puts it back on.
 */
export function confirmationProcessor(
  ctx: EmailConfirmDeps,
  channel: Pick<EmailChannel, 'sendMail' | 'messageId'>,
  tuning: Pick<ChannelSendTuning, 'disabledRetryMs'> = {},
): (job: Job<EmailConfirmJobData>, token?: string, signal?: AbortSignal) => Promise<EmailConfirmResult> {
  const gate = channelGate(ctx, 'email', tuning);
  return async (job, token, signal) => {
    const { pendingId } = job.data;
    const log = ctx.logger.child({ channel: 'email', jobId: job.id, attempt: job.attemptsMade + 1 });
    const signUp = await ctx.mailboxes.pending(pendingId);
    if (signUp === undefined) return { outcome: 'expired' };
    const disabled = await gate.admit(job, token);
    const content = confirmationMail({
      name: await timetableName(ctx, signUp.source),
      confirmUrl: tokenUrl(ctx.config.publicUrl, CONFIRM_PATH, ctx.mailboxes.confirmToken(pendingId)),
      options: signUp.options,
      digest: signUp.digest,
      digestTime: ctx.config.mailDigestTime,
    });
    const sent = await channel.sendMail(
      { to: signUp.address, ...content, messageId: channel.messageId(`confirm|${pendingId}`), date: new Date() },
      signal,
    );
    switch (sent.kind) {
      case 'sent':
        log.info({ source: signUp.source }, 'sent an e-mail confirmation');
        await gate.accepted(disabled, log);
        return { outcome: 'sent' };
      case 'gone':
        // Nobody can confirm it: the address is forgotten now rather than in 48 h.
        await ctx.mailboxes.forgetPending(pendingId);
        log.info({ source: signUp.source, reason: sent.reason }, 'the relay refused a confirmation mail for good');
        return { outcome: 'refused' };
      default:
        return gate.failed(job, token, log, sent, 'a confirmation mail');
    }
  };
}

/** The timetable's name as its page says it: the stored one, or its kind and number before the first fetch. */
export async function timetableName(ctx: Pick<EmailConfirmDeps, 'snapshots'>, source: SourceKey): Promise<string> {
  const { kind, id } = sourceOf(source);
  if (kind === 'personal') return 'личное расписание';
  const stored = (await ctx.snapshots.snapshot(source))?.name;
  if (stored !== undefined && stored !== '') return stored;
  return kind === 'group' ? `группа ${id}` : `преподаватель ${id}`;
}
