/**
 * The self-service pages (server-rendered HTML, Russian by default): `/` finds a timetable by name.
 */
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../runtime/context.ts';
import { homePage } from '../web/home-page.ts';
import { requestLang, sendPage } from './pages.ts';

export async function registerPageRoutes(app: FastifyInstance, ctx: ServiceContext): Promise<void> {
  app.get('/', async (request, reply) => {
    const lang = requestLang(ctx, request, reply);
    return sendPage(reply, homePage({ lang, url: request.url }));
  });
}
