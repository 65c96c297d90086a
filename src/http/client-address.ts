/**
 * Who a client is, for the limits of client-limits.ts: its address as `request.ip` gives it (TRUST_PROXY
 * decides whose X-Forwarded-For counts). An IPv4 address is one client (a whole campus behind a NAT, too). An
 * IPv6 client is its /64, the block one subscriber usually holds, and its /48 is its site: one network that can
 * hand out 65,536 /64s must not get 65,536 allowances, so the site has an allowance of its own, a few times a
 * client's.
 */
import { isIPv6 } from 'node:net';
import { ipv6Groups } from '../lib/internal-address.ts';

/** The keys a client is limited by: itself, and for IPv6 the /48 it is part of. */
export interface ClientKeys {
  client: string;
  site?: string;
}

/** The keys of a client address: IPv4 as is (IPv4-mapped IPv6 included), IPv6 by its /64 and its /48. */
export function clientKeys(address: string): ClientKeys {
  const ip = plainAddress(address);
  if (!isIPv6(ip)) return { client: ip };
  const groups = (ipv6Groups(ip) ?? []).map((group) => group.toString(16));
  return { client: `${groups.slice(0, 4).join(':')}::/64`, site: `${groups.slice(0, 3).join(':')}::/48` };
}

/** An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, a dual-stack socket's peer) as the IPv4 address it is. */
export function plainAddress(address: string): string {
  return /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] ?? address;
}

/** The key of a client address alone (its /64 for IPv6). */
export function clientOf(ip: string): string {
  return clientKeys(ip).client;
}
