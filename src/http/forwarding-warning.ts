/**
 * A deployment behind a reverse proxy that forgot TRUST_PROXY keys every client limit by the proxy's address:
 * everybody shares one client's allowance. Requests that carry X-Forwarded-For from a peer TRUST_PROXY does not
 * trust are the sign of it; the first one is logged at warn level, once per process, naming the peer.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { plainAddress } from './client-address.ts';
import { trustedProxyMatcher } from './trusted-proxies.ts';

/**
 * The check of one request, for the app's hook and for requests answered in front of the app (feed-fast-path.ts);
 * undefined when TRUST_PROXY trusts every peer.
 */
export function forwardingCheck(
  trustProxy: Config['trustProxy'],
  logger: Logger,
): ((request: IncomingMessage) => void) | undefined {
  if (trustProxy === true) return undefined;
  const isTrusted = trustedProxyMatcher(trustProxy);
  let warned = false;
  // A flag checked first: after the one warning, the cost per request is one comparison.
  return (request) => {
    if (warned || request.headers['x-forwarded-for'] === undefined) return;
    const peer = plainAddress(request.socket.remoteAddress ?? '');
    if (isTrusted(peer)) return;
    warned = true;
    logger.warn(
      { peer },
      'X-Forwarded-For from a peer TRUST_PROXY does not trust: ignored, so client limits count this peer as one client; behind a reverse proxy, set TRUST_PROXY to its address',
    );
  };
}

/** Installs `check` (from {@link forwardingCheck}) on `app` as a callback hook; nothing when there is none. */
export function warnOnUntrustedForwarding(
  app: FastifyInstance,
  check: ((request: IncomingMessage) => void) | undefined,
): void {
  if (check === undefined) return;
  app.addHook('onRequest', (request, _reply, done) => {
    check(request.raw);
    done();
  });
}
