/**
 * Timetable responses (group, employee and own timetable share one shape): validated entry by entry, so
 * that one bad entry is reported and skipped while the rest of the timetable is kept.
 */
import { z } from 'zod';
import { openEnvelope, wrongShape } from './envelope.ts';
import type { EndpointName } from './errors.ts';
import {
  clockTime,
  field,
  intInRange,
  isoDate,
  isRecord,
  nameList,
  optionalId,
  optionalInt,
  positiveInt,
  text,
  toInteger,
} from './values.ts';

/** One class in the timetable, normalised: camelCase, numbers as numbers, ISO dates, `HH:MM` times. */
export interface TimetableEntry {
  id: number;
  semester: number | null;
  year: number | null;
  subjectId: number | null;
  subjectName: string;
  /** `subject_kind_name`: lecture, practice, … */
  kind: string;
  /** ISO `YYYY-MM-DD`. */
  startDate: string;
  /** ISO `YYYY-MM-DD`. */
  finishDate: string;
  /** ISO weekday, 1 = Monday … 7 = Sunday. */
  weekday: 1 | 2 | 3 | 4 | 5 | 6 | 7;
  /** 0 = every week, 1 = odd weeks, 2 = even weeks. */
  weekType: 0 | 1 | 2;
  /** `HH:MM`. */
  beginTime: string;
  /** `HH:MM`, after `beginTime`. */
  endTime: string;
  timeIntervalId: number | null;
  note: string;
  teacher: { id: number | null; lastName: string; firstName: string; middleName: string };
  room: string;
  building: { id: number | null; name: string };
  /** `group_list` split on `,`, `;` and line breaks, trimmed, empty names dropped. */
  groups: string[];
}

/** Why one upstream entry was left out: which entry, which upstream field, and what was wrong with it. */
export interface EntryProblem {
  entryId: number | string | null;
  /** Position of the entry in the upstream `subjects` array. */
  index: number;
  /** The upstream field name, e.g. `day_week_schedule`. */
  field: string;
  /** Human readable; names the bad value. */
  reason: string;
}

/** A parsed timetable: the valid entries and a problem for every bad field of the invalid ones. */
export interface ScheduleResult {
  entries: TimetableEntry[];
  problems: EntryProblem[];
}

const rawEntrySchema = z.object({
  id: field(positiveInt),
  semester: field(optionalInt),
  year: field(optionalInt),
  subject_id: field(optionalId),
  subject_name: field(text),
  subject_kind_name: field(text),
  start_day_schedule: field(isoDate),
  finish_day_schedule: field(isoDate),
  day_week_schedule: field(intInRange(1, 7)),
  type_week_schedule: field(intInRange(0, 2)),
  begin_time_schedule: field(clockTime),
  end_time_schedule: field(clockTime),
  time_interval_id: field(optionalId),
  note_schedule: field(text),
  teacher_id: field(optionalId),
  teacher_lastname: field(text),
  teacher_firstname: field(text),
  teacher_middlename: field(text),
  num_auditorium_schedule: field(text),
  building_id: field(optionalId),
  building_name: field(text),
  group_list: field(nameList),
});

type RawEntry = z.output<typeof rawEntrySchema>;

function normalise(raw: RawEntry): TimetableEntry {
  return {
    id: raw.id,
    semester: raw.semester,
    year: raw.year,
    subjectId: raw.subject_id,
    subjectName: raw.subject_name,
    kind: raw.subject_kind_name,
    startDate: raw.start_day_schedule,
    finishDate: raw.finish_day_schedule,
    weekday: raw.day_week_schedule as TimetableEntry['weekday'],
    weekType: raw.type_week_schedule as TimetableEntry['weekType'],
    beginTime: raw.begin_time_schedule,
    endTime: raw.end_time_schedule,
    timeIntervalId: raw.time_interval_id,
    note: raw.note_schedule,
    teacher: {
      id: raw.teacher_id,
      lastName: raw.teacher_lastname,
      firstName: raw.teacher_firstname,
      middleName: raw.teacher_middlename,
    },
    room: raw.num_auditorium_schedule,
    building: { id: raw.building_id, name: raw.building_name },
    groups: raw.group_list,
  };
}

function entryIdOf(input: Record<string, unknown>): number | string | null {
  const id = input.id;
  const asInteger = toInteger(id);
  if (asInteger !== undefined && asInteger > 0) return asInteger;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** End ≤ begin makes an entry invalid; only checked when both times parse (a bad time is its own problem). */
function timeOrderProblem(input: Record<string, unknown>): { field: string; reason: string } | undefined {
  const begin = clockTime(input.begin_time_schedule);
  const end = clockTime(input.end_time_schedule);
  if (!begin.ok || !end.ok || end.value > begin.value) return undefined;
  return {
    field: 'end_time_schedule',
    reason: `end time ${end.value} is not after begin time ${begin.value}`,
  };
}

function parseEntry(input: unknown, index: number): TimetableEntry | EntryProblem[] {
  if (!isRecord(input)) {
    return [{ entryId: null, index, field: 'subjects', reason: 'entry is not an object' }];
  }
  const entryId = entryIdOf(input);
  const result = rawEntrySchema.safeParse(input);
  const problems: EntryProblem[] = [];
  for (const issue of result.error?.issues ?? []) {
    const fieldName = String(issue.path[0] ?? 'subjects');
    if (problems.some((p) => p.field === fieldName)) continue;
    problems.push({ entryId, index, field: fieldName, reason: issue.message });
  }
  const order = timeOrderProblem(input);
  if (order) problems.push({ entryId, index, field: order.field, reason: order.reason });
  if (problems.length > 0 || !result.success) return problems;
  return normalise(result.data);
}

/**
 * Validates and normalises a timetable response (`{ success: true, subjects: [...] }`, `success` optional). Throws
 * `UpstreamProtocolError` ('unsuccessful' with the upstream text, or 'wrong-shape') for an unusable
 * response; bad entries become {@link EntryProblem}s. Independent of the HTTP client, so a saved response
 * file can be read with it. Without `endpoint` (a saved file) errors are attributed to `groupSchedule`,
 * the shape all three timetable endpoints share.
 */
export function parseScheduleResponse(json: unknown, endpoint: EndpointName = 'groupSchedule'): ScheduleResult {
  const body = openEnvelope(json, endpoint, ['subjects']);
  const subjects = body.subjects;
  if (!Array.isArray(subjects)) return wrongShape(endpoint, '`subjects` is not an array');
  const entries: TimetableEntry[] = [];
  const problems: EntryProblem[] = [];
  subjects.forEach((input: unknown, index) => {
    const parsed = parseEntry(input, index);
    if (Array.isArray(parsed)) problems.push(...parsed);
    else entries.push(parsed);
  });
  return { entries, problems };
}
