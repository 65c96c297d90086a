import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { type Config, loadConfig, type RequiredSetting, readEnvironment } from '../config.ts';
import { renderIcs } from '../feeds/render-ics.ts';
import { createLogger } from '../logger.ts';
import { calendarName, type TimetableSubject } from '../timetable/calendar-name.ts';
import { dayNumber } from '../timetable/dates.ts';
import { GROUP_WORDING, TEACHER_WORDING } from '../timetable/event-text.ts';
import { expand } from '../timetable/expand.ts';
import {
  countStartDates,
  describeTermStarts,
  resolveTermStarts,
  type TermStart,
  termStartDates,
} from '../timetable/terms.ts';
import type { EntryProblem } from '../timetable/types.ts';
import { decodeBody, FALLBACK_CHARSET } from '../upstream/charset.ts';
import { createUniversityClient } from '../upstream/client.ts';
import { UpstreamError } from '../upstream/errors.ts';
import { parseScheduleResponse, type ScheduleResult } from '../upstream/schemas.ts';
import { isoDate } from '../upstream/values.ts';
import { runningDemoSimulator } from './demo.ts';
import { storedDeploymentTermStarts } from './deployment-terms.ts';
import { CommandError, UsageError } from './errors.ts';
import { idOption } from './id-option.ts';

/** The options of `timetable-sync render`. */
export interface RenderArgs {
  file?: string | undefined;
  group?: string | undefined;
  employee?: string | undefined;
  me?: boolean | undefined;
  from?: string | undefined;
  to?: string | undefined;
}

function subjectOf(args: RenderArgs): TimetableSubject {
  const given = [args.file, args.group, args.employee, args.me ? 'me' : undefined].filter(
    (value) => value !== undefined,
  );
  if (given.length !== 1) throw new UsageError('give exactly one of --file, --group, --employee, --me');
  if (args.file !== undefined) return { kind: 'file', name: basename(args.file).replace(/\.json$/i, '') };
  if (args.me) return { kind: 'personal' };
  if (args.group !== undefined) return { kind: 'group', id: idOption('--group', args.group) };
  return { kind: 'employee', id: idOption('--employee', args.employee) };
}

function dateOption(value: string | undefined, flag: string): string | undefined {
  if (value === undefined) return undefined;
  const parsed = isoDate(value);
  if (!parsed.ok) throw new UsageError(`${flag}: ${parsed.reason}`);
  return parsed.value;
}

/**
 * A saved response as text: UTF-8 (a byte order mark dropped), or windows-1251 (what older deployments
 * answer in) when the bytes are not UTF-8, said on stderr since a file names no charset.
 */
async function readTimetableText(file: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    throw new CommandError(`cannot read ${file}: ${(error as Error).message}`);
  }
  const { text, fallback } = decodeBody(bytes, undefined);
  if (fallback !== undefined)
    process.stderr.write(`warning: ${file} is not valid UTF-8: read as ${FALLBACK_CHARSET}\n`);
  return text;
}

async function readTimetableFile(file: string): Promise<ScheduleResult> {
  const text = await readTimetableText(file);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new CommandError(`${file} is not valid JSON: ${(error as Error).message}`);
  }
  try {
    return parseScheduleResponse(json);
  } catch (error) {
    throw new CommandError(`${file} is not a timetable response: ${(error as Error).message}`);
  }
}

async function fetchTimetable(subject: TimetableSubject, config: Config): Promise<ScheduleResult> {
  // stdout carries the feed and stderr the skipped entries: only real trouble is logged, unless asked for more.
  const verbose = config.logLevel === 'debug' || config.logLevel === 'trace';
  const logger = createLogger({
    level: verbose ? config.logLevel : 'error',
    destination: process.stderr,
    pretty: false,
  });
  const client = createUniversityClient({
    baseUrl: config.universityApiUrl as string,
    logger,
    authHeader: config.universityAuthHeader,
    authScheme: config.universityAuthScheme,
    timeouts: { headersMs: config.upstreamTimeoutMs, bodyMs: config.upstreamTimeoutMs },
  });
  try {
    if (subject.kind === 'group') return await client.groupSchedule(subject.id);
    if (subject.kind === 'employee') return await client.employeeSchedule(subject.id);
    return await client.mySchedule(config.universityCredential as string);
  } catch (error) {
    if (error instanceof UpstreamError) throw new CommandError(error.message);
    throw error;
  } finally {
    await client.close();
  }
}

