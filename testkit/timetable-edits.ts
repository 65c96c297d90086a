/**
 * Timetable changes for the google-push benchmark and the chaos suite, made through the simulator's control
 * API: one-off classes (a single date each, so that one edit changes exactly one occurrence), weekly classes
 * to make a group big, and edits of single entries. The service sees them on its next refresh, as it would
 * see the university's.
 */
import { addDays, formatDate, isoWeekday, semesterFor } from '../src/simulator/dates.ts';
import { rawRequest } from './processes.ts';

/** Slots of the simulator's day (`time_interval_id`). */
const SLOTS = 7;

/** Coming days the semester must still hold: a class moved a week later or earlier stays in the future. */
const MIN_COMING_DAYS = 14;

/** A one-off class this benchmark added, as it was last sent. */
export interface OneOff {
  id: number;
  date: string;
  fields: Record<string, unknown>;
}

/** The simulator's control API for one group. */
export class TimetableEdits {
  private readonly url: string;
  readonly groupId: number;
  private dates: string[] = [];
  private added = 0;

  constructor(simulatorUrl: string, groupId: number) {
    this.url = simulatorUrl;
    this.groupId = groupId;
  }

  /**
   * Dates for one-off classes: the coming days of the simulator's current semester (it follows the real date),
   * from tomorrow, without Sundays, by turns (several classes share a day in other slots when there are more
   * classes than days). Only coming days: an ended class is history, which no later refresh rewrites or
   * removes, so an edit of one would change nothing in the feed or Google.
   */
  private nextDate(): string {
    if (this.dates.length === 0) {
      const semester = semesterFor(new Date());
      const today = new Date().toISOString().slice(0, 10);
      for (let day = addDays(today, 1); day <= semester.finish; day = addDays(day, 1))
        if (isoWeekday(day) !== 7) this.dates.push(day);
      if (this.dates.length < MIN_COMING_DAYS)
        throw new Error(`only ${this.dates.length} days left in the semester: too few for the one-off classes`);
    }
    const date = this.dates[this.added % this.dates.length] as string;
    this.added += 1;
    return date;
  }

  /** Adds a class on one date (dates and slots by turns); answers it. */
  async addOneOff(): Promise<OneOff> {
    const date = this.nextDate();
    const fields = {
      ...onDate(date),
      subject_name: `Консультация ${this.added}`,
      time_interval_id: 1 + (this.added % SLOTS),
      num_auditorium_schedule: '101',
    };
    const created = (await this.control('POST', '/_sim/entries', { groupIds: [this.groupId], ...fields })) as {
      id: number;
    };
    return { id: created.id, date, fields };
  }

  /** Adds a class every week of the semester, on the `n`-th day and slot by turns; answers its entry id. */
  async addWeekly(n: number): Promise<number> {
    const fields = {
      subject_name: `Факультатив ${n}`,
      day_week_schedule: 1 + (n % 6),
      time_interval_id: 1 + (n % SLOTS),
      type_week_schedule: 0,
      num_auditorium_schedule: String(200 + n),
    };
    return ((await this.control('POST', '/_sim/entries', { groupIds: [this.groupId], ...fields })) as { id: number })
      .id;
  }

  /** Moves a one-off class to the next slot of the same day (same occurrence, other times). */
  async moveSlot(oneOff: OneOff): Promise<void> {
    const slot = 1 + (Number(oneOff.fields.time_interval_id) % SLOTS);
    await this.patch(oneOff, { time_interval_id: slot });
  }

  /** Moves a one-off class a week later (or earlier at the semester's end, if still to come): another date. */
  async moveWeek(oneOff: OneOff): Promise<void> {
    const semester = semesterFor(new Date());
    const later = addDays(oneOff.date, 7);
    const date = later <= semester.finish ? later : addDays(oneOff.date, -7);
    if (date <= new Date().toISOString().slice(0, 10)) throw new Error(`no coming date a week from ${oneOff.date}`);
    await this.patch(oneOff, onDate(date));
    oneOff.date = date;
  }

  /** Cancels a class (the entry disappears from the timetable). */
  async cancel(oneOff: OneOff): Promise<void> {
    await this.control('DELETE', `/_sim/entries/${oneOff.id}`);
  }

  /** Brings a cancelled class back: the same entry id with the same fields. */
  async restore(oneOff: OneOff): Promise<void> {
    await this.control('POST', '/_sim/entries', { groupIds: [this.groupId], id: oneOff.id, ...oneOff.fields });
  }

  /** Changes any fields of an entry. */
  async patchEntry(id: number, fields: Record<string, unknown>): Promise<void> {
    await this.control('PATCH', `/_sim/entries/${id}`, fields);
  }

  /** The group's entries as the university API answers them. */
  async entries(): Promise<Record<string, unknown>[]> {
    const response = await rawRequest(`${this.url}/groups/${this.groupId}/schedule`);
    return (JSON.parse(response.body.toString()) as { subjects: Record<string, unknown>[] }).subjects;
  }

  private async patch(oneOff: OneOff, fields: Record<string, unknown>): Promise<void> {
    await this.patchEntry(oneOff.id, fields);
    Object.assign(oneOff.fields, fields);
  }

  private async control(method: string, path: string, body?: unknown): Promise<unknown> {
    const response = await rawRequest(`${this.url}${path}`, {
      method,
      headers: { 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (response.status >= 300)
      throw new Error(`simulator ${method} ${path}: ${response.status} ${response.body.toString().slice(0, 300)}`);
    return response.body.length > 0 ? JSON.parse(response.body.toString()) : undefined;
  }
}

/** The wire fields of a class held on `date` only. */
function onDate(date: string): Record<string, unknown> {
  const wire = formatDate(date, 'DD.MM.YY');
  return {
    start_day_schedule: wire,
    finish_day_schedule: wire,
    day_week_schedule: isoWeekday(date),
    type_week_schedule: 0,
  };
}
