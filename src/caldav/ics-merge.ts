/**
 * Merging a person's copy of one of our resources with ours (pure): our fields win, theirs stay. A stand-in
 * until the adapter's own merge lands; same name and signature.
 */

/** Properties of the VEVENT this service owns: ours replace theirs. */
const OWNED = new Set([
  'UID',
  'DTSTAMP',
  'SEQUENCE',
  'DTSTART',
  'DTEND',
  'DURATION',
  'SUMMARY',
  'LOCATION',
  'DESCRIPTION',
  'STATUS',
]);

/** Physical lines grouped into logical ones (a folded line keeps its continuation lines). */
function logicalLines(ics: string): string[] {
  const lines: string[] = [];
  for (const line of ics.split(/\r?\n/)) {
    if ((line.startsWith(' ') || line.startsWith('\t')) && lines.length > 0) lines[lines.length - 1] += `\r\n${line}`;
    else if (line !== '') lines.push(line);
  }
  return lines;
}

const nameOf = (line: string) => (line.split(/[;:]/)[0] ?? '').toUpperCase();

/**
 * Our resource with what the person added to theirs carried over: their VEVENT's own properties that we do not
 * own (COLOR, CATEGORIES, notes of other clients…) and its components (VALARM), and a SEQUENCE above both.
 */
export function mergeOwned(theirs: string, ours: string): string {
  const their = logicalLines(theirs);
  const extras: string[] = [];
  let depth = -1;
  let sequence = 0;
  for (const line of their) {
    const name = nameOf(line);
    if (line.toUpperCase() === 'BEGIN:VEVENT') depth = 0;
    else if (depth < 0) continue;
    else if (line.toUpperCase() === 'END:VEVENT' && depth === 0) depth = -1;
    else if (name === 'BEGIN') {
      depth += 1;
      extras.push(line);
    } else if (name === 'END') {
      depth -= 1;
      extras.push(line);
    } else if (depth > 0) extras.push(line);
    else if (name === 'SEQUENCE') sequence = Number(line.slice(line.indexOf(':') + 1)) || 0;
    else if (!OWNED.has(name) && !name.startsWith('X-TIMETABLE-')) extras.push(line);
  }
  const out: string[] = [];
  let inEvent = false;
  for (const line of logicalLines(ours)) {
    const upper = line.toUpperCase();
    if (upper === 'BEGIN:VEVENT') inEvent = true;
    if (inEvent && nameOf(line) === 'SEQUENCE') {
      const mine = Number(line.slice(line.indexOf(':') + 1)) || 0;
      out.push(`SEQUENCE:${Math.max(mine, sequence + 1)}`);
      continue;
    }
    if (inEvent && upper === 'END:VEVENT') {
      out.push(...extras);
      inEvent = false;
    }
    out.push(line);
  }
  return `${out.join('\r\n')}\r\n`;
}
