/**
 * A virtual-time model of the refresh policies (pure: no Redis, no processes, seconds of CPU for hours of
 * virtual time). It answers what the real benchmark cannot at its size: how the policies compare at the
 * university's scale (20,000 sources at 10 requests/s), and whether the square-root order does better than a
 * plain round or an order in proportion to the rate (Cho & Garcia-Molina).
 *
 * It runs the service's own policy code, not a copy: the next-time formula, the rate estimate and the weight
 * (jobs/freshness-plan.ts), the budget, the pacer's step arithmetic, its deadline lead and overdue bound
 * (jobs/freshness-pacer.ts), the fixed ticks' per-source interval (jobs/schedule.ts) and the planner's first
 * plan (store/freshness-store.ts). What is modelled instead of run: the freshness store's take (due by deadline
 * less the lead first, then lowest next; each taken settled an interval away, as once queued —
 * freshness-take.lua and freshness-settle.lua, here two heaps), the refresh queue (overdue and related before
 * rotation, one waiting job per source, a more urgent ask hurrying a waiting one, a follow-up behind a running
 * one; the upstream rate limit as evenly spaced request slots), the spread claims (store/spread-claims-decide.lua:
 * the version last spread per class, compare and set when a refresh ends) and the learning's rules (related
 * sources, parking), which jobs/freshness-learn.ts decides from the fetched entries, here from the population's
 * structure. The change process makes room changes only: no class disappears, so the rule that only a group
 * records a disappearance is not exercised.
 *
 * The change process is the benchmark's own (freshness-changes.ts `planChanges`); latencies are recorded as the
 * benchmark's (change, feed) pairs and reduced by its ledger (freshness-ledger.ts).
 */
import { backgroundBudget, deadlineLead, OVERDUE_PER_STEP, pacerAllowance } from '../../src/jobs/freshness-pacer.ts';
import {
  changeRate,
  learnedState,
  minRefreshGap,
  nextRefreshDelay,
  PRIOR_RATE_PER_INTERVAL,
  weightOf,
} from '../../src/jobs/freshness-plan.ts';
import { intervalFor } from '../../src/jobs/schedule.ts';
import { createRandom } from '../../src/simulator/random.ts';
import type { FreshnessState, ParkedBy } from '../../src/store/freshness-store.ts';
import { firstPlanAt } from '../../src/store/freshness-store.ts';
import { type PlannedChange, planChanges, type World, type WorldEntry, type WorldUser } from './freshness-changes.ts';
import { type PairRecord, type PhaseLatency, phaseLatency } from './freshness-ledger.ts';

/** The policies the model compares. */
export const MODEL_POLICIES = ['fixed', 'adaptive', 'adaptive-uniform', 'adaptive-linear'] as const;
export type ModelPolicy = (typeof MODEL_POLICIES)[number];

/** How many of each kind are followed, and how the university around them looks. */
export interface ModelSizes {
  groups: number;
  teachers: number;
  usersPerGroup: number;
  /** One student in this many has an elective (taught by a teacher nobody follows). */
  electiveEvery: number;
}

/** The university in small (the benchmark's 2,000 sources) and at full size (20,000). */
export const BENCH_SIZES: ModelSizes = { groups: 150, teachers: 350, usersPerGroup: 10, electiveEvery: 10 };
export const UNIVERSITY_SIZES: ModelSizes = { groups: 1_500, teachers: 3_500, usersPerGroup: 10, electiveEvery: 10 };

/** Groups nobody follows, per followed group: their classes make some followed teachers not covered. */
const UNFOLLOWED_PER_GROUP = 0.5;
/** Share of the followed teachers who also teach in groups nobody follows. */
const TEACHING_OUTSIDE = 0.3;
/** Classes of one group of its own (seminars, labs), and lectures shared with neighbouring groups per group. */
const OWN_CLASSES = 14;
const SHARED_LECTURES = 3;
/** Share of a group's own classes held by subgroup (1 or 2). */
const SUBGROUP_SHARE = 0.3;

