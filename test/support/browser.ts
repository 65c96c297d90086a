/**
 * Pages tested as a person sees them: Debian's `chromium` driven by playwright-core (browser downloads are
 * not possible here, so playwright is pointed at the system's executable), against a whole service on
 * loopback: the university simulator, the fake Google, a service context on the run's Redis, real workers and
 * the HTTP app listening on a real port (so that PUBLIC_URL, cookies and redirects are the real ones).
 */
import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { type Browser, chromium, type Page } from 'playwright-core';
import { inject } from 'vitest';
import { type AppOptions, buildApp } from '../../src/http/app.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { type RunningSimulator, type SimulatorOptions, startSimulator } from '../../src/simulator/index.ts';
import { type FakeGoogle, startFakeGoogle } from '../../testkit/fake-google/index.ts';
import { googleEnv } from '../google/push-harness.ts';
import { testContext } from './service.ts';

export { ensureChromium } from '../../testkit/chromium.ts';

/** A headless Chromium (the executable the global setup found or installed). */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: inject('chromiumPath'),
    headless: true,
    // Root in a container has no user namespaces for Chromium's sandbox.
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
}

/**
 * Collects what `page` logs as an error into `errors`, each prefixed with the page's URL: console errors (a
 * CSP violation is one) and uncaught exceptions. Console lines matching `ignore` are left out.
 */
export function watchPageErrors(page: Page, errors: string[], ignore?: RegExp): void {
  page.on('console', (message) => {
    if (message.type() === 'error' && !ignore?.test(message.text())) errors.push(`${page.url()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => errors.push(`${page.url()}: ${error.message}`));
}

/** How far `page` scrolls sideways at its width, in CSS pixels (0 or less: it fits). */
export async function sidewaysOverflow(page: Page): Promise<number> {
  return Number(await page.evaluate('document.documentElement.scrollWidth - window.innerWidth'));
}

/** A free loopback port (so that PUBLIC_URL can be set before the app listens on it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Options of {@link WebStack.start}. */
export interface WebStackOptions {
  simulator?: SimulatorOptions;
  /** Settings over the stack's own. */
  env?: Record<string, string>;
  /** The app's options over the stack's own (the bots whose links the pages show), made from the context. */
  app?: (ctx: ServiceContext) => Omit<AppOptions, 'logger'>;
}

/** The whole service on loopback, for a browser. */
export class WebStack {
  readonly url: string;
  readonly ctx: ServiceContext;
  readonly simulator: RunningSimulator;
  readonly google: FakeGoogle;
  private readonly app: FastifyInstance;
  private readonly workers: WorkerSet;
  private readonly closeContext: () => Promise<void>;

  private constructor(parts: {
    url: string;
    ctx: ServiceContext;
    simulator: RunningSimulator;
    google: FakeGoogle;
    app: FastifyInstance;
    workers: WorkerSet;
    closeContext: () => Promise<void>;
  }) {
    this.url = parts.url;
    this.ctx = parts.ctx;
    this.simulator = parts.simulator;
    this.google = parts.google;
    this.app = parts.app;
    this.workers = parts.workers;
    this.closeContext = parts.closeContext;
  }

  static async start(options: WebStackOptions = {}): Promise<WebStack> {
    const simulator = await startSimulator({
      port: 0,
      seed: 1,
      groups: 60,
      employees: 40,
      users: 10,
      ...options.simulator,
    });
    const google = await startFakeGoogle({ seed: 7 });
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const opened = await testContext({
      UNIVERSITY_API_URL: simulator.url,
      PUBLIC_URL: url,
      ...googleEnv(google),
      // A browser that pushes to Google follows the redirect to the fake's consent page.
      GOOGLE_OAUTH_AUTH_URL: google.authUrl,
      ...options.env,
    });
    const workers = await startWorkers(opened.context, inject('redisUrl'));
    const app = await buildApp(opened.context, { logger: opened.context.logger, ...options.app?.(opened.context) });
    await app.listen({ port, host: '127.0.0.1' });
    return new WebStack({
      url,
      ctx: opened.context,
      simulator,
      google,
      app,
      workers,
      closeContext: opened.close,
    });
  }

  async close(): Promise<void> {
    await this.app.close();
    await this.workers.close();
    await this.closeContext();
    await this.simulator.close();
    await this.google.close();
  }
}
