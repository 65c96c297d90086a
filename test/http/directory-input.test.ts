/** Reading a group list posted to POST /admin/directory: JSON and CSV, and the 400s naming what is wrong. */
import { describe, expect, it } from 'vitest';
import { csvRows, decodeCsv, groupsFromCsv, groupsFromJson } from '../../src/http/directory-input.ts';
import { HttpError } from '../../src/http/errors.ts';

function refusal(read: () => unknown): string {
  try {
    read();
  } catch (error) {
    if (error instanceof HttpError && error.statusCode === 400) return error.message;
    throw error;
  }
  throw new Error('expected a 400');
}

describe('groupsFromJson', () => {
  it('takes an array or {"groups": [...]}, ids as numbers or digits', () => {
    const groups = [
      { id: 1, name: '09-351' },
      { id: 2, name: 'ИВТ-21' },
    ];
    expect(groupsFromJson(groups)).toEqual(groups);
    expect(groupsFromJson({ groups: [{ id: '1', name: ' 09-351 ' }] })).toEqual([{ id: 1, name: '09-351' }]);
  });

  it('names the element and field of the first problem', () => {
    expect(refusal(() => groupsFromJson({ items: [] }))).toMatch(/^body must be JSON, an array/);
    expect(refusal(() => groupsFromJson([]))).toBe('no groups to import');
    expect(refusal(() => groupsFromJson([{ id: 1, name: 'a' }, 'x']))).toBe(
      '[1]: must be an object {"id": …, "name": "…"}',
    );
    expect(refusal(() => groupsFromJson({ groups: [{ id: 0, name: 'a' }] }))).toBe(
      'groups[0]: id must be a positive whole number, got "0"',
    );
    expect(refusal(() => groupsFromJson([{ id: 1.5, name: 'a' }]))).toMatch(/^\[0\]: id must be a positive/);
    expect(refusal(() => groupsFromJson([{ id: 1 }]))).toBe('[0]: name must be text, got nothing');
    expect(refusal(() => groupsFromJson([{ id: 1, name: ' ' }]))).toMatch(/^\[0\]: name must be 1 to 100 characters/);
  });

  it('takes an id twice with the same name, refuses it with another', () => {
    expect(
      groupsFromJson([
        { id: 1, name: 'a' },
        { id: 1, name: 'a' },
      ]),
    ).toEqual([{ id: 1, name: 'a' }]);
    expect(
      refusal(() =>
        groupsFromJson([
          { id: 1, name: 'a' },
          { id: 1, name: 'b' },
        ]),
      ),
    ).toBe('[1]: id 1 is already "a" ([0])');
  });
});

describe('groupsFromCsv', () => {
  it('reads id,name lines with or without a header, quoted fields and CRLF', () => {
    expect(groupsFromCsv('1,09-351\n2,"ИВТ, 21"\r\n\n3,"say ""hi"""\n')).toEqual([
      { id: 1, name: '09-351' },
      { id: 2, name: 'ИВТ, 21' },
      { id: 3, name: 'say "hi"' },
    ]);
    expect(groupsFromCsv('\uFEFFid,name\n1,09-351\n')).toEqual([{ id: 1, name: '09-351' }]);
    expect(groupsFromCsv('name;ID\n09-351;1\n')).toEqual([{ id: 1, name: '09-351' }]);
  });

  it('names the line of the first problem', () => {
    expect(refusal(() => groupsFromCsv(''))).toMatch(/no lines/);
    expect(refusal(() => groupsFromCsv('id,name\n1,a\nx,b\n'))).toBe(
      'line 3: id must be a positive whole number, got "x"',
    );
    expect(refusal(() => groupsFromCsv('1,a\n2\n'))).toBe('line 2: expected 2 fields (id,name), got 1');
    expect(refusal(() => groupsFromCsv('1,a\n2,"b\n'))).toBe('line 2: a quoted field is not closed');
  });

  it('counts lines inside quoted fields', () => {
    expect(csvRows('1,"a\nb"\n2,c').map((row) => row.line)).toEqual([1, 3]);
  });

  it('takes the separator an Excel first line sep=X names, counting that line', () => {
    expect(groupsFromCsv('sep=;\r\nid;name\r\n1;ИВТ, 21\r\n')).toEqual([{ id: 1, name: 'ИВТ, 21' }]);
    expect(groupsFromCsv('\uFEFFSEP=,\n1,a;b\n')).toEqual([{ id: 1, name: 'a;b' }]);
    expect(refusal(() => groupsFromCsv('sep=;\n1;a\nx;b\n'))).toBe(
      'line 3: id must be a positive whole number, got "x"',
    );
  });
});

describe('decodeCsv', () => {
  // «ИВТ-21» as Excel saves it in a Russian locale.
  const cp1251 = Uint8Array.from([0x31, 0x2c, 0xc8, 0xc2, 0xd2, 0x2d, 0x32, 0x31]);

  it('decodes UTF-8 by default and the charset the Content-Type names', () => {
    expect(decodeCsv(new TextEncoder().encode('1,ИВТ-21'), undefined)).toBe('1,ИВТ-21');
    expect(decodeCsv(cp1251, 'windows-1251')).toBe('1,ИВТ-21');
    expect(decodeCsv(cp1251, 'CP1251')).toBe('1,ИВТ-21');
  });

  it('refuses bytes that are not text in the charset, naming the line, and a charset it does not know', () => {
    const sent = Uint8Array.from([...new TextEncoder().encode('id,name\n2,ok\n'), ...cp1251]);
    expect(refusal(() => decodeCsv(sent, undefined))).toMatch(/^line 3: not UTF-8: say charset=windows-1251/);
    // windows-1251 maps every byte; ISO 8859-8 leaves 0xA1 unmapped.
    expect(refusal(() => decodeCsv(Uint8Array.from([0x31, 0x2c, 0xa1]), 'iso-8859-8'))).toBe(
      "line 1: not iso-8859-8 text, as the Content-Type's charset says",
    );
    expect(refusal(() => decodeCsv(cp1251, 'klingon'))).toBe('unknown charset "klingon" in Content-Type');
  });
});
