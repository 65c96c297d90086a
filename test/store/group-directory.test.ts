/** The group directory's search: normalised names, prefix before substring, limits. */
import { describe, expect, it } from 'vitest';
import { cleanGroupName, GroupIndex, searchKey } from '../../src/store/group-directory.ts';

const index = new GroupIndex([
  { id: 1, name: '09-351' },
  { id: 2, name: '09-352' },
  { id: 3, name: '19-351' },
  { id: 4, name: 'ИВТ-21' },
  { id: 5, name: 'Ёж.01' },
  { id: 6, name: '09-3510' },
]);
const names = (query: string, limit?: number) => index.search(query, limit).groups.map((group) => group.name);

describe('searchKey', () => {
  it('ignores case, separators and ё, and folds Latin lookalikes into Cyrillic', () => {
    expect(searchKey(' 09-351 ')).toBe('09351');
    expect(searchKey('ИВТ 2.1')).toBe('ивт21');
    expect(searchKey('Ёж/01')).toBe('еж01');
    // "BT" typed on a Latin layout is the Cyrillic "ВТ".
    expect(searchKey('ИBT-21')).toBe(searchKey('ИВТ-21'));
    expect(searchKey('-- . --')).toBe('');
  });
});

describe('GroupIndex.search', () => {
  it('finds a name written with or without separators, the whole name first', () => {
    expect(names('09-351')).toEqual(['09-351', '09-3510']);
    expect(names('09351')).toEqual(['09-351', '09-3510']);
    expect(names('09 351')).toEqual(['09-351', '09-3510']);
  });

  it('puts names that start with the query before names that contain it', () => {
    expect(names('9-351')).toEqual(['09-351', '19-351', '09-3510']);
    expect(names('35')).toEqual(['09-351', '09-352', '19-351', '09-3510']);
    expect(names('351')).toEqual(['09-351', '19-351', '09-3510']);
  });

  it('matches letters regardless of case and ё', () => {
    expect(names('ивт')).toEqual(['ИВТ-21']);
    expect(names('еж')).toEqual(['Ёж.01']);
  });

  it('limits the results and counts every match', () => {
    expect(index.search('09', 2)).toEqual({
      groups: [
        { id: 1, name: '09-351' },
        { id: 2, name: '09-352' },
      ],
      total: 3,
    });
  });

  it('finds nothing for a query of separators only, or one that matches nothing', () => {
    expect(index.search('--').total).toBe(0);
    expect(index.search('77-777').total).toBe(0);
  });

  it('ranks as sorting every match by rank, length, name (numbers as numbers) and id would', () => {
    // Names in no order, with duplicates, numbers of different lengths and case: every tie-break is used.
    const groups = Array.from({ length: 600 }, (_, i) => ({
      id: 600 - i,
      name: `${['ИВТ', 'ивт', 'Пи', '1'][i % 4]}-${(i * 7919) % 97}${i % 5 === 0 ? '' : `.${i % 3}`}`,
    }));
    const big = new GroupIndex(groups);
    const collator = new Intl.Collator('ru', { numeric: true, sensitivity: 'base' });
    const expected = (query: string, limit: number) => {
      const key = searchKey(query);
      const ranked = groups
        .map((group) => ({ group, key: searchKey(group.name) }))
        .filter((entry) => entry.key.includes(key))
        .map((entry) => ({ ...entry, rank: entry.key === key ? 0 : entry.key.startsWith(key) ? 1 : 2 }))
        .sort(
          (a, b) =>
            a.rank - b.rank ||
            a.key.length - b.key.length ||
            collator.compare(a.group.name, b.group.name) ||
            a.group.id - b.group.id,
        );
      return { groups: ranked.slice(0, limit).map((entry) => entry.group), total: ranked.length };
    };
    for (const query of ['1', '1-', 'ивт', 'ИВТ-1', '5', '1-5.1', 'пи-9', '12']) {
      for (const limit of [1, 5, 20, 1000]) expect(big.search(query, limit)).toEqual(expected(query, limit));
    }
  });
});

describe('cleanGroupName', () => {
  it('trims and collapses spaces, refuses empty, long and control-character names', () => {
    expect(cleanGroupName('  09   351 ')).toBe('09 351');
    expect(cleanGroupName('   ')).toBeUndefined();
    expect(cleanGroupName('x'.repeat(101))).toBeUndefined();
    expect(cleanGroupName('09\u0000351')).toBeUndefined();
    expect(cleanGroupName('<img src=x onerror=alert(1)>')).toBe('<img src=x onerror=alert(1)>');
  });
});

describe('GroupIndex.example', () => {
  it('names a group of the directory, a numbered one when there is any, and none when it is empty', () => {
    const example = index.example();
    expect(index.search(example ?? '').groups.map((group) => group.name)).toContain(example);
    expect(example).toMatch(/\d/);
    expect(new GroupIndex([{ id: 1, name: 'Аспиранты' }]).example()).toBe('Аспиранты');
    expect(
      new GroupIndex([
        { id: 1, name: 'Аспиранты' },
        { id: 2, name: '01-101' },
      ]).example(),
    ).toBe('01-101');
    expect(new GroupIndex([]).example()).toBeUndefined();
  });
});
