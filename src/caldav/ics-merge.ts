/**
 * Merging our event into a person's edited copy (pure). A 412 means someone changed the resource in their
 * calendar: they may have added an alarm, a colour, categories, a note of their own. What we own wins (time,
 * title, room, description, status, our marker and digest, DTSTAMP, and a SEQUENCE above theirs, so that
 * clients take it as the newer version, and our VALARM when the target follows feed options); everything else of
 * theirs stays, their VALARMs included.
 *
 * Line-based on unfolded content lines: every line we do not own is copied as the server gave it, so nothing
 * of theirs is reformatted, reordered or lost to a parser's idea of the format.
 */
import { foldLines } from '../feeds/fold-lines.ts';
import { ALARM_PROPERTY, HASH_PROPERTY, MARKER_PROPERTY } from './caldav-client.ts';
import { type PlacedLine, placedLines } from './ics-lines.ts';

/** Event properties we own; DURATION too, since our DTEND replaces whatever end they gave. */
const OWNED = new Set([
  'DTSTART',
  'DTEND',
  'DURATION',
  'SUMMARY',
  'LOCATION',
  'DESCRIPTION',
  'STATUS',
  'SEQUENCE',
  'DTSTAMP',
  MARKER_PROPERTY,
  HASH_PROPERTY,
]);

function owned(name: string): boolean {
  return OWNED.has(name) || name.startsWith('X-TIMETABLE-');
}

/** Whether the line is a property of the event itself (not of an alarm inside it). */
function eventProperty(line: PlacedLine): boolean {
  return line.path.length === 2 && line.path[1] === 'VEVENT' && line.name !== 'BEGIN' && line.name !== 'END';
}

/** The VTIMEZONE blocks of a resource, by TZID, as whole lines. */
function timeZones(lines: readonly PlacedLine[]): Map<string, string[]> {
  const zones = new Map<string, string[]>();
  let current: string[] | undefined;
  let tzid: string | undefined;
  for (const line of lines) {
    if (line.name === 'BEGIN' && line.path.length === 2 && line.path[1] === 'VTIMEZONE') current = [];
    if (current !== undefined) {
      current.push(line.text);
      if (line.name === 'TZID' && line.path.length === 2) tzid = line.value.trim();
      if (line.name === 'END' && line.path.length === 2 && line.path[1] === 'VTIMEZONE') {
        if (tzid !== undefined) zones.set(tzid, current);
        current = undefined;
        tzid = undefined;
      }
    }
  }
  return zones;
}

const EVENT_ALARM = 'VCALENDAR/VEVENT/VALARM';

/** Whether the line opens an alarm of the event (not one nested deeper). */
function opensAlarm(line: PlacedLine): boolean {
  return line.name === 'BEGIN' && line.path.join('/') === EVENT_ALARM;
}

/**
 * The alarms of the first VEVENT starting at `from` (its BEGIN line), as index ranges [begin, end], with whether
 * each is ours ({@link ALARM_PROPERTY}).
 */
function alarmsOf(lines: readonly PlacedLine[], from: number): { begin: number; end: number; ours: boolean }[] {
  const alarms: { begin: number; end: number; ours: boolean }[] = [];
  let open: { begin: number; ours: boolean } | undefined;
  for (let index = from + 1; index < lines.length; index++) {
    const line = lines[index] as PlacedLine;
    if (line.name === 'END' && line.path.join('/') === 'VCALENDAR/VEVENT') break;
    if (opensAlarm(line)) open = { begin: index, ours: false };
    else if (open !== undefined && line.path.length === 3 && line.name === ALARM_PROPERTY) open.ours = true;
    else if (open !== undefined && line.name === 'END' && line.path.join('/') === EVENT_ALARM) {
      alarms.push({ ...open, end: index });
      open = undefined;
    }
  }
  return alarms;
}

function tzidOf(line: PlacedLine): string | undefined {
  return /;TZID=("?)([^;:"]+)\1[;:]/i.exec(line.text)?.[2];
}

/**
 * Their resource with our owned properties of the first VEVENT in place of theirs, SEQUENCE above both, and
 * our VTIMEZONE added where they lack it. Without a VEVENT in theirs, ours as it is.
 */
export function mergeOwned(theirs: string, ours: string): string {
  const theirLines = placedLines(theirs);
  const ourLines = placedLines(ours);
  const firstEvent = theirLines.findIndex(
    (line) => line.name === 'BEGIN' && line.path.join('/') === 'VCALENDAR/VEVENT',
  );
  if (firstEvent === -1) return ours;

  const ourEvent = ourLines.filter((line) => eventProperty(line) && owned(line.name) && line.name !== 'SEQUENCE');
  const sequenceOf = (lines: readonly PlacedLine[], from: number) => {
    const line = lines.slice(from).find((one) => eventProperty(one) && one.name === 'SEQUENCE');
    const value = Number.parseInt(line?.value ?? '', 10);
    return Number.isFinite(value) ? value : 0;
  };
  const ourEventStart = ourLines.findIndex(
    (line) => line.name === 'BEGIN' && line.path.join('/') === 'VCALENDAR/VEVENT',
  );
  const sequence = Math.max(sequenceOf(ourLines, ourEventStart), sequenceOf(theirLines, firstEvent) + 1);

  const theirZones = timeZones(theirLines);
  const ourZones = timeZones(ourLines);
  const missingZones = [...new Set(ourEvent.map(tzidOf).filter((tzid) => tzid !== undefined))]
    .filter((tzid) => !theirZones.has(tzid))
    .flatMap((tzid) => ourZones.get(tzid) ?? []);

  // Our alarm replaces the one we wrote before (or goes, with the reminder); theirs stay as they are.
  const ourAlarms = alarmsOf(ourLines, ourEventStart).flatMap((alarm) =>
    ourLines.slice(alarm.begin, alarm.end + 1).map((line) => line.text),
  );
  const dropped = new Set(
    alarmsOf(theirLines, firstEvent)
      .filter((alarm) => alarm.ours)
      .flatMap((alarm) => Array.from({ length: alarm.end - alarm.begin + 1 }, (_, n) => alarm.begin + n)),
  );

  const out: string[] = [];
  let inFirstEvent = false;
  for (const [index, line] of theirLines.entries()) {
    if (index === firstEvent) {
      out.push(...missingZones, line.text, ...ourEvent.map((one) => one.text), `SEQUENCE:${sequence}`);
      inFirstEvent = true;
      continue;
    }
    if (inFirstEvent && line.name === 'END' && line.path.join('/') === 'VCALENDAR/VEVENT') {
      inFirstEvent = false;
      out.push(...ourAlarms);
    }
    if (dropped.has(index)) continue;
    if (inFirstEvent && eventProperty(line) && owned(line.name)) continue;
    out.push(line.text);
  }
  return `${foldLines(out.join('\r\n'))}\r\n`;
}
