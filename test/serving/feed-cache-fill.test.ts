import { describe, expect, it } from 'vitest';
import { DEFAULT_FEED_CACHE_BYTES, feedCacheFillBytes } from '../../src/serving/feed-cache.ts';

describe('feedCacheFillBytes', () => {
  it('leaves a quarter of the budget for what keeping feeds costs beyond their count', () => {
    expect(feedCacheFillBytes(DEFAULT_FEED_CACHE_BYTES)).toBe(192 * 1024 * 1024);
    expect(feedCacheFillBytes(1024 * 1024)).toBe(786_432);
  });

  it('is whole bytes', () => {
    expect(feedCacheFillBytes(1_000_001)).toBe(750_000);
  });
});
