/**
 * Sources: what a feed shows and a refresh fetches. `group:<id>`, `employee:<id>` or `personal:<subscription>`.
 * One fetch per source per cycle, however many people subscribe to it.
 */
import { ID_RANGE } from '../upstream/errors.ts';
import { InvalidSourceError } from './errors.ts';

/** The three kinds of timetable the service keeps. */
export type SourceKind = 'group' | 'employee' | 'personal';

/** A parsed source. `id` is a positive integer for groups and employees, a subscription id for personal ones. */
export interface SourceRef {
  readonly kind: SourceKind;
  readonly id: string;
}

/** A source in its canonical text form, e.g. `group:4242`. */
export type SourceKey = string;

const UPSTREAM_ID = /^[1-9]\d{0,15}$/;
/** Subscription ids are 16 random bytes in base64url (see the subscription store). */
export const SUBSCRIPTION_ID = /^[A-Za-z0-9_-]{22}$/;

/** Parses `group:4242`, `employee:17` or `personal:<subscription id>`; throws {@link InvalidSourceError}. */
export function parseSource(text: unknown): SourceRef {
  if (typeof text !== 'string') throw new InvalidSourceError('a source must be a string such as "group:4242"');
  const separator = text.indexOf(':');
  const kind = text.slice(0, separator);
  const id = text.slice(separator + 1);
  if (separator < 0 || (kind !== 'group' && kind !== 'employee' && kind !== 'personal')) {
    throw new InvalidSourceError(
      `"${clip(text)}" is not a source: use group:<id>, employee:<id> or personal:<subscription id>`,
    );
  }
  const pattern = kind === 'personal' ? SUBSCRIPTION_ID : UPSTREAM_ID;
  if (!pattern.test(id) || (kind !== 'personal' && !Number.isSafeInteger(Number(id)))) {
    const expected = kind === 'personal' ? 'a subscription id' : ID_RANGE;
    throw new InvalidSourceError(`"${clip(text)}" is not a source: the ${kind} id must be ${expected}`);
  }
  return { kind, id };
}

/** The canonical text form of a source. */
export function sourceKey(ref: SourceRef): SourceKey {
  return `${ref.kind}:${ref.id}`;
}

/** A source key that is known to be valid, without the checks (for keys read back from our own store). */
export function sourceOf(key: SourceKey): SourceRef {
  const separator = key.indexOf(':');
  return { kind: key.slice(0, separator) as SourceKind, id: key.slice(separator + 1) };
}

/** The source's form inside BullMQ job and scheduler ids, which must not contain `:`. */
export function sourceToken(key: SourceKey): string {
  return key.replace(':', '-');
}

/** Shortens text quoted back in an error message. */
function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
