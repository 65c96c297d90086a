/**
 * The pages' stylesheet and script under content-digest names: cached by browsers for a year (immutable),
 * gzip when asked.
 */
import type { FastifyInstance } from 'fastify';
import { assets } from '../web/assets.ts';
import { HttpError } from './errors.ts';

const YEAR_SECONDS = 365 * 24 * 3600;

export async function registerAssetRoutes(app: FastifyInstance): Promise<void> {
  const byPath = new Map(Object.values(assets()).map((asset) => [asset.path, asset]));
  app.get('/assets/:file', async (request, reply) => {
    const asset = byPath.get(request.url.split('?', 1)[0] as string);
    if (asset === undefined)
      throw new HttpError('ASSET_NOT_FOUND', {
        en: 'no such asset (the page that asked for it is older than this release)',
        ru: 'такого файла нет (страница, которая его запросила, старше этой версии)',
      });
    const gzip = /\bgzip\b/.test(request.headers['accept-encoding'] ?? '');
    reply
      .type(asset.type)
      .header('cache-control', `public, max-age=${YEAR_SECONDS}, immutable`)
      .header('vary', 'Accept-Encoding');
    if (gzip) reply.header('content-encoding', 'gzip');
    return reply.send(gzip ? asset.gzip : asset.body);
  });
}
