import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import {
  ADDRESS_REFUSED,
  guardedLookupVia,
  isInternalAddress,
  isInternalHost,
  isLoopbackName,
  type Resolve,
} from '../../src/lib/internal-address.ts';

/** Addresses the guard refuses, by the form that carries them. */
const REFUSED: Record<string, string[]> = {
  'IPv4 internal': ['127.0.0.1', '10.1.2.3', '172.20.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.1.2.3'],
  'IPv4 multicast, reserved, documentation': ['224.0.0.1', '240.0.0.1', '255.255.255.255', '192.0.2.7', '203.0.113.9'],
  'IPv6 internal': ['::1', '::', 'fe80::1', 'fd00::1', 'fc00::1', 'ff02::1', '100::1', '2001:db8::1', '2001:2::1'],
  'site-local fec0::/10': ['fec0::1', 'FEC0::1', 'fec0:0:0:1::1', 'feff:ffff::1'],
  'IPv4-mapped ::ffff:0:0/96': ['::ffff:127.0.0.1', '::ffff:7f00:1', '::FFFF:7F00:1', '0:0:0:0:0:ffff:a00:1'],
  'SIIT ::ffff:0:0:0/96': ['::ffff:0:127.0.0.1', '::ffff:0:7f00:1', '0:0:0:0:ffff:0:a9fe:a9fe'],
  'IPv4-compatible ::/96': ['::127.0.0.1', '::7f00:1', '::10.0.0.1', '0:0:0:0:0:0:192.168.0.1', '::a9fe:a9fe'],
  'NAT64 64:ff9b::/96': ['64:ff9b::127.0.0.1', '64:ff9b::7f00:1', '64:FF9B::A9FE:A9FE', '64:ff9b::100.64.0.1'],
  'NAT64 local-use 64:ff9b:1::/48': ['64:ff9b:1::8.8.8.8', '64:ff9b:1:ffff::1', '64:ff9b:1::'],
  '6to4 2002::/16': ['2002:7f00:1::1', '2002:7F00:0001::', '2002:a00:1::1', '2002:a9fe:a9fe::1', '2002:e000:1::1'],
  // Teredo: 2001:0:<server>:<flags>:<port>:<client XOR ffff:ffff>.
  'Teredo 2001::/32, internal server': ['2001:0:a00:1::f7f7:f7f7', '2001:0000:7f00:0001:8000:63bf:f7f7:f7f7'],
  'Teredo 2001::/32, internal client': ['2001:0:4136:e378:8000:63bf:80ff:fffe', '2001:0:4136:e378::3f57:fefe'],
  'zone ids': ['fe80::1%eth0', '::ffff:127.0.0.1%eth0', '2002:7f00:1::1%1', 'fec0::1%lo'],
  brackets: ['[::1]', '[::ffff:127.0.0.1]', '[2002:a00:1::1]'],
  'not an address': ['', 'localhost', '127.1', '0x7f000001', '[127.0.0.1]', '1::2::3', '::ffff:999.0.0.1'],
};

/** Public addresses, in the same forms, which the guard lets through. */
const ACCEPTED: Record<string, string[]> = {
  IPv4: ['8.8.8.8', '77.88.55.88', '17.248.1.1'],
  IPv6: ['2a02:6b8::2:242', '2A02:6B8::2:242', '2606:4700::1111', '2001:4860:4860::8888'],
  'IPv4-mapped and SIIT': ['::ffff:8.8.8.8', '::ffff:808:808', '::ffff:0:8.8.8.8'],
  'NAT64 of a public address': ['64:ff9b::8.8.8.8', '64:ff9b::4d58:3758'],
  '6to4 of a public address': ['2002:808:808::1', '2002:4d58:3758:1::1'],
  'Teredo, public server and client': ['2001:0:4136:e378:8000:63bf:f7f7:f7f7'],
  'zone id on a public address': ['2a02:6b8::2:242%eth0'],
};

