import type { Config } from '../config.ts';
import type { FeedSettings } from './build-feed.ts';

/** The settings feeds are rendered with, taken from the configuration. */
export function feedSettingsOf(config: Config): FeedSettings {
  return { timezone: config.timezone, weekParityAnchors: config.weekParityAnchors, holidays: config.holidays, refreshIntervalMs: config.refreshIntervalMs };
}
