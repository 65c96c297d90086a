/**
 * Headers that make browsers handle our answers safely: no content sniffing on any answer, and no framing of
 * any HTML page (the OAuth callback page shows a secret once; Bull Board has buttons that act), so a page of
 * another site cannot overlay them and trick a click.
 */
import type { FastifyInstance } from 'fastify';

/** Sent with every answer, as a `[name, value]` list (app.ts gives it to the feed fast path, which skips hooks). */
export const NOSNIFF: readonly string[] = ['x-content-type-options', 'nosniff'];

/** `frame-ancestors` is the modern form; `X-Frame-Options` is for browsers that predate it. */
const HTML_HEADERS = {
  'x-frame-options': 'DENY',
  'content-security-policy': "frame-ancestors 'none'",
} as const;

/** Adds the hook to `app`; call before registering routes, so that every scope inherits it. */
export function addSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header(NOSNIFF[0] as string, NOSNIFF[1]);
    const type = reply.getHeader('content-type');
    if (typeof type === 'string' && type.startsWith('text/html')) {
      // A page that sets its own CSP (Bull Board does not today) keeps it, with framing refused on top.
      const own = reply.getHeader('content-security-policy');
      reply.headers({
        'x-frame-options': HTML_HEADERS['x-frame-options'],
        'content-security-policy': withoutFraming(own),
      });
    }
    return payload;
  });
}

/** A page's own CSP with framing refused (kept as it is when it says so itself), or ours alone. */
function withoutFraming(own: unknown): string {
  if (typeof own !== 'string' || own === '') return HTML_HEADERS['content-security-policy'];
  return own.includes("frame-ancestors 'none'") ? own : `${own}; ${HTML_HEADERS['content-security-policy']}`;
}
