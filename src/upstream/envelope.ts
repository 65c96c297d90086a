/**
 * The response envelope every endpoint shares: `{ success: true, <payload key>: … }` on success (or the payload
 * alone, without `success`), and either `{ success: false, error }` or a bare `{ error }` on failure. Some
 * deployments say `message` instead of `error`, and others put an informational `message` beside a payload.
 */
import { type EndpointName, UpstreamProtocolError } from './errors.ts';
import { isRecord } from './values.ts';

/** Longest upstream `error` text kept in an error message. */
const MAX_ERROR_TEXT = 500;

/** A non-empty string, trimmed and cut to 500 characters; otherwise undefined. */
function textOf(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  return value.trim().slice(0, MAX_ERROR_TEXT);
}

/**
 * The upstream's own text of a JSON body that is known to report a failure: its `error`, else its `message`
 * (cut to 500 characters), if it has one.
 */
export function upstreamErrorText(body: unknown): string | undefined {
  if (!isRecord(body)) return undefined;
  return textOf(body.error) ?? textOf(body.message);
}

/**
 * Checks the envelope and returns the response object. `success: false`, or an `error` without `success`, is
 * an `'unsuccessful'` protocol error carrying the upstream text (`error`, else `message`). A body without
 * `success` that carries one of the endpoint's `payloadKeys` is accepted (several deployments leave `success`
 * out), a `message` beside it included: only without a payload does a `message` alone say the call failed.
 * Anything else that is not an object with `success: true` is `'wrong-shape'`.
 */
export function openEnvelope(
  json: unknown,
  endpoint: EndpointName,
  payloadKeys: readonly string[],
): Record<string, unknown> {
  if (!isRecord(json)) {
    const kind = json === null ? 'null' : Array.isArray(json) ? 'an array' : typeof json;
    throw new UpstreamProtocolError(endpoint, 'wrong-shape', { detail: `expected an object, got ${kind}` });
  }
  const upstreamMessage = upstreamErrorText(json);
  const success = json.success;
  const hasPayload = payloadKeys.some((key) => json[key] !== undefined);
  // `error` always means failure; `message` is also where deployments put information ("Расписание на …").
  const failureText = textOf(json.error) ?? (hasPayload ? undefined : upstreamMessage);
  if (success === false || (success === undefined && failureText !== undefined)) {
    throw new UpstreamProtocolError(endpoint, 'unsuccessful', { upstreamMessage });
  }
  if (success === true) return json;
  if (success === undefined && hasPayload) return json;
  const expected = payloadKeys.map((key) => `\`${key}\``).join(' or ');
  const detail = success === undefined ? `neither \`success\` nor ${expected}` : 'success is not true';
  throw new UpstreamProtocolError(endpoint, 'wrong-shape', { detail, upstreamMessage });
}

/** Throws `'wrong-shape'` naming the field that is missing or of the wrong kind. */
export function wrongShape(endpoint: EndpointName, detail: string): never {
  throw new UpstreamProtocolError(endpoint, 'wrong-shape', { detail });
}
