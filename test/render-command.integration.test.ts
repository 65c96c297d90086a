import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ICAL from 'ical.js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../src/simulator/index.ts';
import { redisKeys } from '../src/store/keys.ts';
import { runCli } from './support/cli.ts';
import { uniquePrefix } from './support/service.ts';
import { rawTuesdayLecture } from './upstream/fixtures.ts';

const entry = rawTuesdayLecture;

let dir: string;
let simulator: RunningSimulator;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tts-render-'));
  simulator = await startSimulator({
    port: 0,
    seed: 3,
    groups: 20,
    employees: 30,
    users: 5,
    referenceDate: new Date('2025-10-01T00:00:00Z'),
  });
});
afterAll(async () => {
  await simulator.close();
  await rm(dir, { recursive: true, force: true });
});

function events(ics: string): ICAL.Event[] {
  return new ICAL.Component(ICAL.parse(ics)).getAllSubcomponents('vevent').map((vevent) => new ICAL.Event(vevent));
}

describe('timetable-sync render --file', () => {
  it('prints a zoned feed of the valid entries, names the invalid ones on stderr, exits 0, and is byte-stable', async () => {
    const file = join(dir, 'schedule.json');
    await writeFile(
      file,
      JSON.stringify({
        success: true,
        subjects: [entry({}), entry({ id: 2, day_week_schedule: 9 }), entry({ id: 3, start_day_schedule: '31.02.25' })],
      }),
    );
    const first = await runCli(['render', '--file', file], { env: { TIMEZONE: 'Europe/Berlin' } });
    expect(first.code).toBe(0);
    expect(first.stderr).toBe(
      'term start 2025-09-01 (Monday), inferred from 1 of 1 entries starting July–December 2025: week 1 (odd) begins Monday 2025-09-01\n' +
        'skipped entry 2: day_week_schedule: expected an integer from 1 to 7, got 9\nskipped entry 3: start_day_schedule: no such date "31.02.25"\n',
    );
    const parsed = events(first.stdout);
    expect(parsed.map((event) => event.startDate.toString())).toEqual([
      '2025-09-02T08:30:00',
      '2025-09-09T08:30:00',
      '2025-09-16T08:30:00',
      '2025-09-23T08:30:00',
      '2025-09-30T08:30:00',
    ]);
    expect(parsed[0]?.component.getFirstProperty('dtstart')?.getParameter('tzid')).toBe('Europe/Berlin');
    expect(first.stdout).toContain('BEGIN:VTIMEZONE\r\nTZID:Europe/Berlin');
    expect(first.stdout).toContain('X-WR-CALNAME:09-351');
    const second = await runCli(['render', '--file', file], { env: { TIMEZONE: 'Europe/Berlin', TZ: 'Asia/Tokyo' } });
    expect(second.stdout).toBe(first.stdout);
  });

  it('renders one class sent as one row per group as one event per date listing every group', async () => {
    const file = join(dir, 'teacher.json');
    const subjects = [entry({ id: 812, group_list: '09-352' }), entry({ id: 811, group_list: '09-351' })];
    await writeFile(file, JSON.stringify({ success: true, subjects }));
    const result = await runCli(['render', '--file', file, '--to', '2025-09-09']);
    expect(result.code).toBe(0);
    const parsed = events(result.stdout);
    expect(parsed.map((event) => event.uid)).toEqual(['811-20250902@timetable-sync', '811-20250909@timetable-sync']);
    expect(parsed[0]?.description).toBe('Лекция\nПреподаватель: Петров Пётр Петрович\nГруппы: 09-351, 09-352');
  });

  it('infers the 2018/19 term starts from the file and names them on stderr; WEEK_PARITY_ANCHORS overrides', async () => {
    const file = join(dir, '2018-19.json');
    const autumn = (id: number) =>
      entry({ id, start_day_schedule: '01.09.2018', finish_day_schedule: '28.12.2018', type_week_schedule: 1 });
    const spring = (id: number) =>
      entry({ id, start_day_schedule: '04.02.2019', finish_day_schedule: '31.03.2019', type_week_schedule: 1 });
    await writeFile(file, JSON.stringify({ success: true, subjects: [autumn(1), autumn(2), spring(3), spring(4)] }));
    const result = await runCli(['render', '--file', file, '--to', '2019-02-28']);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      'term start 2018-09-01 (Saturday), inferred from 2 of 2 entries starting July–December 2018: week 1 (odd) begins Monday 2018-09-03\n' +
        'term start 2019-02-04 (Monday), inferred from 2 of 2 entries starting January–June 2019: week 1 (odd) begins Monday 2019-02-04\n',
    );
    const dates = (ics: string, id: number) =>
      events(ics)
        .filter((event) => event.uid.startsWith(`${id}-`))
        .map((event) => event.startDate.toString().slice(0, 10));
    // Odd-week Tuesdays: from week 1 of Monday 3 September, and again from 4 February (5 and 19 February).
    expect(dates(result.stdout, 1).slice(0, 3)).toEqual(['2018-09-04', '2018-09-18', '2018-10-02']);
    expect(dates(result.stdout, 3)).toEqual(['2019-02-05', '2019-02-19']);

    const pinned = await runCli(['render', '--file', file, '--to', '2019-02-28'], {
      env: { WEEK_PARITY_ANCHORS: '2018-08-27' },
    });
    expect(pinned.stderr).toBe(
      'term start 2018-08-27 (Monday), configured in WEEK_PARITY_ANCHORS: week 1 (odd) begins Monday 2018-08-27\n',
    );
    expect(dates(pinned.stdout, 3)).toEqual(['2019-02-12', '2019-02-26']);
  });

  it('limits the output to --from/--to', async () => {
    const file = join(dir, 'window.json');
    await writeFile(file, JSON.stringify({ success: true, subjects: [entry({})] }));
    const result = await runCli(['render', '--file', file, '--from', '2025-09-08', '--to', '16.09.25']);
    expect(events(result.stdout).map((event) => event.uid)).toEqual([
      '1-20250909@timetable-sync',
      '1-20250916@timetable-sync',
    ]);
  });

  it('reads a windows-1251 file of an older deployment, saying so on stderr, with no mojibake', async () => {
    // Saved as an older deployment answers: windows-1251, no `success`, numbers as strings, HH.MM times,
    // DD.MM.YYYY dates, groups separated by ";", and one entry without a start date.
    const file = join(import.meta.dirname, 'fixtures/legacy-schedule-windows-1251.txt');
    const result = await runCli(['render', '--file', file]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`warning: ${file} is not valid UTF-8: read as windows-1251\n`);
    expect(result.stderr).toContain('skipped entry 7002: start_day_schedule: expected a date');
    const parsed = events(result.stdout);
    expect(parsed.map((event) => event.startDate.toString())).toEqual([
      '2025-09-02T08:30:00',
      '2025-09-09T08:30:00',
      '2025-09-16T08:30:00',
      '2025-09-23T08:30:00',
      '2025-09-30T08:30:00',
    ]);
    expect(parsed[0]?.summary).toContain('Дискретная математика');
    expect(parsed[0]?.location).toContain('Корпус №2');
    expect(parsed[0]?.description).toContain('Ёлкин');
    expect(parsed[0]?.description).toContain('09-352');
    expect(result.stdout).not.toMatch(/[\ufffdÐÑ]|Р[ЎЃ°-џ]/);
  });

  it('reads a UTF-8 file of control characters, split group lists, nulls and a missing date', async () => {
    // Entry 8001: control characters in its text fields (a tab in the note), groups split by new lines and ";".
    // Entry 8002: every optional field `null`. Entry 8003: no `start_day_schedule` key at all.
    const file = join(import.meta.dirname, 'fixtures/schedule-utf8-shapes.json');
    const result = await runCli(['render', '--file', file]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      'term start 2025-09-02 (Tuesday), inferred from 1 of 2 entries starting July–December 2025: week 1 (odd) begins Monday 2025-09-01\n' +
        'skipped entry 8003: start_day_schedule: expected a date DD.MM.YY, DD.MM.YYYY or YYYY-MM-DD, got nothing\n',
    );
    const controls = [...result.stdout].filter((char) => /\p{Cc}/u.test(char) && !['\t', '\r', '\n'].includes(char));
    expect(controls).toEqual([]);
    const parsed = events(result.stdout);
    expect(parsed.map((event) => event.uid)).toEqual([
      '8001-20250902@timetable-sync',
      '8002-20250903@timetable-sync',
      '8001-20250909@timetable-sync',
    ]);
    const [linear, sport] = parsed;
    expect(linear?.summary).toBe('Линейная алгебра (лекция)');
    expect(linear?.location).toBe('Корпус №2, 1105');
    expect(linear?.description).toBe(
      'Лекция\nПреподаватель: Ёлкин Пётр Петрович\nГруппы: 09-351, 09-352, 09-353, 09-354\nПримечание: 1\tподгруппа',
    );
    expect(sport?.summary).toBe('Физкультура');
    expect(sport?.location).toBeNull();
    expect(sport?.description).toBe('Группа: 09-351');
    expect(sport?.startDate.toString()).toBe('2025-09-03T12:00:00');
  });

  it('reads a UTF-8 file with a byte order mark without a warning', async () => {
    const file = join(dir, 'bom.json');
    await writeFile(file, `\ufeff${JSON.stringify({ success: true, subjects: [entry({ subject_name: 'Химия' })] })}`);
    const result = await runCli(['render', '--file', file]);
    expect(result.code).toBe(0);
    expect(result.stderr).not.toContain('warning');
    expect(events(result.stdout)[0]?.summary).toContain('Химия');
  });

  it('fails with the reason on an unreadable file, bad JSON or an upstream error body', async () => {
    const missing = await runCli(['render', '--file', join(dir, 'missing.json')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/cannot read .*missing\.json: ENOENT/);
    const garbage = join(dir, 'garbage.json');
    await writeFile(garbage, '{"success": true, "subjects": [');
    expect((await runCli(['render', '--file', garbage])).stderr).toContain('is not valid JSON');
    const failed = join(dir, 'failed.json');
    await writeFile(failed, JSON.stringify({ success: false, error: 'Расписание недоступно' }));
    const result = await runCli(['render', '--file', failed]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Расписание недоступно');
  });

  it('rejects bad usage with exit 64', async () => {
    expect((await runCli(['render'])).code).toBe(64);
    expect((await runCli(['render', '--group', '1', '--employee', '2'])).code).toBe(64);
    expect((await runCli(['render', '--group', '../1'])).stderr).toContain(
      '--group must be an id, a whole number from 1 to 9007199254740991',
    );
    expect((await runCli(['render', '--file', 'x', '--from', '31.02.25'])).stderr).toContain('--from: no such date');
    expect((await runCli(['render', '--file', 'x', '--from', '2025-10-01', '--to', '2025-09-01'])).stderr).toContain(
      '--from 2025-10-01 is after --to 2025-09-01',
    );
  });
});

describe('timetable-sync render against the university API', () => {
  it('renders a group and an employee fetched from the simulator', async () => {
    const { groups } = (await (await fetch(`${simulator.url}/_sim/groups`)).json()) as {
      groups: { id: number; name: string }[];
    };
    const group = groups[0] as { id: number; name: string };
    const result = await runCli(['render', '--group', String(group.id)], {
      env: { UNIVERSITY_API_URL: simulator.url },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`X-WR-CALNAME:${group.name}`);
    expect(events(result.stdout).length).toBeGreaterThan(10);
    const { employees } = (await (await fetch(`${simulator.url}/_sim/employees`)).json()) as {
      employees: { id: number; lastName: string }[];
    };
    const withClasses = [];
    for (const employee of employees) {
      const own = await runCli(['render', '--employee', String(employee.id)], {
        env: { UNIVERSITY_API_URL: simulator.url },
      });
      expect(own.code).toBe(0);
      if (own.stdout.includes('BEGIN:VEVENT')) withClasses.push({ employee, own });
      if (withClasses.length > 0) break;
    }
    const [first] = withClasses;
    expect(first?.own.stdout).toContain(`X-WR-CALNAME:${first?.employee.lastName}`);
  });

  it("uses the term starts a reachable deployment stored for --group, and the file's own for --file", async () => {
    const { groups } = (await (await fetch(`${simulator.url}/_sim/groups`)).json()) as { groups: { id: number }[] };
    const prefix = uniquePrefix('render');
    const redis = new Redis(inject('redisUrl'));
    try {
      // A spring term start this group's own entries would never give: the deployment's counts decided it.
      const termStarts = [
        { date: '2025-09-01', source: 'inferred', entries: 400 },
        { date: '2026-02-16', source: 'inferred', entries: 9 },
      ];
      await redis.set(redisKeys(prefix).termStarts, JSON.stringify({ version: 3, termStarts }));
      const env = { UNIVERSITY_API_URL: simulator.url, REDIS_URL: inject('redisUrl'), REDIS_PREFIX: prefix };
      const result = await runCli(['render', '--group', String(groups[0]?.id)], { env });
      expect(result.code).toBe(0);
      expect(result.stderr).toMatch(/^using the term starts the deployment stored \(Redis 127\.0\.0\.1:\d+\)$/m);
      expect(result.stderr).toContain('term start 2026-02-16 (Monday), inferred from 9 entries');
      const file = join(dir, 'deployment-terms.json');
      await writeFile(file, JSON.stringify({ success: true, subjects: [entry({ start_day_schedule: '02.09.25' })] }));
      const own = await runCli(['render', '--file', file], { env });
      expect(own.stderr).not.toContain('deployment stored');
      expect(own.stderr).toContain('term start 2025-09-02');
      // No Redis answering: the fetched timetable decides, as before.
      const alone = await runCli(['render', '--group', String(groups[0]?.id)], {
        env: { UNIVERSITY_API_URL: simulator.url, REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: prefix },
      });
      expect(alone.code).toBe(0);
      expect(alone.stderr).not.toContain('deployment stored');
      expect(alone.stderr).toContain(
        'warning: cannot reach Redis at redis://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1; check REDIS_URL',
      );
    } finally {
      await redis.del(redisKeys(prefix).termStarts);
      redis.disconnect();
    }
  });

  it('renders --me with UNIVERSITY_CREDENTIAL and never prints the credential', async () => {
    const { users } = (await (await fetch(`${simulator.url}/_sim/users`)).json()) as { users: { token: string }[] };
    const token = users[0]?.token as string;
    const result = await runCli(['render', '--me'], {
      env: { UNIVERSITY_API_URL: simulator.url, UNIVERSITY_CREDENTIAL: token },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('X-WR-CALNAME:Моё расписание');
    expect(result.stdout + result.stderr).not.toContain(token);
  });

  it("exits non-zero with the upstream's own error text for an unknown group or a bad credential", async () => {
    const unknown = await runCli(['render', '--group', '999999'], { env: { UNIVERSITY_API_URL: simulator.url } });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/404.*Группа 999999 не найдена/);
    const denied = await runCli(['render', '--me'], {
      env: { UNIVERSITY_API_URL: simulator.url, UNIVERSITY_CREDENTIAL: 'wrong-token' },
    });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain('Недействительный токен');
    expect(denied.stderr).not.toContain('wrong-token');
  });
});
