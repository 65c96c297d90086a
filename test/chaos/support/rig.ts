/**
 * The chaos suite's set-up: every part a real process or server on loopback. A redis-server of the rig's own
 * (AOF on, so it can be killed and started again), the bundled university simulator, the fake Google server,
 * and the service's `api` and `worker` roles as child processes (`timetable-sync api|worker`, as deployed).
 * The test process holds a control context on the same Redis prefix: it connects Google targets and reads
 * what is stored, the way an operator's tools would; it never runs jobs.
 */
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../../src/config.ts';
import { silentLogger } from '../../../src/logger.ts';
import type { ServiceContext } from '../../../src/runtime/context.ts';
import { openServiceContext } from '../../../src/runtime/service-context.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { connectGoogleTarget } from '../../../src/subscriptions/google-connect.ts';
import type { SourceKey } from '../../../src/timetable/source.ts';
import { type FakeGoogle, startFakeGoogle } from '../../../testkit/fake-google/index.ts';
import type { Cleanup, ServiceChild } from '../../../testkit/processes.ts';
import { getUntilOk, rawRequest, spawnRole, tempDir } from '../../../testkit/processes.ts';
import { type RedisProcess, startRedisProcess } from '../../../testkit/redis-process.ts';
import { TimetableEdits } from '../../../testkit/timetable-edits.ts';
import { googleEnv } from '../../google/push-harness.ts';
import { type SimControl, simControl } from '../../upstream/sim-control.ts';

/** A Google target the rig connected. */
export interface RigTarget {
  id: string;
  source: SourceKey;
  calendarId: string;
}

/** A personal subscription signed up through the api. */
export interface RigSubscription {
  id: string;
  source: SourceKey;
  token: string;
  credential: string;
}

/** What the rig starts with. */
export interface RigOptions {
  /** Settings of both roles on top of the rig's. */
  env?: Record<string, string>;
  /** Settings of the worker only (e.g. NODE_OPTIONS for the clock hook). */
  workerEnv?: Record<string, string>;
  /** Extra redis-server settings (`--maxmemory`, …). */
  redisArgs?: string[];
  /** Group sources to publish, and how many of them get a Google target; personal sign-ups. */
  groups?: number;
  targets?: number;
  personal?: number;
}

/** A child of the rig: a role, and how to kill it. */
export interface RigChild extends ServiceChild {
  /** `kill -9`; resolves once the process is gone. */
  kill(): Promise<void>;
}

/** Simulator size: small enough that a whole run of the suite stays within minutes on two cores. */
const SIMULATOR = { seed: 11, groups: 8, employees: 8, users: 4 } as const;

/** The running rig. */
export class Rig {
  readonly sources: SourceKey[] = [];
  readonly targets: RigTarget[] = [];
  readonly subscriptions: RigSubscription[] = [];
  api!: RigChild;
  worker!: RigChild;
  ctx!: ServiceContext;
  readonly sim: SimControl;

  readonly cleanup: Cleanup;
  readonly redis: RedisProcess;
  readonly simulator: RunningSimulator;
  readonly fake: FakeGoogle;
  readonly env: Record<string, string>;
  private readonly workerEnv: Record<string, string>;
  private readonly dir: string;

  private constructor(parts: {
    cleanup: Cleanup;
    redis: RedisProcess;
    simulator: RunningSimulator;
    fake: FakeGoogle;
    env: Record<string, string>;
    workerEnv: Record<string, string>;
    dir: string;
  }) {
    this.cleanup = parts.cleanup;
    this.redis = parts.redis;
    this.simulator = parts.simulator;
    this.fake = parts.fake;
    this.env = parts.env;
    this.workerEnv = parts.workerEnv;
    this.dir = parts.dir;
    this.sim = simControl(parts.simulator.url);
  }

  /** Starts everything, publishes the groups, signs up and connects; every part stops at `cleanup.run()`. */
  static async start(cleanup: Cleanup, options: RigOptions = {}): Promise<Rig> {
    const dir = await tempDir(cleanup, 'chaos');
    const redis = await startRedisProcess(options.redisArgs ?? []);
    cleanup.add('redis', redis.close);
    const simulator = await startSimulator({ port: 0, ...SIMULATOR });
    cleanup.add('simulator', simulator.close);
    const fake = await startFakeGoogle({ seed: 7 });
    cleanup.add('fake google', fake.close);
    const env: Record<string, string> = {
      REDIS_URL: redis.url,
      REDIS_PREFIX: `chaos-${randomBytes(4).toString('hex')}`,
      UNIVERSITY_API_URL: simulator.url,
      ADMIN_TOKEN: randomBytes(24).toString('hex'),
      SECRET_KEY: randomBytes(32).toString('hex'),
      LOG_LEVEL: 'warn',
      DATA_DIR: dir,
      REFRESH_ATTEMPTS: '6',
      REFRESH_BACKOFF: '500ms',
      CONFIRM_DELAY: '1s',
      // The scheduler's tick is what brings a source back after its retries ran out: the shortest allowed.
      REFRESH_INTERVAL: '1m',
      ...googleEnv(fake),
      ...options.env,
    };
    const rig = new Rig({ cleanup, redis, simulator, fake, env, workerEnv: options.workerEnv ?? {}, dir });
    const opened = openServiceContext({
      config: loadConfig(env, ['UNIVERSITY_API_URL', 'REDIS_URL']),
      logger: silentLogger(),
      redis: redis.url,
      role: 'chaos-control',
    });
    cleanup.add('control context', opened.close);
    rig.ctx = opened.context;
    rig.api = await rig.spawn('api');
    rig.worker = await rig.spawn('worker');
    await rig.populate(options.groups ?? 3, options.targets ?? 2, options.personal ?? 2);
    return rig;
  }