/**
 * `WEEK_PARITY_ANCHORS` when set. A fetched timetable uses the term starts its deployment stored, when that
 * Redis answers (so that `render` agrees with the service); otherwise, and for `--file`, the timetable's own
 * entries decide.
 */
async function renderTermStarts(
  isFile: boolean,
  config: Config,
  entries: Parameters<typeof countStartDates>[0],
): Promise<TermStart[]> {
  if (config.weekParityAnchors.length === 0 && !isFile) {
    const deployment = await storedDeploymentTermStarts(config);
    if (deployment.kind === 'stored') {
      process.stderr.write(`using the term starts the deployment stored (Redis ${deployment.redis})\n`);
      return deployment.terms;
    }
    // The feed still renders (the timetable's own entries decide), but the service may count differently.
    if (deployment.kind === 'unreachable')
      process.stderr.write(`warning: ${deployment.message}; term starts inferred from this timetable alone\n`);
  }
  return resolveTermStarts(config.weekParityAnchors, countStartDates(entries));
}

/** One line per skipped entry: which entry, which field, why. */
export function describeProblem(problem: EntryProblem): string {
  return `skipped entry ${problem.entryId ?? `#${problem.index}`}: ${problem.field}: ${problem.reason}`;
}

/**
 * The environment, with the university of the demo running in this folder when UNIVERSITY_API_URL is needed
 * and unset (said on stderr), as `resync` and `render` find the demo's Redis.
 */
async function withDemoUniversity(
  env: Record<string, string | undefined>,
  required: readonly RequiredSetting[],
): Promise<Record<string, string | undefined>> {
  if (!required.includes('UNIVERSITY_API_URL') || env.UNIVERSITY_API_URL) return env;
  const simulatorUrl = await runningDemoSimulator(loadConfig(env).dataDir);
  if (simulatorUrl === undefined) return env;
  process.stderr.write(`using the university simulator of the demo running in this folder (${simulatorUrl})\n`);
  return { ...env, UNIVERSITY_API_URL: simulatorUrl };
}

/**
 * `timetable-sync render`: one timetable as ICS on stdout. Invalid entries are left out and named on
 * stderr (exit 0), and so are the term starts used (`WEEK_PARITY_ANCHORS`, or inferred from the timetable). DTSTAMP is derived from the data (midnight UTC of the earliest start date), so the
 * same input always renders the same bytes.
 */
export async function runRender(args: RenderArgs): Promise<number> {
  const subject = subjectOf(args);
  const from = dateOption(args.from, '--from');
  const to = dateOption(args.to, '--to');
  if (from !== undefined && to !== undefined && from > to) throw new UsageError(`--from ${from} is after --to ${to}`);
  const required: RequiredSetting[] =
    subject.kind === 'file'
      ? []
      : subject.kind === 'personal'
        ? ['UNIVERSITY_API_URL', 'UNIVERSITY_CREDENTIAL']
        : ['UNIVERSITY_API_URL'];
  const config = loadConfig(await withDemoUniversity(readEnvironment(), required), required);
  const timetable =
    subject.kind === 'file' ? await readTimetableFile(args.file as string) : await fetchTimetable(subject, config);
  const terms = await renderTermStarts(subject.kind === 'file', config, timetable.entries);
  for (const line of describeTermStarts(terms)) process.stderr.write(`${line}\n`);
  const { occurrences, problems } = expand(timetable.entries, {
    timezone: config.timezone,
    anchors: termStartDates(terms),
    holidays: config.holidays,
    from,
    to,
    // A teacher's timetable reads as its feed does: groups in the titles.
    wording: subject.kind === 'employee' ? TEACHER_WORDING : GROUP_WORDING,
  });
  for (const problem of [...timetable.problems, ...problems]) process.stderr.write(`${describeProblem(problem)}\n`);
  // ISO dates sort as text.
  const [earliest] = timetable.entries.map((entry) => entry.startDate).sort();
  const stamp = earliest === undefined ? 0 : dayNumber(earliest) * 86_400_000;
  const ics = renderIcs(occurrences, {
    name: calendarName(subject, timetable.entries),
    timezone: config.timezone,
    refreshIntervalMs: config.refreshIntervalMs,
    stamp,
  });
  process.stdout.write(ics);
  return 0;
}
