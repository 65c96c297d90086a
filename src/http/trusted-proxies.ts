/** Which peers `TRUST_PROXY` names as proxies: one reading of it for the connection caps and the warning. */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { Config } from '../config.ts';
import { plainAddress } from './client-address.ts';

/**
 * Whether a peer address is one of the trusted proxies (`true`: every peer is; `false`: none). Entries are
 * addresses and CIDR ranges, as config.ts checked them; an IPv4-mapped IPv6 peer (a dual-stack socket's,
 * `::ffff:127.0.0.1`) is matched as the IPv4 address it is.
 */
export function trustedProxyMatcher(trustProxy: Config['trustProxy']): (address: string) => boolean {
  if (trustProxy === true) return () => true;
  if (trustProxy === false) return () => false;
  const list = new BlockList();
  for (const entry of trustProxy) {
    const [address = '', bits] = entry.split('/');
    const family = isIPv6(address) ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(bits), family);
  }
  return (address) => {
    const peer = plainAddress(address);
    if (isIPv4(peer)) return list.check(peer, 'ipv4');
    return isIPv6(peer) && list.check(peer, 'ipv6');
  };
}
