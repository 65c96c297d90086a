/** The platform a page is read on, from real browsers' User-Agent strings. */
import { describe, expect, it } from 'vitest';
import { isPhone, type Platform, platformOf } from '../../src/web/platform.ts';

const AGENTS: [string, string, Platform][] = [
  [
    'iPhone Safari',
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
    'ios',
  ],
  [
    'Chrome on iPhone',
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1',
    'ios',
  ],
  [
    'iPad on iPadOS 12',
    'Mozilla/5.0 (iPad; CPU OS 12_5_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/12.1.2 Mobile/15E148 Safari/604.1',
    'ios',
  ],
  [
    // iPadOS 13 and later ask for desktop sites with a Mac's User-Agent: indistinguishable from one.
    'iPad on iPadOS 17 (a Mac User-Agent)',
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
    'mac',
  ],
  [
    'Android Chrome',
    'Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36',
    'android',
  ],
  [
    'Yandex Browser on Android',
    'Mozilla/5.0 (Linux; arm_64; Android 12; SM-G991B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.6261.128 YaBrowser/24.4.3.91.00 SA/3 Mobile Safari/537.36',
    'android',
  ],
  [
    'Samsung Internet on an Android tablet',
    'Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Safari/537.36',
    'android',
  ],
  [
    'Chrome on a Mac',
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36',
    'mac',
  ],
  [
    'Windows Edge',
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.2592.68',
    'windows',
  ],
  [
    'Yandex Browser on Windows',
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 YaBrowser/24.6.0.0 Safari/537.36',
    'windows',
  ],
  ['Linux Firefox', 'Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0', 'linux'],
  [
    'headless Chromium on Linux',
    'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/126.0.0.0 Safari/537.36',
    'linux',
  ],
  [
    'ChromeOS',
    'Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36',
    'other',
  ],
  ['curl', 'curl/8.5.0', 'other'],
];

describe('platformOf', () => {
  it.each(AGENTS)('reads %s', (_name, userAgent, platform) => {
    expect(platformOf(userAgent)).toBe(platform);
  });

  it('reads no User-Agent as other', () => {
    expect(platformOf(undefined)).toBe('other');
    expect(platformOf('')).toBe('other');
  });

  it('counts iPhones and Android devices as phones, nothing else', () => {
    expect((['ios', 'android', 'mac', 'windows', 'linux', 'other'] as const).filter(isPhone)).toEqual([
      'ios',
      'android',
    ]);
  });
});
