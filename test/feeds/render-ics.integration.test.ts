import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import fc from 'fast-check';
import ICAL from 'ical.js';
import { describe, expect, it } from 'vitest';
import { type CalendarMeta, renderIcs } from '../../src/feeds/render-ics.ts';
import { expand } from '../../src/timetable/expand.ts';
import type { Occurrence } from '../../src/timetable/types.ts';
import { entry } from '../timetable/fixtures.ts';
import { type GoldenCase, goldenCases } from './golden-inputs.ts';

const run = promisify(execFile);
const here = (name: string) => fileURLToPath(new URL(name, import.meta.url));

/** An event as an independent parser (ical.js) reads it back. */
interface ReadEvent {
  uid: string;
  summary: string;
  location: string | null;
  description: string | null;
  start: string;
  end: string;
  zone: string | undefined;
  status: string;
  sequence: number;
  categories: string[];
  alarmTriggers: string[];
}

function parse(ics: string): ICAL.Component {
  const calendar = new ICAL.Component(ICAL.parse(ics));
  for (const zone of calendar.getAllSubcomponents('vtimezone')) ICAL.TimezoneService.register(zone);
  return calendar;
}

/**
 * A calendar-level TEXT property. ical.js types X-WR-CALNAME and NAME as "unknown" and hands back the raw
 * value, so the RFC 5545 §3.3.11 escapes are undone here.
 */
function calendarText(ics: string, name: string): string {
  const raw = String(parse(ics).getFirstPropertyValue(name));
  return raw.replace(/\\([\\;,nN])/g, (_whole, escaped: string) => (escaped.toLowerCase() === 'n' ? '\n' : escaped));
}

function readEvents(ics: string): ReadEvent[] {
  return parse(ics)
    .getAllSubcomponents('vevent')
    .map((component) => {
      const event = new ICAL.Event(component);
      return {
        uid: event.uid,
        summary: event.summary,
        location: event.location,
        description: event.description,
        start: event.startDate.toString(),
        end: event.endDate.toString(),
        zone: event.startDate.zone?.tzid,
        status: String(component.getFirstPropertyValue('status')),
        sequence: event.sequence,
        categories: component.getAllProperties('categories').flatMap((p) => p.getValues().map(String)),
        alarmTriggers: component
          .getAllSubcomponents('valarm')
          .map((alarm) => String(alarm.getFirstPropertyValue('trigger'))),
      };
    });
}

/** What the occurrences say the events must read back as. */
function expectedEvents(occurrences: readonly Occurrence[], alarmMinutes?: number): ReadEvent[] {
  return occurrences.map((o) => ({
    uid: o.uid,
    summary: o.summary,
    location: o.location === '' ? null : o.location,
    description: o.description === '' ? null : o.description,
    start: `${o.date}T${o.beginTime}:00`,
    end: `${o.date}T${o.endTime}:00`,
    zone: o.timezone,
    status: o.status,
    sequence: o.sequence,
    categories: [...o.categories],
    alarmTriggers:
      alarmMinutes === undefined || o.status === 'CANCELLED'
        ? []
        : [alarmMinutes === 0 ? 'PT0S' : `-PT${alarmMinutes}M`],
  }));
}

/** RFC 5545 §3.1 line rules: CRLF everywhere, ≤ 75 octets, folds never split a character. */
function expectWellFormedLines(ics: string): void {
  expect(ics.endsWith('END:VCALENDAR\r\n')).toBe(true);
  expect(ics.replaceAll('\r\n', '')).not.toMatch(/[\r\n]/);
  for (const line of ics.slice(0, -2).split('\r\n')) {
    expect(Buffer.byteLength(line), line).toBeLessThanOrEqual(75);
    // A lone surrogate (half a character) would not survive a UTF-8 round trip.
    expect(Buffer.from(line, 'utf8').toString('utf8')).toBe(line);
  }
}

function render(c: GoldenCase): string {
  return renderIcs(c.occurrences, c.meta);
}

