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

  it('tells tenants of a shared domain apart by the public suffix list, its private part included', () => {
    const table: [from: string, to: string, carried: boolean][] = [
      ['https://a.github.io/', 'https://b.github.io/', false],
      ['https://a.github.io/', 'https://github.io/', false],
      ['https://dav.a.github.io/', 'https://p1.a.github.io/', true],
      ['https://x.narod.ru/', 'https://y.narod.ru/', false],
      ['https://www.x.narod.ru/', 'https://x.narod.ru/', true],
      ['https://x.ucoz.ru/', 'https://y.ucoz.ru/', false],
      ['https://a.herokuapp.com/', 'https://b.herokuapp.com/', false],
      ['https://bucket-a.s3.amazonaws.com/', 'https://bucket-b.s3.amazonaws.com/', false],
      ['https://dav.example.msk.ru/', 'https://other.msk.ru/', false],
      ['https://dav.example.msk.ru/', 'https://cal.example.msk.ru/', true],
      ['https://caldav.yandex.ru/', 'https://caldav.yandex.ru./', true],
      ['https://caldav.icloud.com/', 'https://P62-CALDAV.icloud.com/', true],
      // A name without a registrable part, and an IP literal, only match themselves (port included).
      ['http://radicale:5232/', 'http://radicale:5232/x/', true],
      ['http://radicale:5232/', 'http://radicale:5233/', false],
      ['http://localhost:5232/', 'http://a.localhost:5232/', false],
      ['http://[::1]:5232/', 'http://[::1]:5233/', false],
      ['http://[::1]:5232/', 'http://[::1]:5232/x/', true],
      ['http://10.0.0.1/', 'http://10.0.0.2/', false],
    ];
    for (const [from, to, carried] of table) expect(carries(from, to), `${from} → ${to}`).toBe(carried);
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
