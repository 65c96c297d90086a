import type { SourceKey } from '../timetable/source.ts';

/**
 * Every Redis key the service uses, under one prefix (`REDIS_PREFIX`). With a hash-tagged prefix such as
 * `{tts}` every key, BullMQ's included, lands in one Redis Cluster slot, so multi-key scripts stay legal.
 */
export interface RedisKeys {
  /** BullMQ's prefix for the queues. */
  readonly queuePrefix: string;
  /** HASH: a source's state (see the registry). */
  source(key: SourceKey): string;
  /** ZSET: active sources, scored by when a feed of theirs was last requested (ms). */
  readonly activeSources: string;
  /** ZSET: every registered source, scored by when it was first activated (ms); the admin table pages it. */
  readonly knownSources: string;
  /** SET: sources whose feed is currently marked stale. */
  readonly staleSources: string;
  /** STRING: the last good fetch, normalised, packed (compressed JSON, lib/packed-json.ts). */
  snapshot(key: SourceKey): string;
  /** STRING: what the feed last published (digests, sequences, cancelled occurrences), packed. */
  published(key: SourceKey): string;
  /**
   * SET: every subgroup (`s:<n>`) and kind (`k:<kind>`, lower-cased) the source's timetable has had; a feed
   * option naming one stays valid when the current timetable lacks it (holidays, exams).
   */
  optionValues(key: SourceKey): string;
  /** HASH: the rendered feed's gzip form and its validators (feed-store.ts). */
  feed(key: SourceKey): string;
  /** LIST: the newest changes first, at most 20, each packed in at most 1.5 KB (change-bounds.ts). */
  changes(key: SourceKey): string;
  /** STRING: a personal source's study plan, packed: the last good one, and how its last fetch went. */
  studyPlan(key: SourceKey): string;
  /**
   * HASH: what refreshes taught about how sources explain each other (source-relations.ts): `group-names`,
   * `group-views`, `group-entries`, `group-members`, `elective-students`, and the buckets `member-of:<n>` and
   * `electives-of:<n>`.
   */
  relations(part: string): string;
  /** HASH: source → what the upstream said when it answered that the source does not exist (registry.ts). */
  readonly missingSources: string;
  /** ZSET: the sources of {@link missingSources}, scored by when that stops being remembered (ms). */
  readonly missingSourcesExpiry: string;
  /** HASH: a personal subscription. */
  subscription(id: string): string;
  /** STRING: subscription id, keyed by the SHA-256 of its secret feed token. */
  subscriptionToken(tokenHash: string): string;
  /** ZSET: the live feed token hashes of a subscription, scored by when each was last used (ms). */
  subscriptionTokens(id: string): string;
  /** ZSET: the browser session hashes of a subscription, scored by when each expires (ms). */
  subscriptionSessions(id: string): string;
  /** STRING with a TTL: subscription id, keyed by the SHA-256 of a browser session's secret. */
  subscriptionSession(sessionHash: string): string;
  /** STRING: the subscription of one owner, `user:<university user id>` or `credential:<keyed digest>`. */
  subscriptionOwner(owner: string): string;
  /** STRING with a TTL: a credential the university accepted, keyed by its keyed digest (known-credentials.ts). */
  knownCredential(digest: string): string;
  /** ZSET with a TTL: keyed digests of credentials the university accepted from one client, scored by when (ms). */
  acceptedFrom(client: string): string;
  /** STRING: set once the subscriptions made before owners were indexed have been indexed. */
  readonly subscriptionOwnersIndexed: string;
  /** STRING: set once the state stored as plain JSON by earlier releases has been packed (state-packing.ts). */
  readonly statePacked: string;
  /** STRING: set once the identity and brotli forms of feeds stored before have been dropped. */
  readonly feedFormsDropped: string;
  /** STRING: a counter written before each wait for the disk; the wait is for this write (redis-durability.ts). */
  readonly durabilityMarker: string;
  /** SET: sources whose last publication changed something and whose push jobs are not queued yet. */
  readonly pushOwed: string;
  /** SET: the push targets (Google calendars) of a source. */
  sourceTargets(key: SourceKey): string;
  /** HASH: a Google push target (calendar, sealed refresh token, status, last push). */
  googleTarget(id: string): string;
  /** HASH: a target's index, event id → digest of what we last wrote there. */
  googleIndex(id: string): string;
  /** ZSET: every Google push target, scored by when it was created (ms); the admin table pages it. */
  readonly googleTargets: string;
  /** ZSET: Google push targets, scored by when their next full reconcile is due (ms). */
  readonly googleTargetsDue: string;
  /** STRING: the target a Google user connected for a source (a second consent reuses it). */
  googleUserTarget(googleUser: string, source: SourceKey): string;
  /** STRING with a TTL: a pending OAuth consent, keyed by the SHA-256 of its `state`. */
  googleOAuthState(stateHash: string): string;
  /** HASH: a Google request budget's token bucket (per Google user, or `global`). */
  googleBudget(name: string): string;
  /** SET: the CalDAV push targets of a source (its own set: the Google fan-out never sees a CalDAV id). */
  sourceCaldavTargets(key: SourceKey): string;
  /** HASH: a CalDAV push target (server, calendar URL, login, sealed app password, status, last push). */
  caldavTarget(id: string): string;
  /** HASH: a CalDAV target's index, resource id → `<digest> <etag>` of what we last wrote there (or a marker). */
  caldavIndex(id: string): string;
  /** ZSET: every CalDAV push target, scored by when it was created (ms); the admin table pages it. */
  readonly caldavTargets: string;
  /** ZSET: CalDAV push targets, scored by when their next full reconcile is due (ms). */
  readonly caldavTargetsDue: string;
  /**
   * STRING with a TTL: a CalDAV server host cooling down after it answered 429, 503 or 504; every worker's
   * requests to the host wait until it expires (store/caldav-host-budget.ts).
   */
  caldavHostCooldown(host: string): string;
  /**
   * HASH with a TTL: a token bucket of a rate limit (`lib/rate-limit.ts`), e.g. `upstream`, `sign-up:total`,
   * `sign-up:client:<address>`, `caldav-host:<host>`; it expires once full again, so idle clients' buckets disappear.
   */
  rateLimit(name: string): string;
  /** ZSET: change sets not yet fanned out, `<source>|<stamp>` scored by the stamp (ms) (notify-outbox.ts). */
  readonly notifyOutbox: string;
  /** STRING with a TTL: one change set of the outbox, packed, written in the publication's own MULTI. */
  notifyOutboxItem(source: SourceKey, stamp: number): string;
  /**
   * STRING with a TTL: one delivery of a change set to one subscriber (`h` = hash of its delivery id): a lease
   * `lease:<owner>` while it is being sent, then `sent`, `dropped` or `empty`, so nobody is told twice.
   */
  notifyDelivery(h: string): string;
  /** HASH: change sets held for one chat and source through the quiet hours, stamp → packed set (notify-outbox.ts). */
  notifyHeld(h: string): string;
  /** HASH: a Telegram chat's subscriptions, source → its options as JSON (telegram-chats.ts). */
  tgChat(chatId: string): string;
  /** SET: the Telegram chats subscribed to a source. */
  tgSourceChats(key: SourceKey): string;
  /** STRING with a TTL: a `/start` payload of a page with hidden kinds → `{source, options}` as JSON. */
  tgLink(id: string): string;
  /** STRING with a TTL: a one-time `/start` payload of a personal page → the subscription id. */
  tgOnce(code: string): string;
  /** STRING with a TTL: the lock of the one process that long-polls Telegram for updates. */
  readonly tgPollLock: string;
  /** STRING with a TTL of a second: a message to this chat was just sent (Telegram allows one a second). */
  tgPace(chatId: string): string;
  /** STRING with a TTL: an update from Telegram already handled (a takeover or retry delivers it again). */
  tgUpdate(updateId: number): string;
  /**
   * STRING with a TTL: the bot's own `getMe` answer as JSON (its username makes the pages' links), per token (by a
   * digest of it, never the token): a new token's bot is asked again.
   */
  tgBotInfo(tokenDigest: string): string;
  /** STRING with a TTL: a chat was told «Слишком часто» and is not told again while it lives. */
  tgFloodWarned(chatId: string): string;
  /**
   * HASH: a notification channel's state (`telegram`, `max`, `email`), present while it is disabled: `state`
   * (`disabled`), `reason`, `since` (epoch ms) (store/channel-states.ts, notify/channel-state.ts): a channel whose
   * own credentials are refused stops sending and says why; absent, the channel is on.
   */
  channelState(channel: string): string;
  /**
   * STRING with a TTL: while a channel is disabled, one send at a time tries whether it is mended (the others
   * wait): the try's slot (store/channel-states.ts).
   */
  channelProbe(channel: string): string;
  /**
   * STRING with a TTL of the channel's pace: a message to this address was just sent. `channelPrefix` is the
   * channel's prefix in delivery ids; Telegram's key is {@link tgPace}'s, which its replies share.
   */
  channelPace(channelPrefix: string, address: string): string;
  /**
   * STRING with a TTL: how many change messages in a row the channel refused as a gone address since it last had
   * one taken (notify/refusal-runs.ts); `channelPrefix` is the channel's prefix in delivery ids. MAX's is
   * {@link mxRefusalsInARow}, the same key.
   */
  channelRefusals(channelPrefix: string): string;
  // MAX bot keys (store/max-chats.ts, notify/max/): add below this line.
  /** HASH: a MAX dialog's subscriptions, source → its options as JSON (max-chats.ts; the dialog's `chat_id`). */
  mxChat(chatId: string): string;
  /** SET: the MAX dialogs subscribed to a source. */
  mxSourceChats(key: SourceKey): string;
  /** STRING with a TTL: the lock of the one process that long-polls MAX for updates. */
  readonly mxPollLock: string;
  /**
   * STRING: the `marker` of MAX's update queue up to which updates were handled, per bot (by a digest of its
   * token): the next poll passes it, which commits what came before (notify/max/poller.ts).
   */
  mxPollMarker(tokenDigest: string): string;
  /** STRING with a TTL: an update from MAX already handled (updates have no id: its message id or type, chat, time). */
  mxUpdate(updateKey: string): string;
  /** STRING with a TTL: the bot's own `GET /me` answer as JSON, per token digest (the pages' links). */
  mxBotInfo(tokenDigest: string): string;
  /** STRING with a TTL: a dialog was told «Слишком часто» and is not told again while it lives. */
  mxFloodWarned(chatId: string): string;
  /** STRING with a TTL: the dialog of a MAX user (a button press in a dialog may come without the dialog's id). */
  mxUserChat(userId: string): string;
  /**
   * STRING with a TTL: how many change messages in a row MAX refused as a gone dialog since it last took one; a
   * run of them is the bot's own trouble, not its users' (notify/max/channel.ts).
   */
  readonly mxRefusalsInARow: string;
  // E-mail keys (store/mailboxes.ts, notify/email/): add below this line.
  /** HASH: a mailbox told of changes by e-mail: `address` (sealed), `hash` (its keyed digest), `created` (mailboxes.ts). */
  mailbox(id: string): string;
  /** HASH: a mailbox's subscriptions, source → `{o: options, d: digest, n: its unsubscribe token's nonce}` as JSON. */
  mailboxSources(id: string): string;
  /** STRING: the mailbox of an address, keyed by the address's keyed digest (never the address). */
  mailboxOfAddress(hash: string): string;
  /** SET: the confirmed mailboxes subscribed to a source (what the fan-out reads). */
  mailSourceBoxes(key: SourceKey): string;
  /** HASH with a TTL of 48 h: a sign-up whose address is not confirmed yet (sealed address, source, options). */
  mailPending(id: string): string;
  /** HASH: a webhook (source, URL, sealed secret, state, reason, created) (webhook-store.ts). */
  webhook(id: string): string;
  /** LIST: a webhook's last delivery attempts, newest first, JSON each. */
  webhookLog(id: string): string;
  /** SET: the webhooks of a source. */
  webhooksOfSource(key: SourceKey): string;
  /** ZSET: every webhook, scored by when it was created (ms). */
  readonly webhooks: string;
  /** ZSET: worker processes, scored by their last heartbeat (ms). */
  readonly workers: string;
  /** Pub/sub channel: the source key of every feed that was stored. */
  readonly feedUpdates: string;
  /** STRING with a TTL: a cached upstream teacher search. */
  employeeSearch(query: string): string;
  /** SET with a TTL: what the callers of a pending follow-up refresh asked for, JSON each (follow-up-asks.ts). */
  followUpAsks(jobId: string): string;
  /** STRING with a TTL: a lock held by one process (e.g. while it upserts job schedulers). */
  lock(name: string): string;
  /** HASH: start date → distinct upstream entries starting on it, over every stored timetable (term-counts.ts). */
  readonly termCounts: string;
  /** HASH: source → its timetable's entries as JSON `{ entry id: start date }`, what it adds to the counts. */
  readonly sourceTermCounts: string;
  /** HASH: `entry id|start date` → how many stored timetables hold that entry (counted once however many). */
  readonly termEntryRefs: string;
  /** SET: sources with odd- or even-week entries, whose feeds a change of term starts re-renders. */
  readonly paritySources: string;
  /** STRING: a counter raised whenever {@link termCounts} changes. */
  readonly termCountsVersion: string;
  /** STRING: the term starts in force as JSON, with the {@link termCountsVersion} they were resolved from. */
  readonly termStarts: string;
  /** HASH: the group directory, group id → name (group-directory.ts). */
  readonly groupDirectory: string;
  /** STRING: a counter raised whenever {@link groupDirectory} changes (search indexes rebuild on it). */
  readonly groupDirectoryVersion: string;
  /** SET: employee ids the university named in timetables or search answers (known-employees.ts). */
  readonly knownEmployees: string;
  /** HASH: the teacher directory, employee id → the employee as JSON (teacher-directory.ts). */
  readonly teacherDirectory: string;
  /** STRING: a counter raised whenever {@link teacherDirectory} changes (search indexes rebuild on it). */
  readonly teacherDirectoryVersion: string;
  /** ZSET: active sources in the freshness planner, scored by when the background should refresh each next (ms). */
  readonly freshnessNext: string;
  /** ZSET: the same sources, scored by when each must be queued at the latest: the wait guarantee (ms). */
  readonly freshnessDeadline: string;
  /** HASH: source → what the planner knows of it, packed in a few bytes (freshness-store.ts). */
  readonly freshnessState: string;
  /** SET: the planner's sources that are parked (explained by other sources), for the gauge. */
  readonly freshnessParked: string;
  /** HASH: fetches of background refreshes started, by reason (`schedule`, `related`): the pacer's spend. */
  readonly freshnessBackgroundFetches: string;
  /**
   * STRING with a TTL: the version of one class (by its id) last spread to the sources that show it (its digest,
   * hex, or `gone`), then the ids of the groups whose students that spread reached (spread-claims.ts).
   */
  spreadClaim(classId: number): string;
  /** Keys of the retired per-timetable counts (before entries were counted once), deleted when counts are seeded. */
  readonly retiredTermCounts: readonly string[];
}

