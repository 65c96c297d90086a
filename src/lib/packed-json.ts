/**
 * JSON values stored compressed: a two-byte prefix (a zero byte, which no JSON text starts with, and the
 * format version) and the Brotli form of the JSON text. Values stored before as plain JSON text are still read.
 *
 * Brotli at quality 5 was chosen by measuring a median simulator group's and teacher's snapshot, published state
 * and first change record (10–28 KB of JSON each, 0.9–1.6 KB packed): 6–30 % smaller than raw deflate at level 6
 * for 60–140 µs of CPU a value instead of 30–60, and read back in under 50 µs; quality 9 costs 1.3–2 ms for
 * under 10 % more, quality 11 10–35 ms. Reading back runs synchronously on the event loop; a publication packs
 * its snapshot and published state on libuv's thread pool ({@link packJsonOffLoop}: the same bytes), which
 * otherwise held a worker's loop for about a millisecond per publication while other jobs and its BullMQ lock
 * renewals waited.
 */
import { promisify } from 'node:util';
import { brotliCompress, brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';
import { PackedFormatError } from './errors.ts';

/** The first byte of a packed value: a JSON text never starts with it. */
const MARK = 0x00;
/** The format version after the mark; a later format takes the next number. */
const VERSION = 0x01;

const QUALITY = 5;

const brotliAsync = promisify(brotliCompress);

/** The packed form of `value` (any JSON value). */
export function packJson(value: unknown): Buffer {
  const text = Buffer.from(JSON.stringify(value), 'utf8');
  return withPrefix(brotliCompressSync(text, brotliOptions(text)));
}

/**
 * {@link packJson}'s bytes, compressed on libuv's thread pool (the JSON text is made on the event loop). For a
 * value written in a transaction, pack it before the transaction starts.
 */
export async function packJsonOffLoop(value: unknown): Promise<Buffer> {
  const text = Buffer.from(JSON.stringify(value), 'utf8');
  return withPrefix(await brotliAsync(text, brotliOptions(text)));
}

function brotliOptions(text: Buffer): { params: Record<number, number> } {
  return {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: QUALITY,
      [constants.BROTLI_PARAM_SIZE_HINT]: text.length,
    },
  };
}

function withPrefix(packed: Buffer): Buffer {
  return Buffer.concat([Buffer.from([MARK, VERSION]), packed]);
}

/** Whether `bytes` are in the packed form (anything else is read as plain JSON text). */
export function isPacked(bytes: Buffer): boolean {
  return bytes.length >= 2 && bytes[0] === MARK;
}

/** The value of a packed form or of a plain JSON text, as stored before values were packed. */
export function unpackJson<T>(bytes: Buffer): T {
  if (!isPacked(bytes)) return JSON.parse(bytes.toString('utf8')) as T;
  if (bytes[1] !== VERSION)
    throw new PackedFormatError(`a stored value has packed format version ${bytes[1]}; this release reads ${VERSION}`);
  return JSON.parse(brotliDecompressSync(bytes.subarray(2)).toString('utf8')) as T;
}