/** The modelled university: the benchmark's world, plus which followed teachers are covered by followed groups. */
export interface ModelWorld extends World {
  /** Followed teachers every class of whom shows in a followed group (the learning parks them). */
  covered: ReadonlySet<number>;
  /** Students with an elective (never parked: they differ from their group). */
  withElective: ReadonlySet<number>;
}

/**
 * A seeded university in the proportions: followed groups and half as many nobody follows, each with
 * its own classes (some by subgroup) and lectures shared with up to three neighbouring groups; every class has a
 * teacher, those in unfollowed groups only from a share of the teachers (so those are not covered); ten students
 * per followed group, alternately in subgroup 1 and 2, one in ten with an elective of their own taught by a
 * teacher nobody follows.
 */
export function modelWorld(sizes: ModelSizes, seed: number | string): ModelWorld {
  const random = createRandom(seed, 'freshness-model-world');
  const followedGroups = Array.from({ length: sizes.groups }, (_, index) => index + 1);
  const allGroups = Math.round(sizes.groups * (1 + UNFOLLOWED_PER_GROUP));
  const followed = new Set(followedGroups);
  // Unfollowed groups are interleaved with the followed ones, so that shared lectures mix them.
  const groupIds = random.shuffle(Array.from({ length: allGroups }, (_, index) => index + 1));
  const rankOf = new Map(groupIds.map((id, rank) => [id, rank]));
  const teachers = Array.from({ length: sizes.teachers }, (_, index) => 100_000 + index);
  const outsiders = Array.from({ length: Math.max(1, Math.round(sizes.teachers / 2)) }, (_, i) => 200_000 + i);
  const teachingOutside = teachers.filter(() => random.chance(TEACHING_OUTSIDE));
  const outsidePool = [...teachingOutside, ...outsiders];
  const entries: WorldEntry[] = [];
  // A teacher with a class in no followed group is not covered: no followed group's timetable shows it.
  const uncovered = new Set<number>();
  let nextId = 1;
  const add = (groups: number[], teacher: number, subgroup?: number) => {
    const shown = groups.filter((id) => followed.has(id));
    if (shown.length > 0)
      entries.push({ id: nextId, groups: shown, teacher, ...(subgroup === undefined ? {} : { subgroup }) });
    else uncovered.add(teacher);
    nextId += 1;
  };
  for (const group of groupIds) {
    const pool = followed.has(group) ? teachers : outsidePool;
    for (let n = 0; n < OWN_CLASSES; n++)
      add([group], random.pick(pool), random.chance(SUBGROUP_SHARE) ? random.int(1, 2) : undefined);
    const rank = rankOf.get(group) as number;
    for (let n = 0; n < SHARED_LECTURES; n++) {
      const width = random.int(2, 4);
      const stream = new Set([group]);
      // Its neighbours in the shuffled order (wrapping round), so that a stream mixes followed and unfollowed.
      for (let step = 1; stream.size < width; step++) stream.add(groupIds[(rank + step) % allGroups] as number);
      add([...stream], random.pick(pool));
    }
  }
  const users: WorldUser[] = followedGroups.flatMap((groupId) =>
    Array.from({ length: sizes.usersPerGroup }, (_, k) => ({
      id: groupId * 1_000 + k,
      groupId,
      subgroup: 1 + (k % 2),
    })),
  );
  const withElective = new Set(users.filter((_, index) => index % sizes.electiveEvery === 0).map((user) => user.id));
  for (const id of withElective)
    entries.push({ id: nextId++, groups: [], teacher: random.pick(outsiders), electiveOf: id });
  const covered = new Set(teachers.filter((id) => !uncovered.has(id)));
  return { groups: followedGroups, teachers: new Set(teachers), entries, users, covered, withElective };
}

