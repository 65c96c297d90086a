import type { CalDavServices } from '../caldav/caldav-services.ts';
import type { Config } from '../config.ts';
import type { GoogleServices } from '../google/google-services.ts';
import type { Queues } from '../jobs/queues.ts';
import type { DiskWaiter } from '../lib/redis-durability.ts';
import type { RedisOutageLog } from '../lib/redis-outage.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import type { NotifyServices } from '../notify/notify-services.ts';
import type { PushAdapter } from '../push/adapter.ts';
import type { FeedStore } from '../store/feed-store.ts';
import type { FreshnessStore } from '../store/freshness-store.ts';
import type { GroupDirectory } from '../store/group-directory.ts';
import type { RedisKeys } from '../store/keys.ts';
import type { KnownCredentials } from '../store/known-credentials.ts';
import type { KnownEmployees } from '../store/known-employees.ts';
import type { Mailboxes } from '../store/mailboxes.ts';
import type { SourceRegistry } from '../store/registry.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import type { SourceRelations } from '../store/source-relations.ts';
import type { SpreadClaims } from '../store/spread-claims.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import type { TeacherDirectory } from '../store/teacher-directory.ts';
import type { TermCountStore } from '../store/term-counts.ts';
import type { WebhookStore } from '../store/webhook-store.ts';
import type { UniversityClient } from '../upstream/client.ts';
import type { Metrics } from './metrics.ts';

/**
 * Everything the roles share, built once by the composition root and passed down as one parameter object
 * (no module singletons). Tests build their own.
 */
export interface ServiceContext {
  readonly config: Config;
  readonly logger: Logger;
  /** Commands connection (not used for blocking calls or subscriptions). */
  readonly redis: RedisClient;
  /** The process's one log of Redis outages: every connection and worker reports its Redis errors here. */
  readonly redisOutage: RedisOutageLog;
  /**
   * Waits for writes made so far to be on Redis's disk (a secret shown once must survive a crash), on a
   * connection of its own that it opens on first use: its WAITAOF never blocks `redis`.
   */
  readonly disk: Pick<DiskWaiter, 'wait'>;
  readonly keys: RedisKeys;
  readonly registry: SourceRegistry;
  readonly snapshots: SnapshotStore;
  /** The freshness planner: each active source's next background refresh, its deadline, what was learnt. */
  readonly freshness: FreshnessStore;
  /** Start-date counts of every stored timetable: the deployment's term starts. */
  readonly termCounts: TermCountStore;
  readonly feeds: FeedStore;
  readonly subscriptions: SubscriptionStore;
  /** Credentials the university accepted, by keyed digest: never refused by the sign-up failure limits. */
  readonly knownCredentials: KnownCredentials;
  /** Study groups by id and name, for finding a group by name. */
  readonly directory: GroupDirectory;
  /** Employee ids the university named: a first request for one goes first when the limits run short. */
  readonly knownEmployees: KnownEmployees;
  /** Teachers by id and name, from the timetables read and the university's search: the search on `/` and the lookup. */
  readonly teachers: TeacherDirectory;
  readonly queues: Queues;
  /** How sources explain each other, as refreshes learn it (freshness: related refreshes and parking). */
  readonly relations: SourceRelations;
  /** Which refresh spreads each change (store/spread-claims.ts). */
  readonly spreadClaims: SpreadClaims;
  /** The university for refresh jobs: the refresh pool, `UPSTREAM_TIMEOUT`. */
  readonly upstream: UniversityClient;
  /**
   * The university for calls made inside HTTP requests (sign-up, credential replacement, teacher search): its
   * own small connection pool, short timeouts and a bound on calls in flight, so that slow or many such calls
   * never hold the connections refreshes use.
   */
  readonly requestUpstream: UniversityClient;
  /** Google push: targets, index, request budget, OAuth and calendars. */
  readonly google: GoogleServices;
  /** CalDAV push: targets, their indexes, the per-host budget, and clients that wait for it. */
  readonly caldav: CalDavServices;
  /** Every registered calendar kind's push adapter (runtime/push-kinds.ts): what the push jobs go through. */
  readonly pushKinds: readonly PushAdapter[];
  /** Webhooks of integrators: URL, sealed secret, state and last delivery attempts. */
  readonly webhooks: WebhookStore;
  /** Change notifications: the outbox, the Telegram chats, the pages they link. */
  readonly notify: NotifyServices;
  /** E-mail notifications' mailboxes (addresses sealed) and sign-ups waiting for their confirmation. */
  readonly mailboxes: Mailboxes;
  readonly metrics: Metrics;
  /** Epoch ms; tests pass their own clock. */
  readonly now: () => number;
  /**
   * Real time, epoch ms (`Date.now` unless a test passes its own): for stamps a party outside checks against its
   * own clock, such as a webhook's signed `webhook-timestamp`. The service clock {@link now} may be a simulated
   * date in tests (the simulator's timetable dates); a receiver's clock is not.
   */
  readonly wallClock: () => number;
}
