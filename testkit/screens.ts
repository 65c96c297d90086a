/**
 * The two screens pages are checked and photographed at (test/web/pages-a11y.browser.integration.test.ts,
 * scripts/screenshots.ts): a phone as a student holds it, 390×844 with an iPhone's user agent (the pages pick
 * the calendar steps from it), and a laptop, 1280×900 with a desktop Chrome's.
 */
import type { BrowserContextOptions } from 'playwright-core';

/** One screen: its name in file names and messages, and the browser context that emulates it. */
export interface Screen {
  name: 'phone' | 'desktop';
  width: number;
  height: number;
  context: BrowserContextOptions;
}

const IPHONE_UA =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';
const DESKTOP_UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

export const PHONE: Screen = {
  name: 'phone',
  width: 390,
  height: 844,
  context: {
    viewport: { width: 390, height: 844 },
    userAgent: IPHONE_UA,
    isMobile: true,
    hasTouch: true,
    locale: 'ru-RU',
  },
};

export const DESKTOP: Screen = {
  name: 'desktop',
  width: 1280,
  height: 900,
  context: { viewport: { width: 1280, height: 900 }, userAgent: DESKTOP_UA, locale: 'ru-RU' },
};

export const SCREENS: readonly Screen[] = [PHONE, DESKTOP];
