/**
 * windows-1251, the charset older deployments of the university API answer in. Node can decode it (WHATWG
 * `TextDecoder`) but has no encoder, so the table is built once by decoding every byte.
 */
import { TextDecoder } from 'node:util';

let table: Map<number, number> | undefined;

function encodingTable(): Map<number, number> {
  if (table) return table;
  const decoder = new TextDecoder('windows-1251');
  table = new Map();
  for (let byte = 0x80; byte <= 0xff; byte += 1) {
    const char = decoder.decode(Uint8Array.of(byte));
    // 0x98 is the one undefined byte: it decodes to U+FFFD, which must not map back to it.
    if (char !== '\ufffd') table.set(char.codePointAt(0) ?? 0, byte);
  }
  return table;
}

/** `text` in windows-1251; a character it cannot hold becomes `?`, as a legacy server would send it. */
export function encodeWindows1251(text: string): Buffer {
  const bytes = encodingTable();
  const out = Buffer.alloc(text.length);
  let length = 0;
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    out[length] = code < 0x80 ? code : (bytes.get(code) ?? 0x3f);
    length += 1;
  }
  return out.subarray(0, length);
}