/** The key layout under `prefix`. */
export function redisKeys(prefix: string): RedisKeys {
  return {
    queuePrefix: `${prefix}:q`,
    source: (key) => `${prefix}:source:${key}`,
    activeSources: `${prefix}:sources:active`,
    knownSources: `${prefix}:sources:known`,
    staleSources: `${prefix}:sources:stale`,
    snapshot: (key) => `${prefix}:snapshot:${key}`,
    published: (key) => `${prefix}:published:${key}`,
    optionValues: (key) => `${prefix}:option-values:${key}`,
    feed: (key) => `${prefix}:feed:${key}`,
    changes: (key) => `${prefix}:changes:${key}`,
    studyPlan: (key) => `${prefix}:study-plan:${key}`,
    relations: (part) => `${prefix}:relations:${part}`,
    missingSources: `${prefix}:missing-sources`,
    missingSourcesExpiry: `${prefix}:missing-sources:expiry`,
    subscription: (id) => `${prefix}:subscription:${id}`,
    subscriptionToken: (tokenHash) => `${prefix}:subscription-token:${tokenHash}`,
    subscriptionTokens: (id) => `${prefix}:subscription-tokens:${id}`,
    subscriptionSessions: (id) => `${prefix}:subscription-sessions:${id}`,
    subscriptionSession: (sessionHash) => `${prefix}:subscription-session:${sessionHash}`,
    subscriptionOwner: (owner) => `${prefix}:subscription-owner:${owner}`,
    knownCredential: (digest) => `${prefix}:known-credential:${digest}`,
    acceptedFrom: (client) => `${prefix}:accepted-from:${client}`,
    subscriptionOwnersIndexed: `${prefix}:subscription-owners-indexed`,
    statePacked: `${prefix}:state-packed`,
    feedFormsDropped: `${prefix}:feed-forms-dropped`,
    durabilityMarker: `${prefix}:durability`,
    pushOwed: `${prefix}:push-owed`,
    sourceTargets: (key) => `${prefix}:source-targets:${key}`,
    googleTarget: (id) => `${prefix}:google-target:${id}`,
    googleIndex: (id) => `${prefix}:google-index:${id}`,
    googleTargets: `${prefix}:google-targets`,
    googleTargetsDue: `${prefix}:google-targets:due`,
    googleUserTarget: (googleUser, source) => `${prefix}:google-user-target:${googleUser}:${source}`,
    googleOAuthState: (stateHash) => `${prefix}:google-oauth-state:${stateHash}`,
    googleBudget: (name) => `${prefix}:google-budget:${name}`,
    sourceCaldavTargets: (key) => `${prefix}:source-caldav-targets:${key}`,
    caldavTarget: (id) => `${prefix}:caldav-target:${id}`,
    caldavIndex: (id) => `${prefix}:caldav-index:${id}`,
    caldavTargets: `${prefix}:caldav-targets`,
    caldavTargetsDue: `${prefix}:caldav-targets:due`,
    caldavHostCooldown: (host) => `${prefix}:caldav-host-cooldown:${host}`,
    rateLimit: (name) => `${prefix}:rate:${name}`,
    notifyOutbox: `${prefix}:notify:outbox`,
    notifyOutboxItem: (source, stamp) => `${prefix}:notify:outbox:${source}:${stamp}`,
    notifyDelivery: (h) => `${prefix}:notify:dlv:${h}`,
    notifyHeld: (h) => `${prefix}:notify:held:${h}`,
    tgChat: (chatId) => `${prefix}:tg:chat:${chatId}`,
    tgSourceChats: (key) => `${prefix}:tg:source-chats:${key}`,
    tgLink: (id) => `${prefix}:tg:link:${id}`,
    tgOnce: (code) => `${prefix}:tg:once:${code}`,
    tgPollLock: `${prefix}:tg:poll-lock`,
    tgPace: (chatId) => `${prefix}:tg:pace:${chatId}`,
    tgUpdate: (updateId) => `${prefix}:tg:update:${updateId}`,
    tgBotInfo: (tokenDigest) => `${prefix}:tg:bot-info:${tokenDigest}`,
    tgFloodWarned: (chatId) => `${prefix}:tg:flood-warned:${chatId}`,
    channelState: (channel) => `${prefix}:channel:${channel}:state`,
    channelProbe: (channel) => `${prefix}:channel:${channel}:probe`,
    channelPace: (channelPrefix, address) => `${prefix}:${channelPrefix}:pace:${address}`,
    channelRefusals: (channelPrefix) => `${prefix}:${channelPrefix}:refusals-in-a-row`,
    // MAX bot keys: add below this line.
    mxChat: (chatId) => `${prefix}:mx:chat:${chatId}`,
    mxSourceChats: (key) => `${prefix}:mx:source-chats:${key}`,
    mxPollLock: `${prefix}:mx:poll-lock`,
    mxPollMarker: (tokenDigest) => `${prefix}:mx:poll-marker:${tokenDigest}`,
    mxUpdate: (updateKey) => `${prefix}:mx:update:${updateKey}`,
    mxBotInfo: (tokenDigest) => `${prefix}:mx:bot-info:${tokenDigest}`,
    mxFloodWarned: (chatId) => `${prefix}:mx:flood-warned:${chatId}`,
    mxUserChat: (userId) => `${prefix}:mx:user-chat:${userId}`,
    mxRefusalsInARow: `${prefix}:mx:refusals-in-a-row`,
    // E-mail keys: add below this line.
    mailbox: (id) => `${prefix}:mail:box:${id}`,
    mailboxSources: (id) => `${prefix}:mail:box:${id}:sources`,
    mailboxOfAddress: (hash) => `${prefix}:mail:address:${hash}`,
    mailSourceBoxes: (key) => `${prefix}:mail:source-boxes:${key}`,
    mailPending: (id) => `${prefix}:mail:pending:${id}`,
    webhook: (id) => `${prefix}:webhook:${id}`,
    webhookLog: (id) => `${prefix}:webhook:${id}:log`,
    webhooksOfSource: (key) => `${prefix}:webhooks-of-source:${key}`,
    webhooks: `${prefix}:webhooks`,
    workers: `${prefix}:workers`,
    feedUpdates: `${prefix}:feed-updates`,
    employeeSearch: (query) => `${prefix}:employee-search:${query}`,
    followUpAsks: (jobId) => `${prefix}:follow-up-asks:${jobId}`,
    lock: (name) => `${prefix}:lock:${name}`,
    termCounts: `${prefix}:term-entries:dates`,
    sourceTermCounts: `${prefix}:term-entries:sources`,
    termEntryRefs: `${prefix}:term-entries:refs`,
    paritySources: `${prefix}:term-entries:parity-sources`,
    termCountsVersion: `${prefix}:term-entries:version`,
    termStarts: `${prefix}:term-starts`,
    groupDirectory: `${prefix}:group-directory`,
    groupDirectoryVersion: `${prefix}:group-directory:version`,
    knownEmployees: `${prefix}:known-employees`,
    teacherDirectory: `${prefix}:teacher-directory`,
    teacherDirectoryVersion: `${prefix}:teacher-directory:version`,
    freshnessNext: `${prefix}:freshness:next`,
    freshnessDeadline: `${prefix}:freshness:deadline`,
    freshnessState: `${prefix}:freshness:state`,
    freshnessParked: `${prefix}:freshness:parked`,
    freshnessBackgroundFetches: `${prefix}:freshness:background-fetches`,
    spreadClaim: (classId) => `${prefix}:freshness:spread:${classId}`,
    retiredTermCounts: [`${prefix}:term-counts`, `${prefix}:term-counts:sources`],
  };
}
