import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Config } from '../config.ts';
import { constantTimeEqual } from '../security/tokens.ts';
import { sendError } from './error-answer.ts';
import { HttpError } from './errors.ts';

/** Where Bull Board lives: the one admin page a browser opens, so it also accepts HTTP Basic. */
export const BOARD_PATH = '/admin/queues';

/** The realm a browser shows in its password prompt for the queue board. */
const BOARD_REALM = 'timetable-sync admin';

/** True for the queue board's page, its API and its static files. */
export function isBoardPath(url: string): boolean {
  const path = url.split('?', 1)[0] ?? '';
  return path === BOARD_PATH || path.startsWith(`${BOARD_PATH}/`);
}

/** The token a request presents: `Bearer <token>` anywhere, or the password of HTTP Basic on the board. */
export function presentedToken(authorization: string | undefined, board: boolean): string | undefined {
  if (authorization === undefined) return undefined;
  const match = /^(\S+)\s+(\S+)\s*$/.exec(authorization);
  if (!match) return undefined;
  const [, scheme = '', credentials = ''] = match;
  if (scheme.toLowerCase() === 'bearer') return credentials;
  if (!board || scheme.toLowerCase() !== 'basic') return undefined;
  const decoded = Buffer.from(credentials, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  // Any user name: the token is the password (a browser prompt has no field for a bare token).
  return colon < 0 ? undefined : decoded.slice(colon + 1);
}

/** Why a request may not use the admin routes, as the error to answer; undefined when it may. */
export function adminAccessError(
  config: Pick<Config, 'adminToken'>,
  url: string,
  authorization: string | undefined,
): HttpError | undefined {
  if (config.adminToken === undefined)
    return new HttpError('ADMIN_DISABLED', {
      en: 'admin routes are disabled: set ADMIN_TOKEN',
      ru: 'адреса администратора выключены: задайте ADMIN_TOKEN',
    });
  const board = isBoardPath(url);
  const token = presentedToken(authorization, board);
  if (token !== undefined && constantTimeEqual(token, config.adminToken)) return undefined;
  const challenge = board ? `Basic realm="${BOARD_REALM}"` : 'Bearer';
  const words =
    token === undefined
      ? {
          en: 'admin routes need Authorization: Bearer <ADMIN_TOKEN>',
          ru: 'адресам администратора нужен Authorization: Bearer <ADMIN_TOKEN>',
        }
      : { en: 'wrong admin token', ru: 'неверный токен администратора' };
  return new HttpError('ADMIN_UNAUTHORIZED', words, { 'www-authenticate': challenge });
}

/**
 * The onRequest hook guarding everything under `/admin`. It answers by itself instead of throwing: Bull Board
 * installs its own error handler in its scope, which would turn a thrown 401 into its own 500 body.
 */
export function adminAuthHook(config: Pick<Config, 'adminToken'>): onRequestHookHandler {
  return async function checkAdminToken(request: FastifyRequest, reply: FastifyReply) {
    const error = adminAccessError(config, request.url, request.headers.authorization);
    if (error === undefined) return;
    return sendError(request, reply, error);
  };
}
