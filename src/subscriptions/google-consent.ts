/**
 * Finishing a Google consent: the OAuth callback brings back the `state` we issued and Google's code; the
 * pending consent is taken (once), the code exchanged for a refresh token, and the calendar connected.
 */
import { ConsentCallbackError, GoogleConsentError, GoogleNotConfiguredError } from '../google/errors.ts';
import type { GoogleServices } from '../google/google-services.ts';
import { type ConsentStateDeps, takeConsent } from '../google/oauth-state.ts';
import type { Logger } from '../logger.ts';
import type { SourceKey } from '../timetable/source.ts';
import { connectGoogleTarget, type GoogleConnectDeps, type GoogleConnected } from './google-connect.ts';

/** What Google's redirect to the callback carries. */
export interface ConsentCallback {
  state: string;
  code?: string | undefined;
  /** Set instead of a code when the person refused (`access_denied`) or Google failed. */
  error?: string | undefined;
  /** The nonce the browser's consent cookie holds; undefined without the cookie. */
  browserNonce?: string | undefined;
}

/** What {@link completeConsent} uses: the pending consents, the OAuth client, and a connection's. */
export type CompleteConsentDeps = ConsentStateDeps &
  GoogleConnectDeps & {
    readonly google: Pick<GoogleServices, 'configured' | 'oauth'>;
  };

/**
 * Completes a consent. The pending consent is taken first, so that a replay or a refusal uses the state up.
 * Throws ConsentCallbackError for an unknown, used or refused consent, for one started in another browser, and
 * for a grant without what push needs,
 * GoogleNotConfiguredError without OAuth client settings, and what connecting throws.
 */
export async function completeConsent(
  ctx: CompleteConsentDeps,
  callback: ConsentCallback,
  log: Pick<Logger, 'info'> = ctx.logger,
): Promise<{ source: SourceKey; connected: GoogleConnected }> {
  const pending = await takeConsent(ctx, callback.state, callback.browserNonce);
  if (callback.error !== undefined) {
    const why =
      callback.error === 'access_denied' ? 'consent was refused' : `Google answered "${callback.error.slice(0, 60)}"`;
    throw new ConsentCallbackError(`${why}: nothing was connected`);
  }
  if (callback.code === undefined || callback.code === '')
    throw new ConsentCallbackError('code is missing: start again at /google/connect');
  const oauth = ctx.google.oauth;
  if (!ctx.google.configured || oauth === undefined) throw new GoogleNotConfiguredError();
  try {
    const granted = await oauth.exchangeCode({ code: callback.code, codeVerifier: pending.codeVerifier });
    const connected = await connectGoogleTarget(ctx, {
      source: pending.source,
      refreshToken: granted.refreshToken,
      googleUser: granted.googleUser,
      options: pending.options,
      newTargetOptions: pending.newTargetOptions,
    });
    log.info({ target: connected.id, source: pending.source, reused: connected.reused }, 'google consent completed');
    return { source: pending.source, connected };
  } catch (failure) {
    if (!(failure instanceof GoogleConsentError)) throw failure;
    const message = `Google did not grant what Google push needs: ${failure.message}; start again at /google/connect`;
    throw new ConsentCallbackError(message, { cause: failure });
  }
}
