/**
 * The upgrade fixtures: a Redis filled by one version of the service, with what that version answered, read by
 * the upgrade test (upgrade-format.integration.test.ts) and written by `scripts/upgrade-fixture.ts`. A fixture
 * carries everything a later version needs to meet the same world again: the simulator's options and the
 * edits made to its timetable, the service clock and settings, and the ids of what was published.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import type { ExportedKey } from './redis-export.ts';

/** Where the fixtures live, one `redis-<commit>.json.gz` per stored format the service has had. */
export const FIXTURE_DIR = fileURLToPath(new URL('../fixtures/upgrade/', import.meta.url));

/** The fixture file that a commit's code writes. */
export function fixturePath(commit: string): string {
  return join(FIXTURE_DIR, `redis-${commit}.json.gz`);
}

/** One change made to the simulator's timetable through its control API, replayed in order. */
export interface SimulatorEdit {
  method: 'PATCH' | 'POST' | 'DELETE';
  path: string;
  body?: Record<string, unknown>;
}

/** The codings a feed is asked for in: none, gzip, brotli. */
export const CODINGS = ['identity', 'gzip', 'br'] as const;

/** What the old version answered for one feed URL asked for in one coding. */
export interface ServedAnswer {
  etag: string;
  lastModified: string;
  /** `X-Timetable-Stale`, when the feed was served stale. */
  stale?: string;
  /** SHA-256 of the body once decoded (the same in every coding), hex. */
  sha256: string;
}

/** What the old version answered for one feed URL, by coding. */
export interface ServedFeed {
  path: string;
  answers: Record<(typeof CODINGS)[number], ServedAnswer>;
}

/** A fixture file. */
export interface UpgradeFixture {
  /** The commit whose code wrote it, and the Redis it ran on. */
  madeBy: { commit: string; redisVersion: string };
  /** Settings of the service the old version ran with (`REDIS_URL`, `UNIVERSITY_API_URL` and Google's added). */
  env: Record<string, string>;
  /** The service clock (epoch ms) when the fixture was exported; the new version runs at the same instant. */
  clockMs: number;
  simulator: { seed: number; referenceDate: string; groups: number; employees: number; users: number };
  /** The simulator edits made before the export, in order (the ones of the change log). */
  edits: SimulatorEdit[];
  sources: {
    /** A group with a change log of several changes and a Google push target. */
    group: string;
    teacher: string;
    personal: string;
    /** A group whose last refreshes failed: its feed is served stale. */
    stale: string;
  };
  personal: { subscriptionId: string; feedToken: string };
  google: { targetId: string; calendarId: string };
  /** What the old version answered: feeds by source, change logs by source, the subscription's state. */
  answers: {
    feeds: Record<string, ServedFeed>;
    /** A subscriber variant (`?subgroup=…`/`?exclude=…`) of the group, valid by its option values. */
    variant: ServedFeed;
    changes: Record<string, unknown>;
    /** The admin source table (`GET /admin/sources`). */
    sources: unknown;
    subscription: Record<string, unknown>;
  };
  keys: ExportedKey[];
}

/** Writes a fixture, gzipped, one key per line so that a diff of two versions stays readable. */
export async function writeFixture(path: string, fixture: UpgradeFixture): Promise<void> {
  const { keys, ...rest } = fixture;
  const head = JSON.stringify(rest, null, 1);
  const text = `${head.slice(0, -2)},\n "keys": [\n${keys.map((key) => `  ${JSON.stringify(key)}`).join(',\n')}\n ]\n}\n`;
  await writeFile(path, gzipSync(Buffer.from(text), { level: 9 }));
}

/** Reads a fixture file. */
export async function readFixture(path: string): Promise<UpgradeFixture> {
  return JSON.parse(gunzipSync(await readFile(path)).toString('utf8')) as UpgradeFixture;
}

/** Every fixture file; each is a Redis of its own to upgrade from. */
export async function fixtureFiles(): Promise<string[]> {
  return (await readdir(FIXTURE_DIR))
    .filter((name) => name.endsWith('.json.gz'))
    .map((name) => join(FIXTURE_DIR, name));
}

/** Applies edits to a simulator through its control API. */
export async function applyEdits(simulatorUrl: string, edits: readonly SimulatorEdit[]): Promise<void> {
  for (const edit of edits) await applyEdit(simulatorUrl, edit);
}

/** Applies one edit; answers the simulator's JSON answer. */
export async function applyEdit(simulatorUrl: string, edit: SimulatorEdit): Promise<unknown> {
  const response = await fetch(`${simulatorUrl}${edit.path}`, {
    method: edit.method,
    ...(edit.body ? { body: JSON.stringify(edit.body), headers: { 'content-type': 'application/json' } } : {}),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`simulator ${edit.method} ${edit.path}: ${response.status} ${text}`);
  return text === '' ? undefined : JSON.parse(text);
}

/** A feed URL asked for in one coding: the status, what the answer says, and the body decoded. */
export async function askFeed(
  app: FastifyInstance,
  path: string,
  coding: (typeof CODINGS)[number],
): Promise<{ status: number; answer: ServedAnswer; body: Buffer; coding: string | undefined }> {
  const response = await app.inject({
    method: 'GET',
    url: path,
    headers: coding === 'identity' ? {} : { 'accept-encoding': coding },
  });
  const served = response.headers['content-encoding'];
  const raw = response.rawPayload;
  const body = served === 'gzip' ? gunzipSync(raw) : served === 'br' ? brotliDecompressSync(raw) : raw;
  const stale = response.headers['x-timetable-stale'];
  const answer: ServedAnswer = {
    etag: String(response.headers.etag),
    lastModified: String(response.headers['last-modified']),
    ...(stale === undefined ? {} : { stale: String(stale) }),
    sha256: createHash('sha256').update(body).digest('hex'),
  };
  return { status: response.statusCode, answer, body, coding: typeof served === 'string' ? served : undefined };
}
