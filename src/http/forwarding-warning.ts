/**
 * A deployment behind a reverse proxy that forgot TRUST_PROXY keys every client limit by the proxy's address:
 * everybody shares one client's allowance. Requests that carry X-Forwarded-For from a peer TRUST_PROXY does not
 * trust are the sign of it; the first one is logged at warn level, once per process, naming the peer.
 */
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { plainAddress } from './client-address.ts';
import { trustedProxyMatcher } from './trusted-proxies.ts';

/** Installs the check on `app`; nothing when TRUST_PROXY trusts every peer. */
export function warnOnUntrustedForwarding(
  app: FastifyInstance,
  trustProxy: Config['trustProxy'],
  logger: Logger,
): void {
  if (trustProxy === true) return;
  const isTrusted = trustedProxyMatcher(trustProxy);
  let warned = false;
  // A callback hook, and a flag checked first: after the one warning, the cost per request is one comparison.
  app.addHook('onRequest', (request, _reply, done) => {
    if (!warned && request.headers['x-forwarded-for'] !== undefined) {
      const peer = plainAddress(request.socket.remoteAddress ?? '');
      if (!isTrusted(peer)) {
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