describe('renderIcs: golden feeds', () => {
  it.each(goldenCases().map((c) => [c.name, c] as const))('%s matches its golden file byte for byte', (name, c) => {
    const golden = readFileSync(here(`golden/${name}.ics`));
    expect(Buffer.from(render(c), 'utf8').equals(golden)).toBe(true);
  });

  it.each(goldenCases().map((c) => [c.name, c] as const))(
    '%s is well formed and reads back into the same events',
    (_name, c) => {
      const ics = render(c);
      expectWellFormedLines(ics);
      expect(readEvents(ics)).toEqual(expectedEvents(c.occurrences, c.meta.alarmMinutes));
      const calendar = parse(ics);
      expect(calendarText(ics, 'x-wr-calname')).toBe(c.meta.name);
      expect(calendarText(ics, 'name')).toBe(c.meta.name);
      expect(calendar.getFirstPropertyValue('x-wr-timezone')).toBe(c.meta.timezone);
      expect(calendar.getAllSubcomponents('vtimezone').map((z) => z.getFirstPropertyValue('tzid'))).toEqual([
        c.meta.timezone,
      ]);
      for (const [key, value] of Object.entries(c.meta.extra ?? {}))
        expect(calendar.getFirstPropertyValue(key.toLowerCase())).toBe(value);
    },
  );

  it('writes the calendar and timing properties RFC 5545 and the subscription extensions expect', () => {
    const [berlin] = goldenCases();
    const ics = render(berlin as GoldenCase);
    expect(ics).toContain('\r\nX-WR-CALNAME:ИВТ-21\\; весна\\, 2025\r\n');
    expect(ics).toContain('\r\nX-WR-TIMEZONE:Europe/Berlin\r\n');
    expect(ics).toContain('\r\nREFRESH-INTERVAL;VALUE=DURATION:PT1H\r\nX-PUBLISHED-TTL:PT1H\r\n');
    expect(ics).toContain(
      '\r\nDTSTART;TZID=Europe/Berlin:20250323T101000\r\nDTEND;TZID=Europe/Berlin:20250323T114000\r\n',
    );
    expect(ics).toContain('\r\nDTSTAMP:20250901T030405Z\r\n');
    expect(ics).toContain('\r\nSTATUS:CANCELLED\r\n');
    expect(ics).toContain('\r\nTRIGGER:-PT15M\r\n');
    expect(ics.match(/^BEGIN:VTIMEZONE\r$/gm)).toHaveLength(1);
  });

  it('puts every component’s properties before its subcomponents (RFC 5545 §3.4, §3.6.1)', () => {
    for (const c of goldenCases()) {
      const unfolded = render(c).replace(/\r\n /g, '').split('\r\n');
      const depthOfLastChild: number[] = [];
      let depth = 0;
      for (const line of unfolded) {
        if (line.startsWith('BEGIN:')) depth += 1;
        else if (line.startsWith('END:')) depthOfLastChild[--depth] = 1;
        else if (line !== '')
          expect(depthOfLastChild[depth] === 1 && depth > 0 ? `${line} after a subcomponent` : 'ok').toBe('ok');
        if (line.startsWith('BEGIN:')) depthOfLastChild[depth] = 0;
      }
    }
  });
});

describe('renderIcs: determinism', () => {
  it('renders byte-identical output for identical input', () => {
    for (const c of goldenCases()) expect(render(c)).toBe(render(structuredClone(c)));
  });

  it('renders the same bytes whatever the process TZ', async () => {
    const expected = goldenCases().map(render);
    for (const TZ of ['America/Los_Angeles', 'Asia/Tokyo']) {
      const { stdout } = await run(process.execPath, [here('render-child.ts')], {
        env: { ...process.env, TZ },
        maxBuffer: 16 << 20,
      });
      const child = JSON.parse(stdout) as { zone: string; feeds: string[] };
      expect(child.zone).toBe(TZ);
      expect(child.feeds, TZ).toEqual(expected);
    }
  });
});

