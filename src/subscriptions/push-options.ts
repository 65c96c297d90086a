/**
 * Changing the feed options a connected calendar follows (subgroup, hidden kinds, reminder, title), for every
 * kind: the options are stored on the target and a push is queued, which writes only the difference (the
 * events of the other subgroup deleted, the titles that changed patched), as after any refresh.
 */
import { enqueuePush, type Queues } from '../jobs/queues.ts';
import type { Logger } from '../logger.ts';
import type { PushTarget, TargetKind } from '../store/push-target-record.ts';
import type { PushTargetStore } from '../store/push-target-store.ts';
import type { SubscriberOptions } from '../timetable/types.ts';

/** What {@link changePushOptions} uses. */
export interface PushOptionsDeps {
  readonly queues: Pick<Queues, 'pushQueue'>;
  readonly logger: Logger;
}

/** A calendar kind as an options change sees it. */
export interface OptionsKind {
  readonly kind: TargetKind;
  readonly targets: Pick<PushTargetStore, 'get' | 'updateOptions'>;
}

/**
 * Makes target `id` follow `options` (validated already, against its timetable too) and queues the push that
 * applies them. Answers the target as it is now, or undefined when there is none.
 */
export async function changePushOptions(
  ctx: PushOptionsDeps,
  kind: OptionsKind,
  id: string,
  options: SubscriberOptions,
): Promise<PushTarget | undefined> {
  if (!(await kind.targets.updateOptions(id, options))) return undefined;
  const target = await kind.targets.get(id);
  if (target === undefined) return undefined;
  ctx.logger.info({ target: id, kind: kind.kind, source: target.source }, 'push target options changed');
  await enqueuePush(ctx.queues, kind.kind, id, target.source, 'refresh');
  return target;
}
