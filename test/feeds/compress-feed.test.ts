import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { compressFeed } from '../../src/store/feed-store.ts';

describe('compressFeed', () => {
  it('gives each of many concurrent feeds its own encodings, and goes on after one fails', async () => {
    const bodies = Array.from({ length: 20 }, (_, index) =>
      Buffer.from(`BEGIN:VCALENDAR\r\nX-N:${index}\r\n`.repeat(50)),
    );
    const failed = compressFeed(42 as unknown as Buffer);
    const results = await Promise.all(bodies.map(compressFeed));
    await expect(failed).rejects.toThrow();
    results.forEach((encoded, index) => {
      expect(gunzipSync(encoded.gzip)).toEqual(bodies[index]);
      expect(brotliDecompressSync(encoded.brotli)).toEqual(bodies[index]);
    });
  });
});
