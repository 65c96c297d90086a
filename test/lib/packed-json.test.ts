import { brotliCompressSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { PackedFormatError } from '../../src/lib/errors.ts';
import { isPacked, packJson, packJsonOffLoop, unpackJson } from '../../src/lib/packed-json.ts';

const value = {
  name: 'Группа 09-351',
  entries: Array.from({ length: 40 }, (_, id) => ({ id, subject: 'Численные методы', room: `${300 + id}` })),
  empty: null,
};

describe('packed JSON', () => {
  it('round-trips a value in a form several times smaller than its JSON text', () => {
    const packed = packJson(value);
    expect(isPacked(packed)).toBe(true);
    expect(packed.subarray(0, 2)).toEqual(Buffer.from([0, 1]));
    expect(unpackJson(packed)).toEqual(value);
    expect(packed.length * 4).toBeLessThan(Buffer.byteLength(JSON.stringify(value)));
  });

  it('packs the same bytes on the thread pool as on the event loop', async () => {
    const packed = await packJsonOffLoop(value);
    expect(packed).toEqual(packJson(value));
    expect(unpackJson(packed)).toEqual(value);
  });

  it('reads plain JSON text, as values were stored before they were packed', () => {
    const plain = Buffer.from(JSON.stringify(value), 'utf8');
    expect(isPacked(plain)).toBe(false);
    expect(unpackJson(plain)).toEqual(value);
    expect(unpackJson(Buffer.from(' [1,2]'))).toEqual([1, 2]);
  });

  it('refuses a packed form of a version it does not know', () => {
    const later = Buffer.concat([Buffer.from([0, 2]), brotliCompressSync(Buffer.from('{}'))]);
    expect(isPacked(later)).toBe(true);
    expect(() => unpackJson(later)).toThrow(PackedFormatError);
  });
});
