/**
 * The guard against internal addresses for every request the service makes to a URL someone else gave it
 * (a CalDAV server, a webhook receiver): such a URL could otherwise point the service at its own network.
 * Literals are judged by {@link isInternalAddress}; names on what they resolve to when connecting
 * ({@link guardedLookup}), so a public name pointing at 127.0.0.1 is refused too.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { Agent } from 'undici';

/** The `code` of the error a guarded connection fails with when a name resolves to an internal address. */
export const ADDRESS_REFUSED = 'ADDRESS_REFUSED';

/**
 * Addresses a server may not have unless private hosts are allowed: "this network", loopback, RFC 1918, carrier
 * NAT, link-local (cloud metadata lives there), the IETF's own block, documentation, the old 6to4 relay,
 * benchmarking, multicast and reserved; their IPv6 twins, the deprecated site-local `fec0::/10` and the local-use
 * NAT64 prefix `64:ff9b:1::/48` (a site's own translator, whose IPv4 part sits where that site chose).
 */
const INTERNAL = (() => {
  const list = new BlockList();
  const v4: [string, number][] = [
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.0.0.0', 24],
    ['192.0.2.0', 24],
    ['192.88.99.0', 24],
    ['192.168.0.0', 16],
    ['198.18.0.0', 15],
    ['198.51.100.0', 24],
    ['203.0.113.0', 24],
    ['224.0.0.0', 4],
    ['240.0.0.0', 4],
  ];
  for (const [net, bits] of v4) list.addSubnet(net, bits, 'ipv4');
  const v6: [string, number][] = [
    ['::', 128],
    ['::1', 128],
    ['64:ff9b:1::', 48],
    ['100::', 64],
    ['2001:2::', 48],
    ['2001:db8::', 32],
    ['fc00::', 7],
    ['fe80::', 10],
    ['fec0::', 10],
    ['ff00::', 8],
  ];
  for (const [net, bits] of v6) list.addSubnet(net, bits, 'ipv6');
  return list;
})();

/**
 * The eight 16-bit groups of an IPv6 address in any spelling (`::` anywhere, upper case, a dotted-quad tail, a
 * zone id `%eth0`, brackets), or undefined when `text` is not one.
 */
export function ipv6Groups(text: string): number[] | undefined {
  const address = text.replace(/^\[(.*)\]$/, '$1').replace(/%[^%]*$/, '');
  if (isIP(address) !== 6) return undefined;
  // A dotted-quad tail (`::ffff:127.0.0.1`) is the last two groups.
  const hex = address.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_, a, b, c, d) =>
    [(Number(a) << 8) | Number(b), (Number(c) << 8) | Number(d)].map((group) => group.toString(16)).join(':'),
  );
  const [head = '', tail] = hex.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16)));
  const before = groups(head);
  const after = tail === undefined ? [] : groups(tail);
  return [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
}

function ipv4Of(high: number, low: number): string {
  return `${high >>> 8}.${high & 0xff}.${low >>> 8}.${low & 0xff}`;
}

/**
 * The IPv4 addresses a packet to this IPv6 address reaches: IPv4-mapped `::ffff:0:0/96`, SIIT `::ffff:0:0:0/96`,
 * IPv4-compatible `::/96`, NAT64 `64:ff9b::/96` (the last 32 bits), 6to4 `2002::/16` (bits 16–48), Teredo
 * `2001::/32` (its server in bits 32–64, its client inverted in the last 32 bits).
 */
function embeddedIpv4(g: readonly number[]): string[] {
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = g;
  const zeroTo = (end: number) => g.slice(0, end).every((group) => group === 0);
  if (zeroTo(5) && g5 === 0xffff) return [ipv4Of(g6, g7)];
  if (zeroTo(4) && g4 === 0xffff && g5 === 0) return [ipv4Of(g6, g7)];
  if (zeroTo(6)) return [ipv4Of(g6, g7)];
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return [ipv4Of(g6, g7)];
  if (g0 === 0x2002) return [ipv4Of(g1 ?? 0, g2 ?? 0)];
  if (g0 === 0x2001 && g1 === 0) return [ipv4Of(g2 ?? 0, g3 ?? 0), ipv4Of(~g6 & 0xffff, ~g7 & 0xffff)];
  return [];
}

