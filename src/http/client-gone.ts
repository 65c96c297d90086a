/**
 * A signal that aborts when the client closes the connection before its answer is sent: the work done for it
 * (a CalDAV discovery) then stops asking its server (a person who gave up, or a script firing connects and
 * hanging up, costs no more requests).
 */
import type { FastifyReply } from 'fastify';

/** The controller whose signal aborts once the client is gone, its answer unsent. */
export function clientGone(reply: FastifyReply): AbortController {
  const controller = new AbortController();
  const raw = reply.raw;
  const onClose = () => {
    if (!raw.writableFinished) controller.abort(new Error('the client closed the connection'));
  };
  raw.once('close', onClose);
  return controller;
}