/** Settings of one model run. */
export interface ModelOptions {
  policy: ModelPolicy;
  refreshIntervalMs: number;
  refreshMaxWaitMs: number;
  upstreamRateLimit: number;
  /** Mean changes per minute (Poisson), the benchmark's other change settings as they are. */
  changesPerMinute: number;
  electiveShare: number;
  zipf: number;
  seed: number | string;
  /** Virtual time before the measured window: the planner learns rates and parking meanwhile (changes go on). */
  warmupMs: number;
  /** Changes made in this window are measured. */
  windowMs: number;
  /** From a fetch to its feed served (fetch, publish, announce). */
  refreshMs: number;
  /**
   * The class-soon factor of every source's weight (the service's is 2, `WEIGHT_FACTOR`: nearly every followed
   * timetable has a class today or tomorrow); the weight is the service's own beside it (`weightOf`: a group is
   * worth its own feed and its students'; no source is pushed to a calendar or told to a chat here).
   */
  weight: number;
  /** The pacer's step (the service's default 250 ms). */
  stepMs: number;
}

/** What one run measured. */
export interface ModelResult {
  policy: ModelPolicy;
  sources: number;
  /** Changes made in the window. */
  changes: number;
  records: PairRecord[];
  latency: PhaseLatency;
  /** Requests to the university per second over the window, and by why. */
  requestsPerSecond: number;
  rotationPerSecond: number;
  parkedPerSecond: number;
  overduePerSecond: number;
  relatedPerSecond: number;
  /**
   * Related refreshes asked per second: every source a spread names (`relatedQueued`), also those answered by a
   * job already waiting or a fetch already under way (no request of their own).
   */
  relatedAskedPerSecond: number;
  /** Changes made in the window whose version was spread more than once (a stale finder spreading it again). */
  spreadAgain: number;
  /** Sources parked at the window's end. */
  parked: number;
  /** Budget B (adaptive) or the fixed ticks' asked rate (Σ 1/interval), requests/s. */
  askedPerSecond: number;
}

type Kind = 'group' | 'teacher' | 'personal';
type Why = 'rotation' | 'parked' | 'overdue' | 'related';

interface Pending {
  record: PairRecord;
  entry: WorldEntry;
}

interface Job {
  source: number;
  reason: 'schedule' | 'related';
  priority: 5 | 6;
  /** Taken by its deadline (queued at the related priority). */
  overdue: boolean;
  started: boolean;
}

interface Source {
  key: string;
  kind: Kind;
  id: number;
  /** What parks it once learnt (personal without elective: its group; covered teacher: groups). */
  explainedBy?: ParkedBy;
  /** Its group (personal). */
  groupIndex?: number;
  state?: FreshnessState;
  next: number;
  deadline: number;
  /** Bumped on every plan: heap entries of an older plan are stale. */
  version: number;
  pending: Pending[];
  waiting?: Job | undefined;
  running: number;
  refreshed: boolean;
}

/** A binary min-heap of (key, seq) with a payload. */
class Heap<T> {
  private readonly keys: number[] = [];
  private readonly seqs: number[] = [];
  private readonly items: T[] = [];
  private seq = 0;

  get size(): number {
    return this.items.length;
  }

  push(key: number, item: T): void {
    this.keys.push(key);
    this.seqs.push(this.seq++);
    this.items.push(item);
    let i = this.items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  topKey(): number {
    return this.keys[0] ?? Number.POSITIVE_INFINITY;
  }

  pop(): T | undefined {
    const top = this.items[0];
    const last = this.items.length - 1;
    if (last < 0) return undefined;
    this.swap(0, last);
    this.keys.pop();
    this.seqs.pop();
    this.items.pop();
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < this.items.length && this.less(left, smallest)) smallest = left;
      if (right < this.items.length && this.less(right, smallest)) smallest = right;
      if (smallest === i) break;
      this.swap(i, smallest);
      i = smallest;
    }
    return top;
  }

  private less(a: number, b: number): boolean {
    const ka = this.keys[a] as number;
    const kb = this.keys[b] as number;
    return ka < kb || (ka === kb && (this.seqs[a] as number) < (this.seqs[b] as number));
  }

  private swap(a: number, b: number): void {
    [this.keys[a], this.keys[b]] = [this.keys[b] as number, this.keys[a] as number];
    [this.seqs[a], this.seqs[b]] = [this.seqs[b] as number, this.seqs[a] as number];
    [this.items[a], this.items[b]] = [this.items[b] as T, this.items[a] as T];
  }
}

