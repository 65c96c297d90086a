import fc from 'fast-check';
import { foldLines as icalGeneratorFoldLines } from 'ical-generator';
import { describe, expect, it } from 'vitest';
import { foldLines } from '../../src/feeds/fold-lines.ts';

/** Units of a feed's lines, and odd ones: 1-, 2-, 3- and 4-octet characters, lone surrogates, a lone CR or LF. */
const UNITS = ['a', ';', ' ', 'Я', 'ё', '€', '中', '😀', '\uD83D', '\uDE00', '\uDBFF', '\r', '\n'];

const lineArb = fc.array(fc.constantFrom(...UNITS), { maxLength: 200 }).map((units) => `SUMMARY:${units.join('')}`);

describe('foldLines', () => {
  it('folds exactly as ical-generator does, which the stored feeds and their ETags were made with', () => {
    fc.assert(
      fc.property(fc.array(lineArb, { minLength: 1, maxLength: 4 }), (lines) => {
        const text = lines.join('\r\n');
        expect(foldLines(text)).toBe(icalGeneratorFoldLines(text));
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps lines of up to 75 octets whole and never splits a character', () => {
    const cyrillic = `LOCATION:${'Я'.repeat(32)}`; // 9 + 64 = 73 octets
    expect(foldLines(cyrillic)).toBe(cyrillic);
    const long = `DESCRIPTION:${'Я'.repeat(40)}`; // 12 + 80 octets
    const folded = foldLines(long);
    expect(folded).toBe(`DESCRIPTION:${'Я'.repeat(31)}\r\n ${'Я'.repeat(9)}`);
    for (const line of folded.split('\r\n')) expect(Buffer.byteLength(line)).toBeLessThanOrEqual(75);
  });

  it('counts a high surrogate ending a line as ical-generator does', () => {
    const line = `X:${'a'.repeat(69)}\uD83D`;
    expect(foldLines(line)).toBe(icalGeneratorFoldLines(line));
    expect(foldLines(line)).toBe(`X:${'a'.repeat(69)}\r\n \uD83D`);
  });
});
