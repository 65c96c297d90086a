/**
 * iCalendar content lines (RFC 5545 §3.1), as the CalDAV resources need them (pure): unfolding, a property's
 * name, parameters and value, TEXT escaping, and the components a line sits in.
 */

/** One unfolded content line. */
export interface ContentLine {
  /** The whole unfolded line, as written (without its line break). */
  text: string;
  /** Upper-cased property name (`DTSTART`, `X-TIMETABLE-SYNC-SOURCE`, `BEGIN`). */
  name: string;
  /** The raw value after the first unquoted ':' (escapes kept). */
  value: string;
}

/** Splits text into unfolded content lines (CRLF or bare LF; a line starting with a space or tab continues). */
export function unfoldLines(text: string): string[] {
  const lines: string[] = [];
  for (const raw of text.split(/\r\n|\n|\r/)) {
    if ((raw.startsWith(' ') || raw.startsWith('\t')) && lines.length > 0) lines[lines.length - 1] += raw.slice(1);
    else if (raw !== '') lines.push(raw);
  }
  return lines;
}

/** The name and value of a content line; the ':' ending the name and parameters is the first one not quoted. */
export function parseLine(text: string): ContentLine {
  let quoted = false;
  let nameEnd = -1;
  for (let index = 0; index < text.length; index++) {
    const char = text[index];
    if (char === '"') quoted = !quoted;
    else if (!quoted && (char === ';' || char === ':') && nameEnd === -1) nameEnd = index;
    if (!quoted && char === ':') {
      return { text, name: text.slice(0, nameEnd).toUpperCase(), value: text.slice(index + 1) };
    }
  }
  return { text, name: (nameEnd === -1 ? text : text.slice(0, nameEnd)).toUpperCase(), value: '' };
}

/** RFC 5545 TEXT escaping (§3.3.11): backslash, semicolon, comma and line breaks. */
export function escapeText(text: string): string {
  return text.replace(/[\\;,]/g, (match) => `\\${match}`).replace(/\r\n|\r|\n/g, '\\n');
}

/** The inverse of {@link escapeText}. */
export function unescapeText(value: string): string {
  return value.replace(/\\([\\;,nN])/g, (_match, char: string) => (char === 'n' || char === 'N' ? '\n' : char));
}

/** A parsed line with the components it sits in, outermost first (`['VCALENDAR', 'VEVENT']`). */
export interface PlacedLine extends ContentLine {
  path: readonly string[];
}

/**
 * How deep components may nest. iCalendar nests three deep at most (VCALENDAR > VEVENT > VALARM; VTIMEZONE >
 * STANDARD): anything deeper is no calendar data, and a server could send thousands of BEGIN lines.
 */
export const MAX_COMPONENT_DEPTH = 8;

/** Calendar data nested deeper than {@link MAX_COMPONENT_DEPTH}: unreadable, as if it were no iCalendar. */
export class IcsNestingError extends Error {
  override name = 'IcsNestingError';
}

/**
 * Every unfolded line of `text` with its place; BEGIN/END lines are placed in the component they open or close.
 * The lines of one component share one path (a path per line, copied, took 1.9 GB for 20,000 nested BEGINs).
 * Throws {@link IcsNestingError} past {@link MAX_COMPONENT_DEPTH}.
 */
export function placedLines(text: string): PlacedLine[] {
  const paths: (readonly string[])[] = [[]];
  const placed: PlacedLine[] = [];
  for (const raw of unfoldLines(text)) {
    const line = parseLine(raw);
    const current = paths[paths.length - 1] ?? [];
    if (line.name === 'BEGIN') {
      if (paths.length > MAX_COMPONENT_DEPTH)
        throw new IcsNestingError(`components nested deeper than ${MAX_COMPONENT_DEPTH}`);
      const path = Object.freeze([...current, line.value.trim().toUpperCase()]);
      paths.push(path);
      placed.push({ ...line, path });
    } else if (line.name === 'END') {
      placed.push({ ...line, path: current });
      if (paths.length > 1) paths.pop();
    } else placed.push({ ...line, path: current });
  }
  return placed;
}
