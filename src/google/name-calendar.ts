/**
 * A calendar we created before its timetable's name was known (at connect time, before the first refresh) is
 * called `Группа 4242`; once the timetable names itself, the calendar takes that name. Calendars someone gave
 * us, and ours the user renamed, keep their names.
 */
import type { Logger } from '../logger.ts';
import { isPlaceholderName } from '../timetable/calendar-name.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import type { CalendarClient } from './calendar-client.ts';
import type { GoogleTarget } from './google-targets.ts';

/** Records the calendar's name on the target (guarded on the calendar id); false if the target moved on. */
export type RecordCalendarName = (targetId: string, calendarId: string, name: string) => Promise<boolean>;

/** What naming a calendar did: nothing to do, renamed, or left as the user named it. */
export type NamingOutcome = 'unchanged' | 'renamed' | 'kept-user-name';

/**
 * Names the target's calendar `name` (the published timetable's) when the calendar is ours and still carries
 * the placeholder it was created with: one `calendars.get` to see that the user did not rename it meanwhile,
 * then one `calendars.patch`. Costs nothing in any other case, so every push may call it. Throws the
 * adapter's typed errors.
 */
export async function nameCalendar(
  calendar: CalendarClient,
  target: Pick<GoogleTarget, 'id' | 'source' | 'calendarId' | 'calendarOwned' | 'calendarName'>,
  name: string,
  record: RecordCalendarName,
  log: Logger,
): Promise<NamingOutcome> {
  const subject = publicSubject(target.source);
  if (subject === undefined || !target.calendarOwned || name.trim() === '') return 'unchanged';
  if (!isPlaceholderName(subject, target.calendarName) || isPlaceholderName(subject, name)) return 'unchanged';
  const remote = await calendar.getCalendar(target.calendarId);
  if (remote.summary !== target.calendarName) {
    // The user named it: that name is theirs to keep, and we stop asking.
    await record(target.id, target.calendarId, remote.summary);
    return 'kept-user-name';
  }
  const renamed = await calendar.renameCalendar(target.calendarId, name);
  await record(target.id, target.calendarId, renamed.summary);
  log.info({ from: target.calendarName, to: renamed.summary }, 'google calendar renamed after its timetable');
  return 'renamed';
}

function publicSubject(source: SourceKey): { kind: 'group' | 'employee'; id: number } | undefined {
  const ref = sourceOf(source);
  return ref.kind === 'personal' ? undefined : { kind: ref.kind, id: Number(ref.id) };
}
