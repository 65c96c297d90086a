/**
 * Google's partial responses: the `fields` parameter (`items(id,status),nextPageToken`, `a/b`, `*`) keeps only
 * the named parts of an answer. A client that forgets `nextPageToken` in `fields` gets no next page, as with
 * the real API.
 */
import { apiErrors } from './reply.ts';

/** A parsed selection: key → nested selection, or true for "the whole value". */
type Selection = Map<string, Selection | true>;

function merge(into: Selection, key: string, value: Selection | true): void {
  const current = into.get(key);
  if (current === true || value === true) into.set(key, true);
  else if (current === undefined) into.set(key, value);
  else for (const [k, v] of value) merge(current, k, v);
}

function parseList(spec: string, at: { i: number }, nested: boolean): Selection {
  const selection: Selection = new Map();
  for (;;) {
    const name = /^[A-Za-z0-9_*/.]+/.exec(spec.slice(at.i))?.[0];
    if (!name) throw apiErrors.invalidParameter(`Invalid field selection ${spec}`);
    at.i += name.length;
    let value: Selection | true = true;
    if (spec[at.i] === '(') {
      at.i += 1;
      value = parseList(spec, at, true);
      if (spec[at.i] !== ')') throw apiErrors.invalidParameter(`Invalid field selection ${spec}`);
      at.i += 1;
    }
    // `a/b/c(x)` is `a(b(c(x)))`.
    const parts = name.split('/');
    for (let k = parts.length - 1; k > 0; k--) value = new Map([[parts[k] ?? '', value]]);
    merge(selection, parts[0] ?? '', value);
    if (spec[at.i] === ',') {
      at.i += 1;
      continue;
    }
    if (at.i === spec.length || (nested && spec[at.i] === ')')) return selection;
    throw apiErrors.invalidParameter(`Invalid field selection ${spec}`);
  }
}

function apply(value: unknown, selection: Selection): unknown {
  if (Array.isArray(value)) return value.map((item) => apply(item, selection));
  if (value === null || typeof value !== 'object') return value;
  if (selection.get('*') === true) return value;
  const out: Record<string, unknown> = {};
  for (const [key, nested] of selection) {
    const child = (value as Record<string, unknown>)[key];
    if (child === undefined) continue;
    out[key] = nested === true ? child : apply(child, nested);
  }
  return out;
}

/** Keeps only the parts of `value` named by a `fields` parameter; throws 400 invalidParameter on bad syntax. */
export function selectFields(value: unknown, fields: string): unknown {
  const spec = fields.replace(/\s+/g, '');
  if (spec === '') return value;
  return apply(value, parseList(spec, { i: 0 }, false));
}
