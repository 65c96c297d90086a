import { describe, expect, it } from 'vitest';
import { failureReason, mayCarryCredentials } from '../../src/caldav/dav-http.ts';
import { isInternalAddress } from '../../src/lib/internal-address.ts';

describe('mayCarryCredentials', () => {
  const carries = (from: string, to: string) => mayCarryCredentials(new URL(from), new URL(to));

  it('carries the password within a host and to a partition host of the same site', () => {
    expect(carries('https://caldav.icloud.com/', 'https://caldav.icloud.com/123/')).toBe(true);
    expect(carries('https://caldav.icloud.com/', 'https://p62-caldav.icloud.com:443/123/calendars/')).toBe(true);
    expect(carries('https://caldav.yandex.ru/', 'https://caldav.yandex.ru/calendars/a%40yandex.ru/')).toBe(true);
    expect(carries('https://dav.example.co.uk/', 'https://cal.example.co.uk/')).toBe(true);
  });

  it('never to another site, a site under the same country domain, plain http or another IP port', () => {
    expect(carries('https://caldav.icloud.com/', 'https://icloud.com.evil.example/')).toBe(false);
    expect(carries('https://dav.example.co.uk/', 'https://other.co.uk/')).toBe(false);
    expect(carries('https://caldav.icloud.com/', 'http://p62-caldav.icloud.com/')).toBe(false);
    expect(carries('http://127.0.0.1:5232/', 'http://127.0.0.1:5233/')).toBe(false);
  });
});

describe('isInternalAddress', () => {
  it('refuses loopback, private, link-local, carrier NAT and mapped IPv4 addresses', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '172.20.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1'])
      expect(isInternalAddress(address), address).toBe(true);
    for (const address of ['::1', '::', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1'])
      expect(isInternalAddress(address), address).toBe(true);
  });

  it('lets public addresses through', () => {
    for (const address of ['17.248.1.1', '77.88.55.88', '2a02:6b8::2:242', '::ffff:8.8.8.8'])
      expect(isInternalAddress(address), address).toBe(false);
  });
});

describe('failureReason', () => {
  it("names a DAV precondition or Sabre's message, without the password", () => {
    expect(failureReason('<error xmlns="DAV:"><valid-sync-token /></error>', 'pw')).toBe('valid-sync-token');
    const sabre =
      '<d:error xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns"><s:exception>TooManyRequests</s:exception>' +
      '<s:message>Too many calendars created for pw</s:message></d:error>';
    expect(failureReason(sabre, 'pw')).toBe('Too many calendars created for [redacted]');
    expect(failureReason('<html>oops</html>', 'pw')).toBeUndefined();
  });
});
