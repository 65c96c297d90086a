/**
 * The consent page (`GET …/o/oauth2/v2/auth`): checks the request as Google does, then "logs in" as the
 * chosen user and redirects back with a one-time code, or with `error=access_denied`.
 */
import { type OAuthState, randomUserId } from './oauth.ts';
import type { Reply } from './reply.ts';

function page(status: number, error: string, detail: string): Reply {
  const html = `<!doctype html><title>Error ${status}: ${error}</title><h1>Error ${status}: ${error}</h1><p>${detail}</p>`;
  return { status, body: Buffer.from(html), headers: { 'content-type': 'text/html; charset=utf-8' } };
}

function redirect(redirectUri: string, params: Record<string, string | null>): Reply {
  const target = new URL(redirectUri);
  for (const [key, value] of Object.entries(params)) if (value !== null) target.searchParams.set(key, value);
  return { status: 302, headers: { location: target.toString() } };
}

/** Answers the consent page for `url` (its query carries the authorization request). */
export function handleConsent(oauth: OAuthState, url: URL): Reply {
  const query = url.searchParams;
  if (query.get('client_id') !== oauth.clientId) return page(401, 'invalid_client', 'The OAuth client was not found.');
  const redirectUri = query.get('redirect_uri');
  if (!redirectUri || !URL.canParse(redirectUri))
    return page(400, 'invalid_request', 'Missing or invalid redirect_uri.');
  if (query.get('response_type') !== 'code')
    return page(400, 'unsupported_response_type', 'response_type must be code.');
  const requested = (query.get('scope') ?? '').split(/[ +]+/).filter((scope) => scope !== '');
  if (requested.length === 0) return page(400, 'invalid_request', 'Missing required parameter: scope');
  const challenge = query.get('code_challenge') ?? undefined;
  const method = query.get('code_challenge_method') ?? 'plain';
  if (challenge !== undefined && method !== 'S256' && method !== 'plain')
    return page(400, 'invalid_request', 'Invalid code_challenge_method.');
  const state = query.get('state');
  const { who, grant } = oauth.consent;
  if (who === 'deny') return redirect(redirectUri, { error: 'access_denied', state });
  const scopes = grant === undefined ? requested : requested.filter((scope) => grant.includes(scope));
  const code = oauth.approve({
    user: who ?? randomUserId(),
    scopes,
    redirectUri,
    challenge,
    method,
    offline: query.get('access_type') === 'offline',
  });
  return redirect(redirectUri, { code, scope: scopes.join(' '), state });
}
