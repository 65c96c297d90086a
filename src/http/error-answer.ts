/**
 * How an error is sent: JSON `{ "error", "code" }` with the words in the language the request names (`?lang=`,
 * then the pages' `lang` cookie, then Accept-Language), and in English when it names neither of ours. The pages
 * default to Russian; the JSON API does not, since its clients (curl, scripts, calendar apps) name no language
 * and have always been answered in English.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Lang, namedLang } from '../web/i18n.ts';
import { LANG_COOKIE, readCookie } from './cookies.ts';
import { errorBody, type HttpError } from './errors.ts';

/** The language of a JSON error answer to `request`. */
export function errorLang(request: FastifyRequest): Lang {
  // Null when fastify refused the URL before parsing its query.
  const query = request.query as Readonly<Record<string, unknown>> | null | undefined;
  const cookie = readCookie(request.headers.cookie, LANG_COOKIE);
  return namedLang(query?.lang, cookie, request.headers['accept-language']) ?? 'en';
}

/**
 * Answers `error` as JSON, worded for `request` (or in `lang`, a page's own endpoint answering in the page's
 * language), with `extra` fields after `error` and `code` (the two answers docs/errors.md names); the answer
 * varies with the headers that choose the language.
 */
export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  error: HttpError,
  extra: Readonly<Record<string, unknown>> = {},
  lang: Lang = errorLang(request),
): FastifyReply {
  const vary = reply.getHeader('vary');
  const varied = typeof vary === 'string' && vary !== '' ? `${vary}, ${LANGUAGE_HEADERS}` : LANGUAGE_HEADERS;
  return reply
    .code(error.statusCode)
    .headers(error.headers)
    .header('vary', typeof vary === 'string' && vary.includes('Accept-Language') ? vary : varied)
    .type('application/json; charset=utf-8')
    .send({ ...errorBody(error, lang), ...extra });
}

const LANGUAGE_HEADERS = 'Accept-Language, Cookie';
