import { describe, expect, it } from 'vitest';
import { createMetrics, type FeedCacheFills } from '../../src/runtime/metrics.ts';

/** The feed cache samples of one scrape, as `name{cache="…"} value` lines. */
async function cacheSamples(metrics: ReturnType<typeof createMetrics>): Promise<string[]> {
  const text = await metrics.registry.metrics();
  return text.split('\n').filter((line) => line.startsWith('timetable_feed_cache_'));
}

describe('feed cache gauges', () => {
  it('show nothing until feed routes plug their caches in, then what the caches hold at each scrape', async () => {
    const metrics = createMetrics();
    expect(await cacheSamples(metrics)).toEqual([]);

    const fills: FeedCacheFills = {
      feeds: { bytes: 5_000, budgetBytes: 8_388_608, entries: 1 },
      variants: { bytes: 0, budgetBytes: 67_108_864, entries: 0 },
    };
    metrics.setFeedCaches(() => fills);
    fills.variants = { bytes: 7_000, budgetBytes: 67_108_864, entries: 2 };
    expect(await cacheSamples(metrics)).toEqual([
      'timetable_feed_cache_bytes{cache="feeds"} 5000',
      'timetable_feed_cache_bytes{cache="variants"} 7000',
      'timetable_feed_cache_budget_bytes{cache="feeds"} 8388608',
      'timetable_feed_cache_budget_bytes{cache="variants"} 67108864',
      'timetable_feed_cache_entries{cache="feeds"} 1',
      'timetable_feed_cache_entries{cache="variants"} 2',
    ]);
  });
});