describe('renderIcs: text survives the round trip', () => {
  const meta: CalendarMeta = { name: 'Группа', timezone: 'Europe/Moscow', refreshIntervalMs: 3_600_000, stamp: 0 };
  const textArb = fc.string({
    unit: fc.constantFrom('а', 'Ж', 'ё', ';', ',', '\\', '\n', ' ', ':', '"', 'x', '🎓', 'é', '語'),
    maxLength: 200,
  });

  it('keeps summaries, locations, descriptions, categories and calendar names intact', () => {
    fc.assert(
      fc.property(textArb, textArb, textArb, textArb, (subject, room, note, name) => {
        // Texts are trimmed upstream; a kind is one line.
        const source = entry({
          subjectName: subject.trim() || 'x',
          room: room.trim(),
          note: note.trim(),
          kind: 'лаб; раб, 1',
          finishDate: '2025-09-08',
        });
        const { occurrences } = expand([source], { timezone: 'Europe/Moscow' });
        const ics = renderIcs(occurrences, { ...meta, name: name.trim() || 'x' });
        expectWellFormedLines(ics);
        expect(readEvents(ics)).toEqual(expectedEvents(occurrences));
        expect(calendarText(ics, 'x-wr-calname')).toBe(name.trim() || 'x');
      }),
      { numRuns: 150 },
    );
  });

  it('escapes a line break in the calendar name instead of starting a new property', () => {
    const ics = renderIcs([], { ...meta, name: 'Группа\nBEGIN:VEVENT' });
    expect(ics).toContain('X-WR-CALNAME:Группа\\nBEGIN:VEVENT\r\n');
    expect(ics).not.toMatch(/^BEGIN:VEVENT/m);
  });
});

describe('renderIcs: zones, alarms, status', () => {
  const base = expand([entry({ finishDate: '2025-09-08' })], { timezone: 'Europe/Moscow' }).occurrences;
  const meta: CalendarMeta = {
    name: 'x',
    timezone: 'Europe/Moscow',
    refreshIntervalMs: 1_000,
    stamp: Date.UTC(2025, 0, 2, 3, 4, 5),
  };

  it('keeps each occurrence’s own zone and wall-clock time, even when it differs from the feed’s zone', () => {
    const berlin = expand([entry({ id: 2, subjectName: 'Б', finishDate: '2025-09-01' })], {
      timezone: 'Europe/Berlin',
    }).occurrences;
    const ics = renderIcs([...base, ...berlin], meta);
    expect(ics).toContain('DTSTART;TZID=Europe/Berlin:20250901T101000\r\n');
    expect(ics).toContain('DTSTART;TZID=Europe/Moscow:20250901T101000\r\n');
    expect(ics.match(/^BEGIN:VTIMEZONE\r$/gm)).toHaveLength(2);
    expect(readEvents(ics)).toEqual(expectedEvents([...base, ...berlin]));
  });

  it('adds an alarm to confirmed events only; refresh interval is at least a minute', () => {
    const cancelled = base.map((o, i) => (i === 0 ? { ...o, status: 'CANCELLED' as const } : o));
    const ics = renderIcs(cancelled, { ...meta, alarmMinutes: 90 });
    expect(readEvents(ics).map((e) => [e.status, e.alarmTriggers])).toEqual([
      ['CANCELLED', []],
      ['CONFIRMED', ['-PT1H30M']],
    ]);
    expect(ics).toContain('REFRESH-INTERVAL;VALUE=DURATION:PT1M\r\n');
    expect(renderIcs(base, meta)).not.toContain('BEGIN:VALARM');
  });

  it('writes DTSTAMP in UTC from the stamp it is given', () => {
    expect(renderIcs(base, meta).match(/^DTSTAMP:.*$/gm)).toEqual([
      'DTSTAMP:20250102T030405Z',
      'DTSTAMP:20250102T030405Z',
    ]);
  });

  it('renders an empty timetable as a valid, empty calendar', () => {
    const ics = renderIcs([], meta);
    expectWellFormedLines(ics);
    expect(readEvents(ics)).toEqual([]);
    expect(parse(ics).getFirstPropertyValue('x-wr-timezone')).toBe('Europe/Moscow');
  });
});
