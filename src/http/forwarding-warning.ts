/**
 * A deployment behind a reverse proxy that forgot TRUST_PROXY keys every client limit by the proxy's address:
 * everybody shares one client's allowance. Requests that carry X-Forwarded-For from a peer TRUST_PROXY does not
 * trust are the sign of it; the first one is logged at warn level, once per process, naming the peer.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';

/** Installs the check on `app`; nothing when TRUST_PROXY trusts every peer. */
export function warnOnUntrustedForwarding(
  app: FastifyInstance,
  trustProxy: Config['trustProxy'],
  logger: Logger,
): void {
  if (trustProxy === true) return;
  const trusted = trustedPeers(trustProxy === false ? [] : trustProxy);
  let warned = false;
  // A callback hook, and a flag checked first: after the one warning, the cost per request is one comparison.
  app.addHook('onRequest', (request, _reply, done) => {
    if (!warned && request.headers['x-forwarded-for'] !== undefined) {
      const peer = plainAddress(request.socket.remoteAddress ?? '');
      if (!isTrusted(trusted, peer)) {
        warned = true;
        logger.warn(
          { peer },
          'X-Forwarded-For from a peer TRUST_PROXY does not trust: ignored, so client limits count this peer as one client; behind a reverse proxy, set TRUST_PROXY to its address',
        );
      }
    }
    done();
  });
}

/** The proxies TRUST_PROXY names (addresses and CIDR ranges, as config.ts checked them). */
function trustedPeers(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', bits] = entry.split('/');
    const family = isIPv6(address) ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(bits), family);
  }
  return list;
}

function isTrusted(list: BlockList, peer: string): boolean {
  if (isIPv4(peer)) return list.check(peer, 'ipv4');
  return isIPv6(peer) && list.check(peer, 'ipv6');
}

/** An IPv4-mapped IPv6 peer (`::ffff:127.0.0.1`) as the IPv4 address it is. */
function plainAddress(address: string): string {
  return /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] ?? address;
}
