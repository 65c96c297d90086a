/**
 * Signatures of webhook deliveries per the Standard Webhooks specification (version 1): an HMAC-SHA256 over
 * `<webhook-id>.<webhook-timestamp>.<body>` under the hook's secret, sent as `webhook-signature: v1,<base64>`.
 * Receivers verify with any of the specification's libraries (`standardwebhooks` on npm) or these few lines.
 */
import { createHmac, randomBytes } from 'node:crypto';

/** The prefix of a webhook secret as the specification spells it; the rest is the key, base64. */
export const SECRET_PREFIX = 'whsec_';

/** Bytes of a new secret's key (the specification asks for 24 to 64). */
const SECRET_BYTES = 24;

/** A new secret: `whsec_` and 24 random bytes as base64. */
export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/** The HMAC key of a secret: its base64 after the `whsec_` prefix (the prefix is optional, as in the libraries). */
function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/** `v1,<base64 HMAC-SHA256>` of one message: `msgId` is `webhook-id`, `timestamp` is `webhook-timestamp` (s). */
export function signature(secret: string, msgId: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', keyOf(secret)).update(`${msgId}.${timestamp}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

/** The headers of one attempt: the same `webhook-id` on every retry, the time of this attempt. */
export function signedHeaders(
  secret: string,
  msgId: string,
  timestamp: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature' | 'content-type', string> {
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signature(secret, msgId, timestamp, body),
    'content-type': 'application/json',
  };
}
