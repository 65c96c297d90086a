import { describe, expect, it } from 'vitest';
import { foldName, indexPeople, matchPeople, type PersonName, queryWords } from '../../src/timetable/teacher-match.ts';

const person = (id: number, full: string, teacher = true): PersonName => {
  const [lastName = '', firstName = '', middleName = ''] = full.split(' ');
  return { id, lastName, firstName, middleName, teacher };
};

const PEOPLE = [
  person(1, 'Киселёва Светлана Геннадьевна'),
  person(2, 'Киселёва Софья Геннадьевна'),
  person(3, 'Киселёв Игорь Петрович'),
  person(4, 'Киселевская Анна Сергеевна'),
  person(5, 'Смирнова Светлана Геннадьевна'),
  person(6, 'Киселёва Светлана Гавриловна', false),
  person(7, 'Иванов Иван Иванович'),
];
const index = indexPeople(PEOPLE);
const ids = (query: string, limit = 50) => matchPeople(index, query, limit).map((found) => found.id);

describe('foldName and queryWords', () => {
  it('folds case, ё and spaces', () => {
    expect(foldName('  КИСЕЛЁВА   Светлана ')).toBe('киселева светлана');
    // ё written as е with a combining diaeresis is ё all the same.
    expect(foldName('Кисе\u0308лева')).toBe('киселева');
  });

  it('reads dots and commas as separators', () => {
    expect(queryWords('Киселёва С.Г.')).toEqual(['киселева', 'с', 'г']);
    expect(queryWords('С.Г.Киселёва')).toEqual(['с', 'г', 'киселева']);
    expect(queryWords('Петров-Водкин, К. С.')).toEqual(['петров-водкин', 'к', 'с']);
    expect(queryWords(' . , ')).toEqual([]);
  });
});

describe('matchPeople', () => {
  it('finds a surname written with е where the name has ё, and the other way round', () => {
    expect(ids('Киселева')).toEqual([1, 2, 6]);
    expect(ids('киселёва')).toEqual([1, 2, 6]);
    expect(ids('КИСЕЛЕВА')).toEqual([1, 2, 6]);
    expect(ids('Киселевская')).toEqual([4]);
  });

  it('finds surnames by their beginning, exact surnames first', () => {
    // Киселёв is the exact surname here: Киселёва and Киселевская only begin with it.
    expect(ids('Киселев')).toEqual([3, 1, 2, 4, 6]);
    expect(ids('Кисел')).toEqual([3, 1, 2, 4, 6]);
    expect(ids('Кис')).toEqual([3, 1, 2, 4, 6]);
  });

  it('lists teachers before other staff within a rank', () => {
    // 6 does not teach: it comes after 2 (Софья), though Светлана comes before Софья by name.
    expect(ids('Киселёва')).toEqual([1, 2, 6]);
    expect(ids('Киселёва Светлана')).toEqual([1, 6]);
  });

  it('reads a surname with initials in every usual form', () => {
    for (const query of [
      'Киселёва С.Г.',
      'Киселева С.Г.',
      'Киселёва С. Г.',
      'Киселёва С Г',
      'киселева с г',
      'С.Г. Киселёва',
      'С. Г. Киселева',
      'С.Г.Киселёва',
      'Киселёва СГ',
      'Киселёва, С. Г.',
    ])
      expect(ids(query), query).toEqual([1, 2, 6]);
  });

  it('reads a surname with a first name, and the full name', () => {
    expect(ids('Киселёва Светлана')).toEqual([1, 6]);
    expect(ids('Светлана Киселева')).toEqual([1, 6]);
    expect(ids('Киселева Светлана Геннадьевна')).toEqual([1]);
    expect(ids('Светлана Геннадьевна Киселёва')).toEqual([1]);
    expect(ids('Киселёва Софья')).toEqual([2]);
    expect(ids('Киселёва С.Гав')).toEqual([6]);
  });

  it('takes a surname beginning with initials too, after exact surnames', () => {
    expect(ids('Кисел С.Г.')).toEqual([1, 2, 6]);
    expect(ids('Киселёв И.П.')).toEqual([3]);
    expect(ids('Киселёв С.Г.')).toEqual([1, 2, 6]);
  });

  it('finds nobody for initials that do not fit, a first name alone or the wrong order', () => {
    expect(ids('Киселёва А.Г.')).toEqual([]);
    expect(ids('Киселёва Г.С.')).toEqual([]);
    expect(ids('Светлана')).toEqual([]);
    expect(ids('Геннадьевна')).toEqual([]);
    expect(ids('еселева')).toEqual([]);
    expect(ids('Киселёва С Г Х')).toEqual([]);
    expect(ids('09-351')).toEqual([]);
    expect(ids('..')).toEqual([]);
  });

  it('keeps to the limit, exact surnames first', () => {
    expect(ids('Киселев', 2)).toEqual([3, 1]);
    expect(ids('Иванов', 1)).toEqual([7]);
  });

  it('ignores people without a surname', () => {
    const odd = indexPeople([{ id: 9, lastName: '', firstName: 'Кис', middleName: '' }]);
    expect(matchPeople(odd, 'Кис', 5)).toEqual([]);
  });
});
