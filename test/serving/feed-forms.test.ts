import { brotliDecompressSync } from 'node:zlib';
import { describe, expect, it, vi } from 'vitest';
import { FEED_OVERHEAD_BYTES, FeedForms } from '../../src/serving/feed-forms.ts';
import { encodeFeed } from '../../src/store/feed-store.ts';

const ICS = `BEGIN:VCALENDAR\r\n${'X-LINE:Алгебра, ауд. 1305\r\n'.repeat(200)}END:VCALENDAR\r\n`;

describe('FeedForms', () => {
  it('makes identity and br from the gzip form once for concurrent requests, and counts their bytes', async () => {
    const served = FeedForms.served(await encodeFeed(ICS, Date.UTC(2025, 9, 1)));
    const { forms } = served;
    const grown = vi.fn();
    forms.onGrow = grown;
    expect(forms.ready('identity')).toBeUndefined();
    expect(forms.ready('br')).toBeUndefined();
    expect(forms.identityLength).toBe(Buffer.byteLength(ICS));
    expect(forms.bytes).toBe(forms.gzip.length + FEED_OVERHEAD_BYTES);

    const brs = await Promise.all([forms.get('br'), forms.get('br'), forms.get('br')]);
    // One brotli made: every request got the very buffer that is kept.
    for (const br of brs) expect(br).toBe(forms.ready('br'));
    expect(brotliDecompressSync(brs[0] as Buffer).toString()).toBe(ICS);
    // The identity body it was made from is not kept: nobody asked for it.
    expect(forms.ready('identity')).toBeUndefined();
    expect(grown).toHaveBeenCalledTimes(1);

    const identities = await Promise.all([forms.get('identity'), forms.get('identity')]);
    expect(identities[0]).toBe(identities[1]);
    expect(identities[0]?.toString()).toBe(ICS);
    expect(grown).toHaveBeenCalledTimes(2);
    expect(forms.bytes).toBe(
      forms.gzip.length + Buffer.byteLength(ICS) + (forms.ready('br')?.length ?? 0) + FEED_OVERHEAD_BYTES,
    );
    expect(await forms.get('gzip')).toBe(forms.gzip);
  });
});
