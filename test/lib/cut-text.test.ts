import { describe, expect, it } from 'vitest';
import { cutWithEllipsis, firstCodePoints } from '../../src/lib/cut-text.ts';

describe('cutting text by code points', () => {
  it('counts a surrogate pair as one character and never splits it', () => {
    expect(firstCodePoints('a📚b', 2)).toBe('a📚');
    expect(firstCodePoints('📚📚📚', 1)).toBe('📚');
    expect(firstCodePoints('📚📚', 5)).toBe('📚📚');
    for (let max = 0; max < 12; max += 1) {
      const cut = cutWithEllipsis('Ф📚и🎓з📚и🎓к📚а', max);
      expect(cut.isWellFormed()).toBe(true);
      expect([...cut].length).toBeLessThanOrEqual(Math.max(max, 1));
    }
  });

  it('keeps text that fits, and marks a cut with «…» within the length', () => {
    expect(cutWithEllipsis('Оптика', 6)).toBe('Оптика');
    expect(cutWithEllipsis('Оптика', 5)).toBe('Опти…');
    expect(cutWithEllipsis('🎓🎓🎓', 2)).toBe('🎓…');
  });
});
