/** Debian's `chromium` for page tests and screenshots, found or installed as the test setup does `redis-server`. */
import { findOrInstall } from './debian-packages.ts';

/** Where Debian's package puts the browser. */
export const CHROMIUM_PATHS = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

/**
 * The path of a Chromium executable, installing Debian's `chromium` package when it is missing and we are root
 * (as the test setup does for `redis-server`). Throws with what to do otherwise.
 */
export function ensureChromium(): string {
  const installed = findOrInstall('chromium', CHROMIUM_PATHS);
  if (installed === undefined)
    throw new Error('the page tests need Chromium: install it with `sudo apt-get install chromium` (Debian/Ubuntu)');
  return installed;
}
