import { describe, expect, it } from 'vitest';
import { formatDate, parseWireDate, semesterFor } from '../../src/simulator/dates.ts';
import { generateDataset } from '../../src/simulator/generate.ts';
import { feminine } from '../../src/simulator/names.ts';
import { createRandom, seededHex } from '../../src/simulator/random.ts';

describe('simulator building blocks', () => {
  it('repeats a random sequence for the same seed and salt only', () => {
    const draw = (seed: number | string, salt: string): number[] => {
      const random = createRandom(seed, salt);
      return Array.from({ length: 20 }, () => random.int(0, 1_000_000));
    };
    expect(draw(1, 'a')).toEqual(draw(1, 'a'));
    expect(draw('1', 'a')).toEqual(draw(1, 'a'));
    expect(draw(1, 'a')).not.toEqual(draw(2, 'a'));
    expect(draw(1, 'a')).not.toEqual(draw(1, 'b'));
    expect(seededHex(32, 7, 'token', 1)).toMatch(/^[0-9a-f]{32}$/);
    expect(seededHex(32, 7, 'token', 1)).not.toBe(seededHex(32, 7, 'token', 2));
  });

  it('picks the autumn semester from September to January and the spring one from February to August', () => {
    expect(semesterFor(new Date('2025-10-01T00:00:00Z'))).toMatchObject({
      season: 'autumn',
      academicYear: 2025,
      start: '2025-09-01',
      finish: '2025-12-28',
    });
    expect(semesterFor(new Date('2026-01-20T00:00:00Z'))).toMatchObject({
      season: 'autumn',
      academicYear: 2025,
      start: '2025-09-01',
    });
    // 1 February 2026 is a Sunday: the first Monday is the 2nd, the second Monday the 9th.
    expect(semesterFor(new Date('2026-03-01T00:00:00Z'))).toMatchObject({
      season: 'spring',
      academicYear: 2025,
      start: '2026-02-09',
      finish: '2026-05-31',
    });
    // 1 February 2027 is a Monday: the second Monday is the 8th.
    expect(semesterFor(new Date('2027-08-31T23:59:59Z'))).toMatchObject({ season: 'spring', start: '2027-02-08' });
    const autumn = semesterFor(new Date('2025-09-01T00:00:00Z'));
    expect(new Date(`${autumn.firstHalfEnd}T00:00:00Z`).getUTCDay()).toBe(0);
    expect(autumn.secondHalfStart > autumn.firstHalfEnd).toBe(true);
  });

  it('formats and parses wire dates, refusing impossible ones', () => {
    expect(formatDate('2025-09-01', 'DD.MM.YY')).toBe('01.09.25');
    expect(formatDate('2025-09-01', 'YYYY-MM-DD')).toBe('2025-09-01');
    expect(parseWireDate('29.02.24')).toBe('2024-02-29');
    expect(parseWireDate('2025-12-28')).toBe('2025-12-28');
    expect(parseWireDate('31.02.25')).toBeUndefined();
    expect(parseWireDate('29.02.25')).toBeUndefined();
    expect(parseWireDate('1.9.25')).toBeUndefined();
  });

  it('makes female last names agree', () => {
    expect(feminine('Иванов')).toBe('Иванова');
    expect(feminine('Ильин')).toBe('Ильина');
    expect(feminine('Островский')).toBe('Островская');
    expect(feminine('Шевченко')).toBe('Шевченко');
  });

  it('generates female employees with female first names and patronymics', () => {
    const data = generateDataset({
      seed: 3,
      referenceDate: new Date('2025-10-01T00:00:00Z'),
      groups: 20,
      employees: 300,
      users: 50,
    });
    for (const person of [...data.employees, ...data.users]) {
      if (person.gender === 'FEMALE') expect(person.middleName, person.middleName).toMatch(/(вна|чна)$/);
      else expect(person.middleName, person.middleName).toMatch(/(вич|ич)$/);
    }
    expect(data.groups).toHaveLength(20);
    expect(data.employees).toHaveLength(300);
    expect(data.users).toHaveLength(50);
  });
});
