/**
 * What hostile CalDAV servers cost a running api: `/healthz`'s worst latency and the api's RSS growth while
 * connects (the admin API, as the public connect page does) are pointed at servers on loopback answering
 * (a) 24 MB of 2,000,000 nested elements and (b) 24 MB of flat elements, three at once each; and how long a
 * server dripping a byte every 2 s holds a connect (the total deadline, `CALDAV_REQUEST_TIMEOUT`).
 *
 * A private Redis, the simulator, one worker and one api as child processes (CALDAV_ALLOW_PRIVATE=true, so
 * that loopback servers are asked).
 *
 *   node scripts/caldav-hostile.ts [--timeout 30s]
 */
import { parseArgs } from 'node:util';
import { rssMiB } from '../bench/support/soak-probes.ts';
import { type HostileDav, type HostileMode, startHostileDav } from '../testkit/hostile-dav.ts';
import {
  Cleanup,
  getUntilOk,
  privateRedis,
  privateSimulator,
  rawRequest,
  type ServiceChild,
  serviceEnvironment,
  sleep,
  spawnRole,
  tempDir,
} from '../testkit/processes.ts';

const { values } = parseArgs({ options: { timeout: { type: 'string', default: '30s' } } });
const ATTACKS = 3;

/** Asks `/healthz` every 20 ms until `done` settles: the worst latency seen. */
async function worstHealthz(api: ServiceChild, done: Promise<unknown>): Promise<number> {
  let worst = 0;
  let over = false;
  void done.finally(() => {
    over = true;
  });
  while (!over) {
    const started = performance.now();
    await rawRequest(`${api.url}/healthz`, { timeoutMs: 60_000 });
    worst = Math.max(worst, performance.now() - started);
    await sleep(20);
  }
  return worst;
}

/** Samples the api's RSS every 50 ms until `done` settles: the peak. */
async function peakRss(api: ServiceChild, done: Promise<unknown>): Promise<number> {
  let peak = 0;
  let over = false;
  void done.finally(() => {
    over = true;
  });
  while (!over) {
    peak = Math.max(peak, (await rssMiB(api.pid)) ?? 0);
    await sleep(50);
  }
  return peak;
}

function connect(api: ServiceChild, token: string, source: string, url: string) {
  return rawRequest(`${api.url}/admin/caldav-targets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ source, url, username: 'u', password: 'app-password-123' }),
    timeoutMs: 120_000,
  });
}

async function attack(api: ServiceChild, token: string, source: string, mode: HostileMode) {
  const servers: HostileDav[] = [];
  for (let i = 0; i < ATTACKS; i++) servers.push(await startHostileDav(mode));
  const before = (await rssMiB(api.pid)) ?? 0;
  const started = performance.now();
  const answers = Promise.all(servers.map((server) => connect(api, token, source, server.url)));
  const [worst, peak, results] = await Promise.all([worstHealthz(api, answers), peakRss(api, answers), answers]);
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(servers.map((server) => server.close()));
  const codes = results.map((answer) => `${answer.status} ${JSON.parse(answer.body.toString()).code}`);
  return { mode: mode.kind, before, peak, growth: peak - before, worstHealthzMs: worst, seconds, codes };
}

async function main(): Promise<void> {
  const cleanup = new Cleanup();
  try {
    const dir = await tempDir(cleanup, 'caldav-hostile');
    const redisUrl = await privateRedis(cleanup, dir);
    const simulator = await privateSimulator(cleanup, { groups: 20 });
    const service = serviceEnvironment(redisUrl, simulator.url);
    const env: Record<string, string> = {
      ...service,
      CALDAV_ALLOW_PRIVATE: 'true',
      CALDAV_RATE_LIMIT: '1000',
      CALDAV_CONNECTS_PER_CLIENT: '1000/1m',
      CALDAV_CONNECTS_TOTAL: '1000/1m',
      CALDAV_REQUEST_TIMEOUT: values.timeout,
    };
    const { groups } = (await (await fetch(`${simulator.url}/_sim/groups`)).json()) as { groups: { id: number }[] };
    const group = groups[0]?.id;
    if (group === undefined) throw new Error('the simulator has no groups');
    const source = `group:${group}`;
    await spawnRole(cleanup, 'worker', env, dir);
    const api = await spawnRole(cleanup, 'api', env, dir);
    // The connect needs the timetable fetched once.
    await getUntilOk(`${api.url}/feeds/groups/${group}.ics`);
    await sleep(3_000);
    const results = [];
    for (const mode of [{ kind: 'nested' }, { kind: 'flat', bytes: 24e6 }] as HostileMode[])
      results.push(await attack(api, service.ADMIN_TOKEN, source, mode));
    const drip = await startHostileDav({ kind: 'drip', everyMs: 2_000 });
    const started = performance.now();
    const dripAnswer = await connect(api, service.ADMIN_TOKEN, source, drip.url);
    const held = (performance.now() - started) / 1000;
    await drip.close();
    for (const r of results)
      process.stdout.write(
        `${r.mode}: ${ATTACKS} at once → ${r.codes.join(', ')} in ${r.seconds.toFixed(2)} s; /healthz worst ` +
          `${r.worstHealthzMs.toFixed(0)} ms; api RSS ${r.before.toFixed(0)} → peak ${r.peak.toFixed(0)} MiB ` +
          `(+${r.growth.toFixed(0)})\n`,
      );
    process.stdout.write(
      `drip (a byte every 2 s): the connect answered ${dripAnswer.status} ` +
        `${JSON.parse(dripAnswer.body.toString()).code} after ${held.toFixed(1)} s ` +
        `(CALDAV_REQUEST_TIMEOUT=${values.timeout}); the server got ${drip.requests} request(s)\n`,
    );
  } finally {
    await cleanup.run();
  }
}

await main();
