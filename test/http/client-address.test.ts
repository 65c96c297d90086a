import { describe, expect, it } from 'vitest';
import { clientKeys, clientOf } from '../../src/http/client-address.ts';

describe('clientKeys', () => {
  it.each([
    ['203.0.113.7', { client: '203.0.113.7' }],
    ['::ffff:203.0.113.7', { client: '203.0.113.7' }],
    ['2001:db8:1:2:3:4:5:6', { client: '2001:db8:1:2::/64', site: '2001:db8:1::/48' }],
    ['2001:db8:1:2::9', { client: '2001:db8:1:2::/64', site: '2001:db8:1::/48' }],
    ['2001:0DB8:0001:0002:ffff::1', { client: '2001:db8:1:2::/64', site: '2001:db8:1::/48' }],
    ['2001:db8:1:ffff::1', { client: '2001:db8:1:ffff::/64', site: '2001:db8:1::/48' }],
    ['::1', { client: '0:0:0:0::/64', site: '0:0:0::/48' }],
    ['fe80::1%eth0', { client: 'fe80:0:0:0::/64', site: 'fe80:0:0::/48' }],
  ])('keys %s as %o', (ip, keys) => {
    expect(clientKeys(ip)).toEqual(keys);
    expect(clientOf(ip)).toBe(keys.client);
  });
});
