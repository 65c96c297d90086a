/**
 * The registry of calendar kinds the service pushes to. A kind is a folder of its own (its client, its
 * credential, how to read its server's errors) with an adapter (push/adapter.ts); registering it is one line
 * here. The publication's fan-out, the scheduler's due scan, the workers and the job lookups all go through
 * this list, so none of them names a kind.
 */
import { type CalDavPushDeps, caldavPush } from '../caldav/caldav-push.ts';
import { type GooglePushDeps, googlePush } from '../google/google-push.ts';
import type { PushAdapter } from '../push/adapter.ts';

/** What the adapters are built over: every kind's services, the published timetable, the metrics. */
export type PushKindsDeps = GooglePushDeps & CalDavPushDeps;

/** Every registered calendar kind's adapter, built over `ctx`. */
export function pushKinds(ctx: PushKindsDeps): readonly PushAdapter[] {
  return [googlePush(ctx), caldavPush(ctx)];
}