/**
 * Whether `address` (an IP literal in any spelling) is internal. An IPv6 address that carries an IPv4 one
 * (mapped, compatible, NAT64, 6to4, Teredo) is internal when that IPv4 address is: a packet to it ends there.
 * Anything that is not an address is internal too: refuse rather than guess.
 */
export function isInternalAddress(address: string): boolean {
  if (isIP(address) === 4) return INTERNAL.check(address, 'ipv4');
  const groups = ipv6Groups(address);
  if (groups === undefined) return true;
  const canonical = groups.map((group) => group.toString(16)).join(':');
  if (INTERNAL.check(canonical, 'ipv6')) return true;
  return embeddedIpv4(groups).some((ipv4) => INTERNAL.check(ipv4, 'ipv4'));
}

/** Whether `hostname` is `localhost` or a name under it, with or without the final dot: RFC 6761 keeps them for loopback. */
export function isLoopbackName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * Whether the host of `url` is an IP literal that is internal. Names are not judged here: they are judged on
 * what they resolve to, when connecting (see {@link guardedLookup}); literals never resolve.
 */
export function isInternalLiteral(url: URL): boolean {
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(literal) !== 0 && isInternalAddress(literal);
}

/**
 * Whether the host of `url` is internal as written, before any lookup: an internal IP literal or a
 * {@link isLoopbackName loopback name}. What registration refuses at once; other names wait for the connection.
 */
export function isInternalHost(url: URL): boolean {
  return isLoopbackName(url.hostname) || isInternalLiteral(url);
}

function addressRefused(hostname: string): Error {
  return Object.assign(new Error(`${hostname} resolves to an internal address`), { code: ADDRESS_REFUSED });
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A resolver shaped like `dns.lookup` with `all: true`, so tests can play a name that resolves to loopback. */
export type Resolve = (
  hostname: string,
  options: { all: true },
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * A DNS lookup that refuses internal addresses: the check is on what the name resolves to at connect time (a
 * public name pointing at 127.0.0.1 is refused too), not on the name; a loopback name is refused without asking,
 * whatever a resolver would say of it. Its error carries `code` {@link ADDRESS_REFUSED}.
 */
export function guardedLookupVia(resolve: Resolve) {
  return (hostname: string, options: object, callback: LookupCallback): void => {
    if (isLoopbackName(hostname)) {
      queueMicrotask(() => callback(addressRefused(hostname) as NodeJS.ErrnoException, ''));
      return;
    }
    resolve(hostname, { ...options, all: true }, (error, all) => {
      if (error) {
        callback(error, '');
        return;
      }
      if (all.length === 0 || all.some((entry) => isInternalAddress(entry.address))) {
        callback(addressRefused(hostname) as NodeJS.ErrnoException, '');
        return;
      }
      const first = all[0] as LookupAddress;
      if ((options as { all?: boolean }).all === true) callback(null, all);
      else callback(null, first.address, first.family);
    });
  };
}

/** {@link guardedLookupVia} the system resolver: the lookup of every guarded connection. */
export const guardedLookup = guardedLookupVia(dnsLookup as Resolve);

/** The settings of a {@link guardedAgent}. */
export interface GuardedAgentOptions {
  /** Whether loopback and private addresses may be reached (tests, a receiver on the same network). */
  allowPrivate: boolean;
  connectMs: number;
  headersMs: number;
  bodyMs?: number | undefined;
  connections?: number | undefined;
}

/**
 * An undici Agent whose connections go through {@link guardedLookup} unless private hosts are allowed. An IP
 * literal is not looked up: check it with {@link isInternalLiteral} before the request.
 */
export function guardedAgent(options: GuardedAgentOptions): Agent {
  return new Agent({
    connect: {
      timeout: options.connectMs,
      ...(options.allowPrivate ? {} : { lookup: guardedLookup as never }),
    },
    headersTimeout: options.headersMs,
    bodyTimeout: options.bodyMs ?? options.headersMs,
    ...(options.connections === undefined ? {} : { connections: options.connections }),
  });
}

/** Whether `error` (or its cause) is the refusal of {@link guardedLookup}. */
export function isAddressRefused(error: unknown): boolean {
  const code = (value: unknown) =>
    typeof value === 'object' && value !== null ? (value as { code?: unknown }).code : undefined;
  return code(error) === ADDRESS_REFUSED || code((error as { cause?: unknown } | undefined)?.cause) === ADDRESS_REFUSED;
}
