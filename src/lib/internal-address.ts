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
 * NAT, link-local (cloud metadata lives there), benchmarking, multicast and reserved; their IPv6 twins.
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
    ['192.168.0.0', 16],
    ['198.18.0.0', 15],
    ['224.0.0.0', 4],
    ['240.0.0.0', 4],
  ];
  for (const [net, bits] of v4) list.addSubnet(net, bits, 'ipv4');
  const v6: [string, number][] = [
    ['::', 128],
    ['::1', 128],
    ['64:ff9b::', 96],
    ['fc00::', 7],
    ['fe80::', 10],
    ['ff00::', 8],
  ];
  for (const [net, bits] of v6) list.addSubnet(net, bits, 'ipv6');
  return list;
})();

/** Whether `address` (an IP literal) is internal; IPv4-mapped IPv6 addresses are judged by their IPv4 part. */
export function isInternalAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return INTERNAL.check(mapped[1], 'ipv4');
  const family = isIP(address);
  if (family === 0) return true; // not an address at all: refuse rather than guess
  return INTERNAL.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Whether the host of `url` is an IP literal that is internal. Names are not judged here: they are judged on
 * what they resolve to, when connecting (see {@link guardedLookup}); literals never resolve.
 */
export function isInternalLiteral(url: URL): boolean {
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(literal) !== 0 && isInternalAddress(literal);
}

function addressRefused(hostname: string): Error {
  return Object.assign(new Error(`${hostname} resolves to an internal address`), { code: ADDRESS_REFUSED });
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * DNS lookup that refuses internal addresses: the check is on what the name resolves to at connect time (a
 * public name pointing at 127.0.0.1 is refused too), not on the name. Its error carries `code`
 * {@link ADDRESS_REFUSED}.
 */
export function guardedLookup(hostname: string, options: object, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) {
      callback(error, '');
      return;
    }
    const all: LookupAddress[] = addresses;
    if (all.length === 0 || all.some((entry) => isInternalAddress(entry.address))) {
      callback(addressRefused(hostname) as NodeJS.ErrnoException, '');
      return;
    }
    const first = all[0] as LookupAddress;
    if ((options as { all?: boolean }).all === true) callback(null, all);
    else callback(null, first.address, first.family);
  });
}

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