  /** Starts a role as a child process on the rig's settings. */
  async spawn(role: 'api' | 'worker', env: Record<string, string> = {}): Promise<RigChild> {
    const extra = role === 'worker' ? this.workerEnv : {};
    const child = await spawnRole(this.cleanup, role, { ...this.env, ...extra, ...env }, this.dir);
    return { ...child, kill: () => killPid(child.pid) };
  }

  /** Publishes groups through their feeds, signs people up through the api, connects Google targets. */
  private async populate(groups: number, targets: number, personal: number): Promise<void> {
    const listed = (await this.sim.groups()).sort((a, b) => a.entryCount - b.entryCount || a.id - b.id);
    for (const group of listed.slice(0, groups)) {
      await getUntilOk(`${this.api.url}/feeds/groups/${group.id}.ics`);
      this.sources.push(`group:${group.id}`);
    }
    for (const user of (await this.sim.users()).slice(0, personal)) {
      const answer = await rawRequest(`${this.api.url}/api/subscriptions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ credential: user.token }),
      });
      if (answer.status !== 201) throw new Error(`sign-up answered ${answer.status}: ${answer.body.toString()}`);
      const body = JSON.parse(answer.body.toString()) as { id: string; source: SourceKey; token: string };
      await getUntilOk(`${this.api.url}/feeds/personal/${body.token}.ics`);
      this.subscriptions.push({ ...body, credential: user.token });
    }
    for (const source of this.sources.slice(0, targets)) await this.connect(source);
  }

  /** Connects a new Google account's calendar to `source` (its first push is queued, not awaited). */
  async connect(source: SourceKey): Promise<RigTarget> {
    const { refreshToken } = this.fake.addUser();
    const connected = await connectGoogleTarget(this.ctx, { source, refreshToken });
    const target = { id: connected.id, source, calendarId: connected.calendarId };
    this.targets.push(target);
    return target;
  }

  /** `POST /admin/resync` of every source, as the scheduler's tick or an operator would. */
  async resyncAll(): Promise<number[]> {
    const statuses: number[] = [];
    for (const source of [...this.sources, ...this.subscriptions.map((s) => s.source)]) {
      const answer = await rawRequest(`${this.api.url}/admin/resync`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.env.ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ source }),
      }).catch(() => ({ status: 0 }));
      statuses.push(answer.status);
    }
    return statuses;
  }

  /** Deletes the first class of each group source in the simulator (a change every feed must show). */
  async dropOneClassEach(): Promise<void> {
    for (const source of this.sources) {
      // Read from the simulator itself: the service's client would need Redis (its rate limit), which a
      // scenario may have taken away.
      const entries = await new TimetableEdits(this.simulator.url, Number(source.split(':')[1])).entries();
      const id = Math.min(...entries.map((entry) => Number(entry.id)));
      if (Number.isFinite(id)) await this.sim.deleteEntry(id);
    }
  }

  /** The feed URL of a source on the current api. */
  feedUrl(source: SourceKey): string {
    const [kind, id] = source.split(':');
    if (kind === 'group') return `${this.api.url}/feeds/groups/${id}.ics`;
    const subscription = this.subscriptions.find((s) => s.source === source);
    return `${this.api.url}/feeds/personal/${subscription?.token}.ics`;
  }

  /** Every source the rig's checks cover: groups and personal subscriptions. */
  allSources(): SourceKey[] {
    return [...this.sources, ...this.subscriptions.map((s) => s.source)];
  }
}

/** Whether the process `pid` still runs (signal 0 only checks). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGKILL to `pid`; resolves once it is gone (polls, since the spawning code holds the child handle). */
async function killPid(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return;
  }
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (!isRunning(pid)) return;
    await new Promise((wake) => setTimeout(wake, 25));
  }
  throw new Error(`process ${pid} still alive 10 s after SIGKILL`);
}
