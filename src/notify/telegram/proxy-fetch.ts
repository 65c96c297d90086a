/**
 * Telegram through a proxy (`TELEGRAM_PROXY`): a `fetch` for grammY's `client.fetch` that sends every Bot API
 * request through an undici `ProxyAgent` (`http://` and `https://` proxies by CONNECT, `socks5://` ones by SOCKS,
 * `user:pass@` as their authentication) and nothing else. The dispatcher belongs to this fetch alone, not to the
 * process (no `setGlobalDispatcher`): the university API, MAX, the mail relay and the webhooks keep going directly.
 *
 * Every request tunnels, to a plain-http API root (a local Bot API server) too: a forwarding proxy would see the
 * request line, and log it, and the request line holds the bot token (`/bot<token>/sendMessage`); through a
 * tunnel the proxy sees `CONNECT host:port` and, to Telegram's https, nothing more.
 *
 * grammY builds its abort signal from the `abort-controller` polyfill, which undici's fetch refuses ("Expected
 * signal to be an instance of AbortSignal"): the signal is bridged to a native one, so that grammY's timeout and a
 * caller's abort still end the request, and its tunnel with it.
 *
 * The agents are made where grammY's clients are (the bot, each send job's sender), out of reach of the process's
 * one shutdown; this module therefore keeps those it made, and {@link closeProxyAgents} (a step of the shutdown,
 * after the bot and the workers stopped) closes them with their tunnels.
 */
import type { ApiClientOptions } from 'grammy';
import { ProxyAgent, fetch as undiciFetch } from 'undici';

/** The fetch grammY takes (`client.fetch`), typed by grammY after node-fetch. */
export type GrammyFetch = NonNullable<ApiClientOptions['fetch']>;

type UndiciInput = Parameters<typeof undiciFetch>[0];
type UndiciInit = NonNullable<Parameters<typeof undiciFetch>[1]>;

/**
 * What grammY hands its fetch: a fetch init, plus node-fetch's own options (`agent`, `compress`) from its default
 * `baseFetchConfig`, which undici's fetch has no use for.
 */
type GrammyInit = Omit<UndiciInit, 'signal' | 'dispatcher'> & {
  signal?: { readonly aborted: boolean; addEventListener(type: 'abort', listener: () => void, options?: object): void };
  agent?: unknown;
  compress?: unknown;
};

/** The agents made and not closed yet (see the module comment). */
const open = new Set<ProxyAgent>();

/** A fetch whose every request goes through the proxy at `proxyUrl` (http, https or socks5, with `user:pass@`). */
export function proxiedFetch(proxyUrl: string): GrammyFetch {
  const dispatcher = new ProxyAgent({ uri: proxyUrl, proxyTunnel: true });
  open.add(dispatcher);
  const proxied = (input: UndiciInput, init: GrammyInit = {}) => {
    const { signal, agent: _agent, compress: _compress, ...rest } = init;
    const controller = new AbortController();
    if (signal) {
      if (signal.aborted) controller.abort();
      // Not removed when the answer's head arrives: a timeout while its body is read must end the read too.
      else signal.addEventListener('abort', () => controller.abort(), { once: true });
    }
    return undiciFetch(input, { ...rest, signal: controller.signal, dispatcher });
  };
  // grammY types its fetch after node-fetch's; it only ever passes a URL string and an init like the above, and
  // reads the answer's `json()`, which undici's Response has.
  return proxied as unknown as GrammyFetch;
}

/**
 * What may be logged of a proxy's URL: its scheme, host and port, never its user or password (a malformed URL,
 * which the settings refuse anyway, gives a placeholder rather than itself).
 */
export function proxyHost(proxyUrl: string): string {
  try {
    const url = new URL(proxyUrl);
    return `${url.protocol}//${url.host}`;
  } catch {
    return '(unreadable proxy URL)';
  }
}

/** grammY's client options for a proxy, or none without one: spread into `client` of `Bot` or `Api`. */
export function proxyClientOptions(proxyUrl: string | undefined): { fetch?: GrammyFetch } {
  return proxyUrl === undefined ? {} : { fetch: proxiedFetch(proxyUrl) };
}

/** Closes every proxy agent made so far, with their tunnels (the process stops); a fetch made later opens its own. */
export async function closeProxyAgents(): Promise<void> {
  const agents = [...open];
  open.clear();
  await Promise.all(agents.map((agent) => agent.close().catch(() => undefined)));
}