describe('isInternalAddress', () => {
  for (const [form, addresses] of Object.entries(REFUSED))
    it(`refuses ${form}`, () => {
      for (const address of addresses) expect(isInternalAddress(address), address).toBe(true);
    });

  for (const [form, addresses] of Object.entries(ACCEPTED))
    it(`lets through ${form}`, () => {
      for (const address of addresses) expect(isInternalAddress(address), address).toBe(false);
    });
});

describe('isInternalHost', () => {
  it('refuses internal literals as a URL spells them, and loopback names with or without the final dot', () => {
    for (const url of [
      'http://[::ffff:127.0.0.1]/',
      'http://[::127.0.0.1]:8080/',
      'http://[::ffff:0:10.0.0.1]/',
      'http://[2002:7f00:1::]/',
      'http://[2001:0:a00:1::f7f7:f7f7]/',
      'http://[64:ff9b::169.254.169.254]/latest/meta-data',
      'http://[64:ff9b:1::1]/',
      'http://[FEC0::1]:8080/',
      'http://0x7f.1/',
      'http://2130706433/',
      'http://localhost/',
      'http://LOCALHOST:8080/',
      'http://localhost./',
      'http://localhost../',
      'http://a.localhost./',
      'http://x.y.localhost/',
    ])
      expect(isInternalHost(new URL(url)), url).toBe(true);
  });

  it('lets public literals and ordinary names through (names are judged when connecting)', () => {
    for (const url of [
      'https://receiver.example/hook',
      'https://localhost.example/',
      'https://notlocalhost/',
      'https://localhost-1.example/',
      'http://[2a02:6b8::2:242]/',
      'http://[64:ff9b::8.8.8.8]/',
      'https://8.8.8.8/',
    ])
      expect(isInternalHost(new URL(url)), url).toBe(false);
  });

  it('knows the loopback names', () => {
    expect(['localhost', 'localhost.', 'LocalHost', 'a.b.localhost.'].every(isLoopbackName)).toBe(true);
    expect(['localhost.example', 'mylocalhost', 'localhost-a'].some(isLoopbackName)).toBe(false);
  });
});

describe('guardedLookupVia', () => {
  /** A resolver answering from a table, counting its questions. */
  function resolver(table: Record<string, LookupAddress[]>) {
    const asked: string[] = [];
    const resolve: Resolve = (hostname, _options, callback) => {
      asked.push(hostname);
      queueMicrotask(() => callback(null, table[hostname] ?? []));
    };
    return { resolve, asked };
  }

  function lookup(resolve: Resolve, hostname: string, options: object = {}) {
    return new Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family?: number | undefined }>((done) =>
      guardedLookupVia(resolve)(hostname, options, (error, address, family) => done({ error, address, family })),
    );
  }

  it('refuses a name whose answers embed an internal IPv4 address, in any of them', async () => {
    const { resolve } = resolver({
      'rebind.example': [{ address: '2002:7f00:1::1', family: 6 }],
      'teredo.example': [{ address: '2001:0:4136:e378:8000:63bf:80ff:fffe', family: 6 }],
      'mixed.example': [
        { address: '8.8.8.8', family: 4 },
        { address: '64:ff9b::a9fe:a9fe', family: 6 },
      ],
    });
    for (const name of ['rebind.example', 'teredo.example', 'mixed.example'])
      expect((await lookup(resolve, name)).error?.code, name).toBe(ADDRESS_REFUSED);
  });

  it('refuses loopback names without asking the resolver', async () => {
    const { resolve, asked } = resolver({ 'localhost.': [{ address: '8.8.8.8', family: 4 }] });
    for (const name of ['localhost', 'localhost.', 'a.localhost.'])
      expect((await lookup(resolve, name)).error?.code, name).toBe(ADDRESS_REFUSED);
    expect(asked).toEqual([]);
  });

  it('answers a public name as asked: the first address, or all of them', async () => {
    const answers = [
      { address: '8.8.8.8', family: 4 },
      { address: '64:ff9b::808:808', family: 6 },
    ];
    const { resolve } = resolver({ 'public.example': answers });
    expect(await lookup(resolve, 'public.example')).toEqual({ error: null, address: '8.8.8.8', family: 4 });
    expect(await lookup(resolve, 'public.example', { all: true })).toEqual({ error: null, address: answers });
  });
});
