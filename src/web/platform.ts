/**
 * The kind of device a page is read on, guessed from its User-Agent (pure), so that a timetable page shows the
 * calendar steps that fit it first and leaves out what makes no sense there (a QR code to scan with the phone
 * the page is already on). A guess only orders and hides hints: every calendar's steps stay one tap away.
 *
 * iPadOS 13 and later send a Mac's User-Agent, and the server cannot tell them apart (only a touch screen
 * would), so a Mac also gets Apple's steps first, written for iPhone, iPad and Mac alike.
 */

/** Where a page is read. */
export type Platform = 'ios' | 'android' | 'mac' | 'windows' | 'linux' | 'other';

/** The platform a User-Agent names; `other` when it names none we know (or there is none). */
export function platformOf(userAgent: string | undefined): Platform {
  const ua = userAgent ?? '';
  // iPhone and old iPads name themselves; Chrome, Firefox and Yandex Browser on iOS say "like Mac OS X" too.
  if (/\b(iPhone|iPad|iPod)\b/.test(ua)) return 'ios';
  // Before Linux: Android browsers (Chrome, Yandex Browser, Samsung Internet) send "Linux; Android".
  if (/\bAndroid\b/.test(ua)) return 'android';
  if (/\bMacintosh\b|\bMac OS X\b/.test(ua)) return 'mac';
  if (/\bWindows\b/.test(ua)) return 'windows';
  if (/\bCrOS\b/.test(ua)) return 'other';
  if (/\bLinux\b|\bX11\b/.test(ua)) return 'linux';
  return 'other';
}

/** True where the page is already on a phone (or an iPad that says so): no QR code to scan there. */
export function isPhone(platform: Platform): boolean {
  return platform === 'ios' || platform === 'android';
}