/** A FIFO of jobs (BullMQ serves one priority in order). */
class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head++];
    if (this.head > 4_096 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}

type Event =
  | { type: 'step' }
  | { type: 'tick'; source: number }
  | { type: 'change'; change: PlannedChange }
  | { type: 'slot' }
  | { type: 'done'; job: Job; fetched: Pending[] };

/** The next background refresh after a plan, by policy: ours, a plain round, or in proportion to the rate. */
function planDelay(
  policy: ModelPolicy,
  state: FreshnessState,
  settings: Pick<ModelOptions, 'refreshIntervalMs' | 'refreshMaxWaitMs'>,
): { nextMs: number; deadlineMs: number } {
  const own = nextRefreshDelay(state, settings);
  if (state.parkedBy !== undefined || policy === 'adaptive') return own;
  if (policy === 'adaptive-uniform') return { nextMs: own.deadlineMs, deadlineMs: own.deadlineMs };
  // Frequency ∝ rate × weight, normalised as ours: the prior's rate at weight 1 comes back after one interval.
  const c = settings.refreshIntervalMs * PRIOR_RATE_PER_INTERVAL;
  const delay = c / (changeRate(state, settings) * Math.max(state.weight, 0.01));
  const nextMs = Math.round(Math.min(Math.max(delay, minRefreshGap(settings)), own.deadlineMs));
  return { nextMs, deadlineMs: own.deadlineMs };
}

