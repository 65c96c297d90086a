/**
 * What every page route shares: the language of the request (remembered in a cookie when chosen with
 * `?lang=`), the strict Content-Security-Policy of our pages, and the page form of errors.
 *
 * The CSP allows only our own stylesheet, script, images and requests: no inline script or style, no other
 * origin, no framing, forms posting only here. A value that slipped through escaping still could not run.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import type { Html } from '../web/html.ts';
import { isLang, type Lang, pickLang } from '../web/i18n.ts';
import { LANG_COOKIE, readCookie, setCookie } from './cookies.ts';
import { HttpError } from './errors.ts';

export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const YEAR_SECONDS = 365 * 24 * 3600;

/** What the page helpers read: the public URL, whose host the cookies are for and forms must come from. */
export interface PageDeps {
  readonly config: Pick<Config, 'publicUrl'>;
}

/** The language to answer `request` in; a `?lang=` choice is remembered for the next pages. */
export function requestLang(ctx: PageDeps, request: FastifyRequest, reply: FastifyReply): Lang {
  const query = (request.query ?? {}) as Record<string, unknown>;
  const chosen = query.lang;
  if (isLang(chosen)) setCookie(reply, ctx.config.publicUrl, LANG_COOKIE, chosen, { maxAge: YEAR_SECONDS });
  return pickLang(chosen, readCookie(request.headers.cookie, LANG_COOKIE), request.headers['accept-language']);
}

export interface SendPageOptions {
  status?: number;
  /** Default `no-store`: pages show live state, and some show secrets. */
  cacheControl?: string;
  /**
   * A page served at a URL that carries a secret (a manage link's token, a consent's code): no referrer at
   * all, not even to our own pages. Only for pages without forms: under `no-referrer` a browser posts a form
   * with `Origin: null`, which {@link requireSameOrigin} refuses.
   */
  secret?: boolean;
}

/** Answers a rendered page with our CSP. */
export function sendPage(reply: FastifyReply, document: Html, options: SendPageOptions = {}): FastifyReply {
  return reply
    .code(options.status ?? 200)
    .type('text/html; charset=utf-8')
    .header('content-security-policy', PAGE_CSP)
    .header('referrer-policy', options.secret ? 'no-referrer' : 'same-origin')
    .header('cache-control', options.cacheControl ?? 'no-store')
    .header('vary', 'Accept-Language, Cookie')
    .send(document);
}

/**
 * Refuses a form post that another site's page sent (defence in depth besides the SameSite cookies): a
 * browser names the page's origin in `Origin` (or, failing that, `Referer`), and it must be PUBLIC_URL's or the
 * request's own host.
 */
export function requireSameOrigin(ctx: PageDeps, request: FastifyRequest): void {
  const origin = request.headers.origin ?? request.headers.referer;
  if (origin === undefined) return; // Not a browser (curl, tests): SameSite does not apply either.
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    throw new HttpError('CROSS_ORIGIN_FORM', CROSS_ORIGIN);
  }
  if (host !== new URL(ctx.config.publicUrl).host && host !== request.host)
    throw new HttpError('CROSS_ORIGIN_FORM', CROSS_ORIGIN);
}

const CROSS_ORIGIN = {
  en: 'this form must be sent from its own page',
  ru: 'эту форму можно отправить только с её собственной страницы',
};
