/**
 * The self-service pages (server-rendered HTML, Russian by default): `/` finds a timetable by name and signs
 * a person in for a personal one (home-routes.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { ClientLimits } from './client-limits.ts';
import { type HomeRouteDeps, registerHomeRoutes } from './home-routes.ts';

export async function registerPageRoutes(
  app: FastifyInstance,
  ctx: HomeRouteDeps,
  limits: ClientLimits,
): Promise<void> {
  await registerHomeRoutes(app, ctx, limits);
}