/** Runs one policy over the world in virtual time and measures the changes made in the window. */
export function runModel(world: ModelWorld, options: ModelOptions): ModelResult {
  const { policy, refreshIntervalMs: interval } = options;
  const adaptive = policy !== 'fixed';
  const sources: Source[] = [];
  const index = new Map<string, number>();
  const addSource = (source: Omit<Source, 'next' | 'deadline' | 'version' | 'pending' | 'running' | 'refreshed'>) => {
    index.set(source.key, sources.length);
    sources.push({ ...source, next: 0, deadline: 0, version: 0, pending: [], running: 0, refreshed: false });
  };
  for (const id of world.groups) addSource({ key: `group:${id}`, kind: 'group', id });
  for (const id of world.teachers)
    addSource({
      key: `employee:${id}`,
      kind: 'teacher',
      id,
      ...(world.covered.has(id) ? { explainedBy: 'groups' } : {}),
    });
  for (const user of world.users)
    addSource({
      key: `personal:${user.id}`,
      kind: 'personal',
      id: user.id,
      groupIndex: index.get(`group:${user.groupId}`) as number,
      ...(world.withElective.has(user.id) ? {} : { explainedBy: `group:${user.groupId}` }),
    });
  const members = new Map<number, number[]>();
  for (const user of world.users)
    members.set(user.groupId, [...(members.get(user.groupId) ?? []), index.get(`personal:${user.id}`) as number]);
  const sourceOfFeed = (kind: Kind, id: number) =>
    index.get(kind === 'group' ? `group:${id}` : kind === 'teacher' ? `employee:${id}` : `personal:${id}`) as number;

  const grace = options.refreshMaxWaitMs + 2 * interval;
  const endMs = options.warmupMs + options.windowMs + grace;
  const windowStart = options.warmupMs;
  const windowEnd = options.warmupMs + options.windowMs;
  const plan = planChanges(world, {
    seed: options.seed,
    perMinute: options.changesPerMinute,
    durationMs: endMs,
    electiveShare: options.electiveShare,
    zipf: options.zipf,
    // Each change is tracked by itself (not by a room token a later change would hide): no cooldown needed.
    cooldownMs: 0,
  });
  const entries = new Map(world.entries.map((entry) => [entry.id, entry]));

  const events = new Heap<Event>();
  const at = (time: number, event: Event) => events.push(time, event);
  for (const change of plan) at(change.atMs, { type: 'change', change });

  const settings = { refreshIntervalMs: interval, refreshMaxWaitMs: options.refreshMaxWaitMs };
  const byNext = new Heap<{ source: number; version: number }>();
  const byDeadline = new Heap<{ source: number; version: number }>();
  const setPlan = (s: number, next: number, deadline: number) => {
    const source = sources[s] as Source;
    source.next = next;
    source.deadline = deadline;
    source.version += 1;
    byNext.push(next, { source: s, version: source.version });
    byDeadline.push(deadline, { source: s, version: source.version });
  };
  const random = createRandom(options.seed, 'freshness-model-ticks');
  let asked = 0;
  if (adaptive) {
    // The reconciler's first plan: next refresh and deadline at the same place, spread over one interval.
    for (const [s, source] of sources.entries()) {
      const first = firstPlanAt(source.key, 0, interval);
      setPlan(s, first, first);
    }
    at(0, { type: 'step' });
  } else {
    for (const [s, source] of sources.entries()) {
      const every = intervalFor(source.key, interval);
      asked += 1000 / every;
      at(random.next() * every, { type: 'tick', source: s });
    }
  }

  // The refresh queue and the upstream limiter: one request slot every 1/limit s.
  const related = new Fifo<Job>();
  const rotation = new Fifo<Job>();
  let waitingJobs = 0;
  const gapMs = 1000 / options.upstreamRateLimit;
  let nextSlot = 0;
  let slotEvent = false;
  const spent: Record<Why, number> = { rotation: 0, parked: 0, overdue: 0, related: 0 };
  let askedInWindow = 0;

  /**
   * Queues a refresh (an overdue one at the related priority); false when a job already waiting (or, for a
   * `schedule` ask, running) answers it.
   */
  const enqueue = (s: number, reason: Job['reason'], now: number, overdue = false): boolean => {
    const source = sources[s] as Source;
    const waiting = source.waiting;
    const priority = reason === 'related' || overdue ? 5 : 6;
    if (waiting !== undefined) {
      // One waiting job per source; a more urgent ask hurries a waiting rotation job (its reason stays).
      if (priority === 5 && waiting.priority === 6) {
        waiting.priority = 5;
        related.push(waiting);
      }
      return false;
    }
    // A `schedule` ask while the source is fetched is answered by that fetch; a related one follows it.
    if (reason === 'schedule' && source.running > 0) return false;
    const job: Job = { source: s, reason, priority, overdue, started: false };
    source.waiting = job;
    waitingJobs += 1;
    (priority === 5 ? related : rotation).push(job);
    pump(now);
    return true;
  };

  const nextJob = (): Job | undefined => {
    for (;;) {
      const job = related.shift() ?? rotation.shift();
      if (job === undefined) return undefined;
      // A hurried job sits in both queues: the first one to reach it starts it.
      if (!job.started) return job;
    }
  };

  const pump = (now: number) => {
    while (waitingJobs > 0) {
      if (now < nextSlot) {
        if (!slotEvent) at(nextSlot, { type: 'slot' });
        slotEvent = true;
        return;
      }
      const job = nextJob() as Job;
      job.started = true;
      waitingJobs -= 1;
      const source = sources[job.source] as Source;
      source.waiting = undefined;
      source.running += 1;
      const fetched = source.pending;
      source.pending = [];
      nextSlot = Math.max(nextSlot, now) + gapMs;
      started += 1;
      if (now >= windowStart && now < windowEnd) {
        const why: Why =
          job.reason === 'related'
            ? 'related'
            : job.overdue
              ? 'overdue'
              : source.state?.parkedBy === undefined
                ? 'rotation'
                : 'parked';
        spent[why] += 1;
      }
      at(now + options.refreshMs, { type: 'done', job, fetched });
    }
  };

  /**
   * The sources the learning queues for the classes a refresh spreads: their followed teachers, the followed
   * groups they name, the students of those groups (and of the finder, if a group), the students whose elective
   * they are; not the finder itself.
   */
  const relatedOf = (s: number, spread: readonly WorldEntry[]): Set<number> => {
    const source = sources[s] as Source;
    const groups = new Set<number>(source.kind === 'group' ? [source.id] : []);
    const targets = new Set<number>();
    for (const entry of spread) {
      if (entry.teacher !== undefined && world.teachers.has(entry.teacher))
        targets.add(sourceOfFeed('teacher', entry.teacher));
      for (const id of entry.groups) {
        groups.add(id);
        targets.add(sourceOfFeed('group', id));
      }
      if (entry.electiveOf !== undefined) targets.add(sourceOfFeed('personal', entry.electiveOf));
    }
    for (const id of groups) for (const member of members.get(id) ?? []) targets.add(member);
    targets.delete(s);
    return targets;
  };

  /** The spread claims: per class, the version (change number) last spread, kept until `until`. */
  const claims = new Map<number, { n: number; until: number }>();
  const claimTtl = options.refreshMaxWaitMs + interval;
  /** How many times each change's version was spread. */
  const spreads = new Map<number, number>();
  /**
   * The classes a refresh ending at `now` spreads: those whose version it saw (the last change made before its
   * fetch) is not the one stored, whatever its reason; it stores its own (compare and set, as
   * spread-claims-decide.lua does when the refresh has published).
   */
  const decideSpread = (fetched: readonly Pending[], now: number): WorldEntry[] => {
    const seen = new Map<number, { n: number; entry: WorldEntry }>();
    for (const { record, entry } of fetched)
      if ((seen.get(entry.id)?.n ?? -1) < record.change) seen.set(entry.id, { n: record.change, entry });
    const spread: WorldEntry[] = [];
    for (const [classId, { n, entry }] of seen) {
      const stored = claims.get(classId);
      if (stored !== undefined && stored.until > now && stored.n === n) continue;
      claims.set(classId, { n, until: now + claimTtl });
      spreads.set(n, (spreads.get(n) ?? 0) + 1);
      spread.push(entry);
    }
    return spread;
  };

  /** The groups whose recorded entries explain a source: its group, or every group a teacher's classes name. */
  const explainers = new Map<number, number[]>();
  for (const entry of world.entries)
    if (entry.teacher !== undefined && world.covered.has(entry.teacher)) {
      const s = sourceOfFeed('teacher', entry.teacher);
      explainers.set(s, [...(explainers.get(s) ?? []), ...entry.groups.map((id) => sourceOfFeed('group', id))]);
    }
  for (const [s, source] of sources.entries())
    if (source.groupIndex !== undefined) explainers.set(s, [source.groupIndex]);
  /** Parking is learnt from what the explaining groups' own refreshes recorded: not before each was refreshed. */
  const parkingOf = (s: number): ParkedBy | undefined => {
    const { explainedBy } = sources[s] as Source;
    if (explainedBy === undefined) return undefined;
    return (explainers.get(s) ?? []).every((group) => (sources[group] as Source).refreshed) ? explainedBy : undefined;
  };

  const done = (job: Job, fetched: Pending[], now: number) => {
    const source = sources[job.source] as Source;
    source.running -= 1;
    for (const { record } of fetched) record.arrivedMs ??= now - windowStart;
    source.refreshed = true;
    if (!adaptive) return;
    // Whatever its reason, a refresh spreads the versions nobody spread yet, and counts them in its rate.
    const spread = fetched.length > 0 ? decideSpread(fetched, now) : [];
    if (spread.length > 0) {
      const targets = relatedOf(job.source, spread);
      for (const target of targets) enqueue(target, 'related', now);
      if (now >= windowStart && now < windowEnd) askedInWindow += targets.size;
    }
    // A group's dependents: its students whose refresh recorded them as members.
    const dependents =
      source.kind === 'group'
        ? (members.get(source.id) ?? []).filter((member) => (sources[member] as Source).refreshed).length
        : 0;
    const weight = weightOf({ pushed: false, told: false, classSoon: false, dependents }) * options.weight;
    const state = learnedState(
      source.state,
      now,
      { changed: spread.length > 0, parkedBy: parkingOf(job.source) },
      weight,
      settings,
    );
    source.state = state;
    const { nextMs, deadlineMs } = planDelay(policy, state, settings);
    setPlan(job.source, now + nextMs, now + deadlineMs);
  };

  const lead = deadlineLead({ refreshIntervalMs: interval });
  /**
   * The store's take: those due by their deadline less the lead first (oldest deadline, up to the count or
   * OVERDUE_PER_STEP, whichever is more), then lowest next; each taken is settled an interval away (the
   * provisional mark only matters when a queue fails, which it never does here).
   */
  const take = (now: number, count: number): { source: number; overdue: boolean }[] => {
    const taken: { source: number; overdue: boolean }[] = [];
    const seen = new Set<number>();
    const live = (item: { source: number; version: number }) =>
      (sources[item.source] as Source).version === item.version;
    const overdueMax = Math.max(count, OVERDUE_PER_STEP);
    while (taken.length < overdueMax && byDeadline.topKey() <= now + lead) {
      const item = byDeadline.pop() as { source: number; version: number };
      if (!live(item) || seen.has(item.source)) continue;
      seen.add(item.source);
      taken.push({ source: item.source, overdue: true });
    }
    let rest = count - taken.length;
    while (rest > 0 && byNext.size > 0) {
      const item = byNext.pop() as { source: number; version: number };
      // One taken as overdue is planned anew below, which pushes it again.
      if (!live(item) || seen.has(item.source)) continue;
      seen.add(item.source);
      taken.push({ source: item.source, overdue: false });
      rest -= 1;
    }
    for (const { source } of taken) setPlan(source, now + interval, now + interval);
    return taken;
  };

  let credit = 0;
  /** Background fetches started since the pacer's last step: its spend. */
  let started = 0;
  let lastStep: number | undefined;
  const step = (now: number) => {
    const budget = backgroundBudget(sources.length, {
      refreshIntervalMs: interval,
      upstreamRateLimit: options.upstreamRateLimit,
    });
    asked = budget;
    const elapsedMs = lastStep === undefined ? options.stepMs : Math.min(Math.max(0, now - lastStep), 1_000);
    lastStep = now;
    const allowed = pacerAllowance({
      credit,
      budget,
      elapsedMs,
      spent: started,
      waiting: waitingJobs,
      intervalMs: interval,
    });
    started = 0;
    credit = allowed.credit;
    for (const { source, overdue } of take(now, allowed.count)) enqueue(source, 'schedule', now, overdue);
  };

  const records: PairRecord[] = [];
  while (events.size > 0) {
    const now = events.topKey();
    if (now >= endMs) break;
    const event = events.pop() as Event;
    switch (event.type) {
      case 'step':
        step(now);
        at(now + options.stepMs, event);
        break;
      case 'tick': {
        enqueue(event.source, 'schedule', now);
        at(now + intervalFor((sources[event.source] as Source).key, interval), event);
        break;
      }
      case 'change': {
        const { change } = event;
        const entry = entries.get(change.entryId) as WorldEntry;
        const measured = change.atMs >= windowStart && change.atMs < windowEnd;
        for (const feed of change.feeds) {
          const s = sourceOfFeed(feed.kind, feed.id);
          const record: PairRecord = {
            change: change.n,
            entryId: change.entryId,
            room: change.room,
            personalOnly: change.personalOnly,
            kind: feed.kind,
            source: (sources[s] as Source).key,
            madeMs: change.atMs - windowStart,
          };
          if (measured) records.push(record);
          (sources[s] as Source).pending.push({ record, entry });
        }
        break;
      }
      case 'slot':
        slotEvent = false;
        pump(now);
        break;
      case 'done':
        done(event.job, event.fetched, now);
        break;
    }
  }
  const seconds = options.windowMs / 1000;
  return {
    policy,
    sources: sources.length,
    changes: new Set(records.map((record) => record.change)).size,
    records,
    latency: phaseLatency(records),
    requestsPerSecond: (spent.rotation + spent.parked + spent.overdue + spent.related) / seconds,
    rotationPerSecond: spent.rotation / seconds,
    parkedPerSecond: spent.parked / seconds,
    overduePerSecond: spent.overdue / seconds,
    relatedPerSecond: spent.related / seconds,
    relatedAskedPerSecond: askedInWindow / seconds,
    spreadAgain: [...new Set(records.map((record) => record.change))].filter((n) => (spreads.get(n) ?? 0) > 1).length,
    parked: sources.filter((source) => source.state?.parkedBy !== undefined).length,
    askedPerSecond: asked,
  };
}
